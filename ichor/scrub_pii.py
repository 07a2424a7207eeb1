"""PII that a checksum or a numbering plan identifies: payment cards, IBANs, US SSNs and national phone numbers.

A cheap pattern finds candidates; a maintained validator decides: python-stdnum (Luhn, IBAN mod-97, SSN ranges)
and phonenumbers (libphonenumber's metadata). Both are imported only when a candidate appears, so text without
digits costs nothing. Published card test numbers (Stripe's 4242 4242 4242 4242 and the like) identify no one
and are kept.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

# 13 to 19 digits, in groups split by single spaces or dashes.
# Each pattern starts with a character class and checks the character before it afterwards, so the regex engine
# skips between candidate characters instead of trying a lookbehind at every position.
_CARD = re.compile(r"[0-9](?<![\w.+-][0-9])(?:[ -]?[0-9]){12,18}(?![\w]|[.-][0-9])")
# Issuer prefixes of the networks people paste: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro.
_CARD_ISSUER = re.compile(r"4|5[1-5]|2[2-7]|3[47]|6011|64[4-9]|65|35[2-8]|3[068]|62|5[06-9]|6[0-9]")
# Published test numbers of the main payment processors' documentation.
PUBLISHED_TEST_CARDS = frozenset(
    {
        "4242424242424242",
        "4000056655665556",
        "4111111111111111",
        "4012888888881881",
        "4000000000000002",
        "4000000000009995",
        "4000002500003155",
        "5555555555554444",
        "2223003122003222",
        "5200828282828210",
        "5105105105105100",
        "5454545454545454",
        "378282246310005",
        "371449635398431",
        "378734493671000",
        "6011111111111117",
        "6011000990139424",
        "6011981111111113",
        "3056930009020004",
        "36227206271667",
        "30569309025904",
        "38520000023237",
        "3566002020360505",
        "3530111333300000",
        "6200000000000005",
        "6555900000604105",
    }
)

_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])")
_SSN = re.compile(r"-(?<=[0-9]{3}-)(?<![\w.-][0-9]{3}-)[0-9]{2}-[0-9]{4}(?![\w]|[.-][0-9])")

# A national number written the way people write their own: a trunk 0 and separated digit groups
# (07700 900123, 06 12 34 56 78, 090-1234-5678, (0)30 1234567). International numbers (+44 ...) and North
# American ones are found by the scrubber's own phone rules.
# German-speaking countries write the area code apart with a slash (089/5018858, 0221/123 4567).
_NATIONAL_PHONE = re.compile(
    r"0(?<![\w+.\[\]/-]0)(?<![0-9][ -]0)[0-9]{1,4}"
    r"(?:\)?(?:[ .-][0-9]{2,8}){1,4}|/[0-9]{3,8}(?:[ .-][0-9]{2,8}){0,3})(?![\w]|[.-][0-9]|/)"
)
# A date written day-first or month-first with a four-digit year (01.02.2024, 09-12-2021): the shape of a
# national number with a trunk 0, and valid in some region, but a date.
_DATE = re.compile(r"(?P<a>[0-9]{2})(?P<sep>[.-])(?P<b>[0-9]{2})(?P=sep)(?:19|20)[0-9]{2}(?![0-9])")


def _is_date(candidate: str) -> bool:
    m = _DATE.fullmatch(candidate)
    if m is None:
        return False
    a, b = int(m.group("a")), int(m.group("b"))
    return (1 <= a <= 31 and 1 <= b <= 12) or (1 <= a <= 12 and 1 <= b <= 31)


# Regions tried for a national number, most populous European and Asian plans first.
PHONE_REGIONS = ("GB", "FR", "DE", "JP", "IT", "ES", "NL", "BE", "CH", "AT", "IE", "AU", "IN", "BR", "KR", "SE")


_SEPARATORS = str.maketrans("", "", " -.()/")


def _digits(s: str) -> str:
    return s.translate(_SEPARATORS)


def _remembered(is_valid: Callable[[str], bool]) -> Callable[[str], bool]:
    """``is_valid`` asked once per distinct number of one text: a log repeats the same number many times, and
    the validators cost far more than the patterns."""
    answers: dict[str, bool] = {}

    def check(number: str) -> bool:
        answer = answers.get(number)
        if answer is None:
            answer = answers[number] = is_valid(number)
        return answer

    return check


def _valid_card(digits: str) -> bool:
    from stdnum import luhn

    return _CARD_ISSUER.match(digits) is not None and digits not in PUBLISHED_TEST_CARDS and luhn.is_valid(digits)


def find_cards(text: str) -> Iterator[tuple[int, int]]:
    valid = _remembered(_valid_card)
    for m in _CARD.finditer(text):
        candidate = m.group(0)
        if len({c for c in candidate if not c.isdigit()}) > 1:
            continue  # mixed separators: not how a card number is written
        digits = _digits(candidate)
        if not _CARD_ISSUER.match(digits):
            continue  # no network starts so, and every shorter run starts the same way
        if valid(digits):
            yield m.span()
            continue
        passing = _luhn_lengths(digits) if len(digits) > 13 else frozenset()
        for length, count in _group_prefixes(candidate):
            if count in passing and valid(digits[:count]):
                yield m.start(), m.start() + length
                break


def _group_prefixes(candidate: str) -> Iterator[tuple[int, int]]:
    """(characters, digits) of each shorter run of whole groups with 13 or more digits, longest first. The
    pattern is greedy, so "6011 6604 8764 7591 0" (a card, then a 0) is one run of 17 digits."""
    digits = sum(c.isdigit() for c in candidate)
    for i in range(len(candidate) - 1, 0, -1):
        if candidate[i].isdigit():
            digits -= 1
        elif digits >= 13:
            yield i, digits


_DOUBLED = tuple(sum(divmod(2 * d, 10)) for d in range(10))


@functools.lru_cache(maxsize=1024)
def _luhn_lengths(digits: str) -> frozenset[int]:
    """The prefix lengths of ``digits`` whose Luhn sum is a multiple of 10, all in one pass: a cheap filter, so
    stdnum's check runs once per candidate instead of once per prefix."""
    # Luhn doubles every second digit counted from the right: for a prefix of length n, the digits at positions
    # of the other parity than n - 1. Two running sums, one per parity, serve every prefix.
    doubled_odd = doubled_even = 0
    passing = set()
    for i, c in enumerate(digits):
        d = ord(c) - 48
        doubled_odd += _DOUBLED[d] if i % 2 else d
        doubled_even += d if i % 2 else _DOUBLED[d]
        if (doubled_odd if i % 2 == 0 else doubled_even) % 10 == 0:
            passing.add(i + 1)
    return frozenset(passing)


# Example IBANs printed in the IBAN registry, banks' and payment processors' documentation: like the test cards,
# they identify no one and are kept.
PUBLISHED_EXAMPLE_IBANS = frozenset(
    {
        "DE89370400440532013000",
        "GB29NWBK60161331926819",
        "GB82WEST12345698765432",
        "GB33BUKB20201555555555",
        "FR1420041010050500013M02606",
        "FR7630006000011234567890189",
        "NL91ABNA0417164300",
        "BE68539007547034",
        "ES9121000418450200051332",
        "IT60X0542811101000000123456",
        "AT611904300234573201",
        "CH9300762011623852957",
    }
)


def _iban_checker() -> Callable[[str], bool]:
    """The mod-97 check on every candidate, then stdnum's check of the country's length and format on the first
    MAX_FULL_IBAN_CHECKS distinct ones: that costs ~20 us, so past that a candidate with a valid checksum, which a
    random string has 1 chance in 97 of, is taken for an IBAN.

    A country's own check digits inside the BBAN (Spain's, Belgium's, France's RIB key...) are not asked for:
    every real IBAN passes them, so they could only keep numbers that are IBAN-shaped, mod-97-valid and of the
    country's exact length, which is what test-data generators (Faker) print and what people mistype in a BBAN;
    the scrubber cannot tell those from a real account, and removing one costs nothing."""
    from stdnum import iban
    from stdnum.iso7064 import mod_97_10

    full_checks = 0

    def valid(candidate: str) -> bool:
        nonlocal full_checks
        number = candidate.replace(" ", "")
        if number in PUBLISHED_EXAMPLE_IBANS or not mod_97_10.is_valid(number[4:] + number[:4]):
            return False
        full_checks += 1
        if full_checks > MAX_FULL_IBAN_CHECKS:
            return True
        try:
            iban.validate(number, check_country=False)
        except ValueError:
            return False
        return True

    return _remembered(valid)


MAX_FULL_IBAN_CHECKS = 256


def find_ibans(text: str) -> Iterator[tuple[int, int]]:
    valid = _iban_checker()
    for m in _IBAN.finditer(text):
        if valid(m.group(0)):
            yield m.span()


def find_ssns(text: str) -> Iterator[tuple[int, int]]:
    from stdnum.us import ssn

    valid = _remembered(ssn.is_valid)
    for m in _SSN.finditer(text):
        start = m.start() - 3  # the match starts at the first dash: the area number is before it
        if valid(text[start : m.end()]):
            yield start, m.end()


# Distinct national-number candidates one text may send to libphonenumber. Each costs up to one parse per
# region (~0.3 ms for a number valid in none), so a text of thousands of distinct candidates would take a
# second; past this many, a candidate is taken for a phone number without asking (removing too much, never
# too little).
MAX_PHONE_CHECKS = 64


def _valid_in_any(candidate: str, regions: tuple[str, ...]) -> bool:
    """Is ``candidate`` a valid phone number when read as a national number of any of ``regions``?"""
    import phonenumbers

    for region in regions:
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
    return False


def _valid_national_phone(candidate: str) -> bool:
    return _valid_in_any(candidate, PHONE_REGIONS)


def find_national_phones(text: str) -> Iterator[tuple[int, int]]:
    answers: dict[str, bool] = {}
    for m in _NATIONAL_PHONE.finditer(text):
        if (date := _DATE.match(m.group(0))) and _is_date(date.group(0)):
            continue  # a date, perhaps then a time or a count: 01.02.2024 12
        opened = m.start() > 0 and text[m.start() - 1] == "("
        # The pattern is greedy: "07320 890093 00" is a number, then 00. Shorter runs of whole groups are tried
        # after the whole one, longest first.
        for length in _phone_prefixes(m.group(0)):
            candidate = m.group(0)[:length]
            if candidate.count(")") != opened:
                continue  # unbalanced: "0)" with no "(", or "(0" with no ")"
            valid = answers.get(candidate)
            if valid is None:
                valid = answers[candidate] = len(answers) >= MAX_PHONE_CHECKS or _valid_national_phone(candidate)
            if valid:
                yield m.start() - opened, m.start() + length
                break


def _phone_prefixes(candidate: str) -> Iterator[int]:
    """The whole candidate's length, then each shorter run of whole groups, with 8 to 12 digits."""
    digits = len(_digits(candidate))
    if 8 <= digits <= 12:
        yield len(candidate)
    for i in range(len(candidate) - 1, 0, -1):
        if candidate[i].isdigit():
            digits -= 1
        elif candidate[i] in " .-" and 8 <= digits <= 12:
            yield i


def warm() -> None:
    """Import the validators and load every tried region's numbering plan now, not on the first number."""
    import phonenumbers
    from stdnum import iban, luhn  # noqa: F401
    from stdnum.us import ssn  # noqa: F401

    for region in PHONE_REGIONS:
        for sample in ("0123 456789", "07700 900123", "0612345678"):
            try:
                phonenumbers.is_valid_number(phonenumbers.parse(sample, region))
            except phonenumbers.NumberParseException:
                pass


# Words that say a phone number follows or a column holds them, in the languages people paste in.
_PHONE_WORDS = (
    r"phone|tel|t[ée]l[ée]phone|telefon|tel[ée]fono|telefone|mobile|mobil|m[óo]vil|cell|celular|handy|whatsapp|fax"
)
# A number right after a word that says it is a phone number, written the national way without a trunk 0 (Spain's
# and Italy's mobiles, Brazil's "(31) 3083-4535", a US number without its parentheses): unlabelled, such digit
# groups are too often counts, ids or amounts to take on shape alone. The label must end within a few characters
# of the number ("Mi móvil: 636 14 98 26", "M: 649 13 84 91", "reach Aiko directly on 310 1423410").
# Matched on the lower-cased text: a pattern that starts with a choice of literals lets the regex engine skip
# between them, which a case-insensitive one does not.
_PHONE_LABEL = re.compile(
    rf"(?:{_PHONE_WORDS}|portable|m(?=:)|directly on |directly at |me on |me at )\.?[ \t]{{0,3}}(?::[ \t]{{0,3}})?"
    r"(?P<number>\(?[1-9][0-9]{1,3}\)?(?:[ .-]?[0-9]{2,8}){1,4})(?![\w]|[.-][0-9]|/)"
)
PHONE_LABEL_GATE = (
    "phone",
    "tel",
    "mobil",
    "vil",
    "cell",
    "portable",
    "handy",
    "whatsapp",
    "fax",
    "m:",
    "directly on",
    "directly at",
    "me on",
    "me at",
)
# Regions tried for a labelled number without a trunk 0.
LABELLED_PHONE_REGIONS = ("ES", "IT", "BR", "PT", "US", "FR", "DE", "GB", "IN", "MX", "PL", "NL")


def _valid_labelled_phone(candidate: str) -> bool:
    return _valid_in_any(candidate, LABELLED_PHONE_REGIONS)


def find_labelled_phones(text: str) -> Iterator[tuple[int, int]]:
    checks = 0
    lower = text.lower()
    if len(lower) != len(text):
        return  # lower-casing changed the length: positions would not line up
    for m in _PHONE_LABEL.finditer(lower):
        if m.start() > 0 and (lower[m.start() - 1].isalnum() or lower[m.start() - 1] == "_"):
            continue  # inside a word: "hotel", "intel", "dm:"
        candidate = m.group("number")
        if not 8 <= len(_digits(candidate)) <= 12 or candidate.count("(") != candidate.count(")"):
            continue
        checks += 1
        if checks > MAX_PHONE_CHECKS or _valid_labelled_phone(candidate):
            yield m.span("number")


# An SSN written without dashes (spaced or run together) is nine digits like any other: only right after a label
# that names it (SSN, Social Security number, SSN#) is it taken for one.
_LABELLED_SSN = re.compile(
    r"(?i)(?<![\w])(?:ssn|social security(?: number| no\.?)?)[ \t]{0,3}(?:#|no\.?)?[ \t]{0,3}[:=]?[ \t]{0,3}"
    r"(?P<number>[0-9]{3}(?P<sep>[ ]?)[0-9]{2}(?P=sep)[0-9]{4})(?![\w]|[.-][0-9])"
)
SSN_LABEL_GATE = ("ssn", "social security")


def find_labelled_ssns(text: str) -> Iterator[tuple[int, int]]:
    from stdnum.us import ssn

    for m in _LABELLED_SSN.finditer(text):
        if ssn.is_valid(m.group("number").replace(" ", "")):
            yield m.span("number")


# A delimited table (CSV, TSV, semicolon-separated) whose header names a phone column: every cell of that column
# is a phone number however it is written, and is taken for one when some region's plan says it is valid.
# Header words are looked for in the lower-cased text (a choice of literals, which the regex engine skips between).
_PHONE_HEADER = re.compile(rf"{_PHONE_WORDS}|cellphone|phone_?number|mobile_?number|msisdn")
PHONE_COLUMN_GATE = ("tel", "phone", "mobil", "vil", "cell", "handy", "fax", "msisdn", "whatsapp")
_DELIMITERS = ",;\t|"
_MAX_ROWS = 10_000


def _cells(line: str, offset: int, delimiter: str) -> list[tuple[int, int]]:
    """The spans of a delimited line's cells (a double-quoted cell may hold the delimiter), without quotes."""
    spans, start, quoted = [], 0, False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif c == delimiter and not quoted:
            spans.append((start, i))
            start = i + 1
    spans.append((start, len(line)))
    out = []
    for a, b in spans:
        cell = line[a:b]
        stripped = cell.strip().strip('"')
        lead = cell.find(stripped) if stripped else 0
        out.append((offset + a + lead, offset + a + lead + len(stripped)))
    return out


def _phone_header(text: str, line_start: int, line_end: int) -> tuple[str, int, int] | None:
    """(delimiter, phone column, cells per row) when the line is a table's header with one phone column."""
    line = text[line_start:line_end]
    delimiter = max(_DELIMITERS, key=line.count)
    if line.count(delimiter) == 0 or len(line) > 2000:
        return None
    names = [text[a:b].lower() for a, b in _cells(line, line_start, delimiter)]
    phone = [i for i, n in enumerate(names) if _PHONE_HEADER.fullmatch(n)]
    return (delimiter, phone[0], len(names)) if len(phone) == 1 else None


def find_phone_columns(text: str) -> Iterator[tuple[int, int]]:
    lower = text.lower()
    checks, resume = 0, 0
    for m in _PHONE_HEADER.finditer(lower):
        if m.start() < resume:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end == -1 else line_end
        resume = line_end
        header = _phone_header(text, line_start, line_end)
        if header is None:
            continue
        delimiter, column, width = header
        for _ in range(_MAX_ROWS):
            start = line_end + 1
            if start >= len(text):
                break
            line_end = text.find("\n", start)
            line_end = len(text) if line_end == -1 else line_end
            line = text[start:line_end]
            if line.count(delimiter) + 1 < width:
                break
            cells = _cells(line, start, delimiter)
            if len(cells) != width:
                break
            a, b = cells[column]
            digits = _digits(text[a:b]).lstrip("+")
            if 8 <= len(digits) <= 15 and digits.isdigit():
                checks += 1
                if checks > MAX_PHONE_CHECKS or _valid_table_phone(text[a:b]):
                    yield a, b
        resume = line_end


def _valid_table_phone(candidate: str) -> bool:
    return _valid_labelled_phone(candidate) or _valid_national_phone(candidate)
