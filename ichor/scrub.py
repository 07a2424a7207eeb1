"""The scrubber: removes secrets and PII from text before anything is stored.

Each rule finds spans with a linear-time regular expression plus, where a shape alone is ambiguous, a small
check of the match and its neighbourhood. Patterns start at a literal anchor where they can ("sk-", "@", "://",
the first dot of an IPv4 address) with the word boundary checked by a fixed-width lookbehind after it, so the
regex engine jumps between anchors instead of trying every position; every nested repeat is bounded or
unambiguous, so backtracking stays bounded per anchor. The whole text is always scrubbed; nothing is cut.

Secrets become ``[REDACTED:<kind>]``; PII becomes ``[EMAIL]``, ``[IP]``, ``[PHONE]`` and home folders keep their
shape (``/home/[USER]/...``). Placeholders never match a rule and count as word characters at every boundary,
so scrubbing is idempotent.

>>> scrub("mail me at ada@corp.io").text
'mail me at [EMAIL]'
>>> describe({"home_path": 2, "openai_key": 1})
'2 paths · 1 secret'
"""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SECRET_KINDS = (
    "private_key",
    "openai_key",
    "anthropic_key",
    "hf_token",
    "github_token",
    "aws_access_key",
    "aws_secret_key",
    "slack_token",
    "stripe_key",
    "google_api_key",
    "telegram_bot_token",
    "jwt",
    "bearer",
    "url_password",
    "env_secret",
)
PII_KINDS = ("email", "ip", "phone", "home_path")
KINDS = SECRET_KINDS + PII_KINDS
# Kinds defined by their own format, not by surrounding context: what the audit treats as a leak.
LEAK_KINDS = tuple(k for k in SECRET_KINDS if k not in ("aws_secret_key", "bearer", "env_secret"))

PII_PLACEHOLDERS = {"email": "[EMAIL]", "ip": "[IP]", "phone": "[PHONE]"}
USER_PLACEHOLDER = "[USER]"


def placeholder(kind: str) -> str:
    if kind == "home_path":
        return USER_PLACEHOLDER  # only the user name is replaced: /home/[USER]/...
    return PII_PLACEHOLDERS.get(kind) or f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Scrubbed:
    text: str
    removed: dict[str, int] = field(default_factory=dict, hash=False)


# A finder yields the (start, end) spans of one rule's matches, left to right; the engine replaces each span
# that does not overlap an earlier one with the rule's placeholder.
Finder = Callable[[str], Iterator[tuple[int, int]]]
Check = Callable[[re.Match], "tuple[int, int] | None"]


@dataclass(frozen=True)
class Rule:
    kind: str
    find: Finder
    # Lower-case substrings at least one of which a match must contain: a cheap pre-check before scanning.
    gate: tuple[str, ...] = ()


def _finder(pattern: re.Pattern, check: Check) -> Finder:
    def find(text: str) -> Iterator[tuple[int, int]]:
        for m in pattern.finditer(text):
            span = check(m)
            if span is not None:
                yield span

    return find


def _whole(test: Callable[[str], bool] | None = None) -> Check:
    """Replace the whole match, when ``test`` (if any) accepts its text."""
    return lambda m: m.span() if test is None or test(m.group(0)) else None


def _group(group: str, test: Callable[[re.Match], bool] | None = None) -> Check:
    """Replace only ``group``, keeping the rest of the match (a key name, a scheme, quotes)."""
    return lambda m: m.span(group) if test is None or test(m) else None


TOKEN_CHARS = "A-Za-z0-9_-"
# Boundary checks also treat the brackets of a placeholder as part of a word, so that a replacement never
# turns its neighbour into a new match on the next pass (scrubbing stays idempotent).
PH = r"\[\]"
NOT_BEFORE_TOKEN = f"(?![{PH}{TOKEN_CHARS}])"
_TOKEN_CHAR = re.compile(f"[{PH}{TOKEN_CHARS}]")


def _after_boundary(literal: str, rest: str, before: str = TOKEN_CHARS) -> re.Pattern:
    """``literal`` not preceded by a ``before`` character, then ``rest``.

    The boundary is checked *after* the literal (a fixed-width lookbehind spanning it), so the pattern starts
    with a literal and the regex engine jumps between its occurrences instead of trying every position.
    """
    lit = re.escape(literal)
    return re.compile(f"{lit}(?<![{PH}{before}]{lit}){rest}")


def _has_digit_or_upper(s: str) -> bool:
    return any(c.isdigit() or c.isupper() for c in s)


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _has_digit_and_letter(s: str) -> bool:
    return _has_digit(s) and any(c.isalpha() for c in s)


# --- secrets of a known format -------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A truncated block (no END line): the BEGIN line plus the base64 / header lines that follow it.
# Every repetition starts with a newline, so the loop is unambiguous.
_PEM_BODY = re.compile(r"(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]{1,40}:[^\n]{0,200})[ \t]*)*")


def _find_private_keys(text: str) -> Iterator[tuple[int, int]]:
    """PEM private keys, whole block. By hand, so that many BEGINs without an END stay linear."""
    pos, no_end_after = 0, None
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = None if no_end_after is not None else _PEM_END.search(text, begin.end())
        if end is None:
            no_end_after = begin.end()  # no END anywhere further on: don't look again
            pos = _PEM_BODY.match(text, begin.end()).end()
        else:
            pos = end.end()
        yield begin.start(), pos


_AWS_CONTEXT = re.compile(r"aws|secret|akia")  # searched in the lower-cased text
_AWS_SECRET = re.compile(r"(?<![\[\]A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![\[\]A-Za-z0-9/+=])")
_AWS_WINDOW = 100
_B64_CHARS = frozenset(string.ascii_letters + string.digits + "+/=")


def _context_windows(text: str) -> Iterator[tuple[int, int]]:
    """The merged stretches of text that start within _AWS_WINDOW characters after a context word."""
    start = end = -1
    for context in _AWS_CONTEXT.finditer(text.lower()):
        if context.end() > end:
            if end > start:
                yield start, end
            start = context.end()
        end = context.end() + _AWS_WINDOW
    if end > start:
        yield start, end


def _find_aws_secrets(text: str) -> Iterator[tuple[int, int]]:
    """A 40-character base64 string shortly after "aws", "secret" or an access key id."""
    for start, end in _context_windows(text):
        for m in _AWS_SECRET.finditer(text, start, min(len(text), end + 40)):
            value = m.group(0)
            if m.end() < len(text) and text[m.end()] in _B64_CHARS:
                continue  # cut by the window's end: part of a longer string
            if (
                any(c.isupper() for c in value)
                and any(c.islower() for c in value)
                and any(c.isdigit() or c in "+/" for c in value)
            ):
                yield m.span()


def _bearer_token(m: re.Match) -> bool:
    token = m.group("token")
    return len(token) >= 16 and (_has_digit(token) or (token.lower() != token and token.upper() != token))


_TEMPLATE_VALUES = {
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "str",
    "string",
    "int",
    "bytes",
    "optional",
    "secretstr",
    "secretbytes",
    "required",
    "...",
}


def _not_template(value: str, template_starts: str = "$%<{[(*#") -> bool:
    """False for placeholders and references: ${PW}, <password>, {{ pw }}, %s, ****, None, your-key-here."""
    low = value.lower()
    return not (
        value[0] in template_starts
        or low in _TEMPLATE_VALUES
        or len(set(value)) == 1
        or low.startswith(("your", "process.env", "os.environ", "os.getenv", "getenv", "env("))
    )


def _stripe_key(m: re.Match) -> tuple[int, int] | None:
    # The match starts at "k_": the key starts one character earlier, at s/r/p.
    start = m.start() - 1
    text = m.string
    if start < 0 or text[start] not in "srp":
        return None
    if start > 0 and _TOKEN_CHAR.match(text[start - 1]):
        return None
    return (start, m.end()) if _has_digit_or_upper(m.group("body")) else None


def _telegram_token(m: re.Match) -> tuple[int, int] | None:
    # The match starts at ":AA": the bot id (8 to 10 digits) comes before it.
    text, start = m.string, m.start()
    while start > m.start() - 11 and start > 0 and text[start - 1].isdigit():
        start -= 1
    digits = m.start() - start
    return (start, m.end()) if 8 <= digits <= 10 and not (start > 0 and text[start - 1].isdigit()) else None


SECRET_RULES: tuple[Rule, ...] = (
    Rule("private_key", _find_private_keys, gate=("-----begin",)),
    Rule("anthropic_key", _finder(_after_boundary("sk-ant-", r"[A-Za-z0-9_-]{20,}"), _whole())),
    Rule(
        "openai_key",
        _finder(
            _after_boundary("sk-", r"(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"), _whole(_has_digit_or_upper)
        ),
    ),
    Rule(
        "hf_token",
        _finder(_after_boundary("hf_", r"[A-Za-z0-9]{30,}" + NOT_BEFORE_TOKEN), _whole(_has_digit_or_upper)),
    ),
    Rule(
        "github_token",
        _finder(_after_boundary("gh", r"[pousr]_[A-Za-z0-9]{36,255}" + NOT_BEFORE_TOKEN), _whole(_has_digit_or_upper)),
    ),
    Rule(
        "github_token",
        _finder(
            _after_boundary("github_pat_", r"[A-Za-z0-9_]{50,255}" + NOT_BEFORE_TOKEN), _whole(_has_digit_or_upper)
        ),
    ),
    Rule(
        "aws_access_key",
        _finder(
            _after_boundary("A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![\[\]A-Za-z0-9])", before="A-Za-z0-9"),
            _whole(),
        ),
    ),
    Rule("slack_token", _finder(_after_boundary("xox", r"[abposr]-[A-Za-z0-9-]{10,}"), _whole(_has_digit))),
    Rule("slack_token", _finder(_after_boundary("xapp-", r"[A-Za-z0-9-]{10,}"), _whole(_has_digit))),
    Rule(
        "slack_token",
        _finder(
            re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[A-Za-z0-9_/-]{8,})"),
            _group("path"),
        ),
    ),
    Rule(
        "stripe_key",
        _finder(re.compile(r"k_(?:live|test)_(?P<body>[A-Za-z0-9]{10,})" + NOT_BEFORE_TOKEN), _stripe_key),
    ),
    Rule("google_api_key", _finder(_after_boundary("AIza", r"[A-Za-z0-9_-]{35}" + NOT_BEFORE_TOKEN), _whole())),
    Rule("telegram_bot_token", _finder(re.compile(r":AA[A-Za-z0-9_-]{33}" + NOT_BEFORE_TOKEN), _telegram_token)),
    Rule(
        "jwt",
        _finder(_after_boundary("eyJ", r"[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"), _whole()),
    ),
    *(
        Rule(
            "bearer",
            _finder(
                re.compile(rf"{word}(?<![\w{PH}]{word})[ \t]+(?P<token>[A-Za-z0-9._~+/-]+=*)"),
                _group("token", _bearer_token),
            ),
        )
        for word in ("Bearer", "bearer", "BEARER")
    ),
    Rule(
        "url_password",
        _finder(
            re.compile(r"://(?<=[A-Za-z0-9+.-]://)[^\s:/@\[\]]{1,128}:(?!\[REDACTED)(?P<password>[^\s/@]{1,256})@"),
            _group("password", lambda m: _not_template(m.group("password"), "$%<{[")),
        ),
    ),
    Rule("aws_secret_key", _find_aws_secrets, gate=("aws", "secret", "akia")),
)


# --- NAME=value assignments ----------------------------------------------------------------------------

_STRONG_NAME = re.compile(
    r"(?i)(?:\w*_)?(?:api_?key|apikey|secret|secret_?key|client_?secret|token|access_?token|auth_?token|"
    r"refresh_?token|bot_?token|password|passwd|pwd|passphrase|private_?key|access_?key|secret_?access_?key|"
    r"credentials?)"
)
_KEY_NAME = re.compile(r"(?i)\w*_key")
_EXPRESSION = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+|[A-Za-z_][\w.]*[(\[]")
_NAME_GATE = ("key", "secret", "token", "pass", "pwd", "credential")
_NAME_GATE_RE = re.compile("|".join(_NAME_GATE))

# The operator and the value; the name before it is found by _NAME_REVERSED, so the scan starts at [:=].
_ASSIGNMENT = re.compile(
    r"(?:[:=](?!=)|:=)[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,512})\"|'(?P<sq>[^'\n]{1,512})'|(?P<bare>[^\s\"'`,;]{1,512}))"
)
# The name before the operator, matched on the reversed text (so it is an anchored match, not a search).
_NAME_REVERSED = re.compile(r"[ \t]{0,8}(?P<q>[\"']?)(?P<name>[A-Za-z0-9_]{0,80}[A-Za-z_])(?P=q)(?![\w.\[\]-])")


def _find_assignments(text: str) -> Iterator[tuple[int, int]]:
    reversed_text = None
    for m in _ASSIGNMENT.finditer(text):
        tail = text[max(0, m.start() - 20) : m.start()].lower()
        if not _NAME_GATE_RE.search(tail):
            continue  # cheap pre-check: no secret-like name ends right before the operator
        if reversed_text is None:
            reversed_text = text[::-1]
        name = _NAME_REVERSED.match(reversed_text, len(text) - m.start())
        if name is not None:
            span = _assignment_value(m, name.group("name")[::-1])
            if span is not None:
                yield span


def _looks_generated(value: str) -> bool:
    """A digit or a symbol: unlike an ordinary word or a type name."""
    return len(value) >= 6 and (_has_digit(value) or any(c in "!@#$%^&*_-+=/~" for c in value))


def _assignment_value(m: re.Match, name: str) -> tuple[int, int] | None:
    """The span of the value when ``name = value`` assigns a secret, else None."""
    group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
    value = m.group(group)
    if group == "bare":
        value = value.rstrip(")]},:")  # a call's or literal's closing bracket: password=None)
        if not value or _EXPRESSION.match(value):
            return None  # code: tokenizer.eos_token, os.environ[...], get_token()
    if not _not_template(value):
        return None
    if _STRONG_NAME.fullmatch(name) is None:
        # A generic *_KEY (SORT_KEY, WANDB_RUN_ID_KEY, cache_key): only a value that looks generated.
        weak_ok = _KEY_NAME.fullmatch(name) and len(value) >= 8 and _has_digit_and_letter(value)
        return m.span(group) if weak_ok and " " not in value else None
    if group == "bare" and m.group(0)[:2] != ":=" and m.group(0)[0] == ":" and not _looks_generated(value):
        return None  # prose and annotations: "Token: the issue is", "private_key: PrivateKeyTypes"
    if group == "bare":
        if name.islower() and re.fullmatch(r"[A-Za-z_]+", value):
            return None  # code: token = response, token = Operator
        if value.isdigit() and "pass" not in name.lower() and "pwd" not in name.lower():
            return None  # MAX_TOKEN=4096
    return m.span(group)


ENV_RULE = Rule("env_secret", _find_assignments, gate=_NAME_GATE)


# --- PII -----------------------------------------------------------------------------------------------

_FILE_SUFFIXES = {
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "webp",
    "ico",
    "js",
    "ts",
    "tsx",
    "jsx",
    "css",
    "json",
    "md",
    "txt",
    "html",
    "py",
    "rs",
    "go",
    "lock",
    "yaml",
    "yml",
    "toml",
}


_LOCAL_CHARS = frozenset(string.ascii_letters + string.digits + "._%+-")


def _email(m: re.Match) -> tuple[int, int] | None:
    # The match starts at "@": the local part (1 to 64 characters, starting with a letter or digit) is before it.
    text = m.string
    start = _walk_back(text, m.start(), _LOCAL_CHARS, 65)
    local = text[start : m.start()]
    if not local or len(local) > 64 or not local[0].isalnum() or (start > 0 and text[start - 1] in "[]"):
        return None
    if local.lower() == "git" or m.group(0).rsplit(".", 1)[1].lower() in _FILE_SUFFIXES:
        return None  # git@github.com:org/repo, icon@2x.png
    if text.endswith("://", 0, start):
        return None  # https://user@host: URL user info, not a mailbox
    return start, m.end()


_DOC_NETS = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
_VERSION_CONTEXT = re.compile(r"(?i)(?:version|ver|release|build|rev|v|==|>=|<=|~=|!=|\^|~)[ \t]*[:=]?[ \t]*\Z")


def _kept_address(address) -> bool:
    """Loopback, unspecified and documentation addresses identify no one."""
    return (
        address.is_loopback
        or address.is_unspecified
        or any(address in net for net in _DOC_NETS if net.version == address.version)
    )


def _walk_back(text: str, end: int, chars, limit: int) -> int:
    start = end
    while start > end - limit and start > 0 and text[start - 1] in chars:
        start -= 1
    return start


_DIGITS = "0123456789"
_HEXCHARS = "0123456789abcdefABCDEF"


def _ipv4(m: re.Match) -> tuple[int, int] | None:
    # The match starts at the first dot: the first octet comes before it.
    text = m.string
    start = _walk_back(text, m.start(), _DIGITS, 3)
    if start == m.start() or (start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.[]")):
        return None
    try:
        address = ipaddress.IPv4Address(text[start : m.end()])
    except ValueError:
        return None
    octets = text[start : m.end()].split(".")
    if _kept_address(address) or address.is_link_local or octets[0] == "255" or octets[3] == "0":
        return None  # netmasks, network addresses, 169.254.169.254 (cloud metadata)
    if max(len(o) for o in octets) == 1:
        return None  # version-shaped: 1.2.3.4
    if _VERSION_CONTEXT.search(text, max(0, start - 24), start):
        return None
    return start, m.end()


def _ipv6(m: re.Match) -> tuple[int, int] | None:
    # The match is a run of hex digits and colons starting at a colon: the first group comes before it.
    text = m.string
    start = _walk_back(text, m.start(), _HEXCHARS, 4)
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_:."):
        return None
    if m.end() < len(text) and (text[m.end()].isalnum() or text[m.end()] in "_:."):
        return None  # longer than an address, or ::ffff:1.2.3.4 (its IPv4 part is judged by the IPv4 rule)
    candidate = text[start : m.end()]
    try:
        address = ipaddress.IPv6Address(candidate.split("%", 1)[0])
    except ValueError:
        return None
    groups = [g for g in candidate.split("%", 1)[0].split(":") if g]
    if len(groups) < 2 or max(len(g) for g in groups) < 3 or not _has_digit(candidate):
        return None  # a[100::2], dead::beef
    return None if _kept_address(address) else (start, m.end())


# Stock account names, not a person's: /home/user in docs, /home/ubuntu on a cloud image.
_GENERIC_USERS = {
    ".",
    "..",
    "user",
    "username",
    "you",
    "me",
    "name",
    "example",
    "runner",
    "ubuntu",
    "ec2-user",
    "vagrant",
    "node",
    "app",
    "root",
    "admin",
    "guest",
    "linuxbrew",
    "x",
}


def _personal_user(m: re.Match) -> bool:
    return m.group("user").lower() not in _GENERIC_USERS


def _phone_digits(m: re.Match) -> tuple[int, int] | None:
    return m.span() if 8 <= sum(c.isdigit() for c in m.group(0)) <= 15 else None


def _north_american(m: re.Match) -> tuple[int, int] | None:
    text, start = m.string, m.start()
    leading_one = start >= 2 and text[start - 1] in " .-" and text[start - 2] == "1"
    if leading_one and (start < 3 or not text[start - 3].isalnum()):
        start -= 2  # 1-800-555-0100
    elif start > 0 and text[start - 1] in ".-" and start > 1 and text[start - 2].isdigit():
        return None  # part of a longer dotted or dashed number
    return start, m.end()


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PHONE_END = r"(?![\w\[\]]|[.-][0-9])"

PII_RULES: tuple[Rule, ...] = (
    Rule(
        "email",
        _finder(
            re.compile(
                r"@(?<=[A-Za-z0-9._%+-]@)[A-Za-z0-9][A-Za-z0-9-]{0,62}"
                r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![\[\]A-Za-z0-9-])"
            ),
            _email,
        ),
        gate=("@",),
    ),
    Rule(
        "home_path",
        _finder(
            re.compile(
                r"/(?<![\w.~\[\]-]/)(?:home|Users)/(?P<user>(?!(?:Shared|Public|Default)(?![\w.-]))[A-Za-z0-9._-]{1,64})"
                r"(?![\[\]A-Za-z0-9._-])"
            ),
            _group("user", _personal_user),
        ),
        gate=("/home/", "/users/"),
    ),
    Rule(
        "home_path",
        _finder(
            re.compile(
                r"Users(?<=[A-Za-z]:\\Users|[A-Za-z]:/Users|:\\\\Users)(?:\\{1,2}|/)"
                r"(?P<user>(?!(?:Public|Default|All Users)(?![\w.-]))[A-Za-z0-9._-]{1,64})(?![A-Za-z0-9._-])"
            ),
            _group("user", _personal_user),
        ),
        gate=("users",),
    ),
    Rule("ip", _finder(re.compile(rf"\.(?<=[0-9]\.){_OCTET}\.{_OCTET}\.{_OCTET}(?![\w\[\]]|\.[0-9])"), _ipv4)),
    Rule("ip", _finder(re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:]{0,36}(?:%[A-Za-z0-9]{1,15})?"), _ipv6)),
    Rule(
        "phone",
        _finder(
            re.compile(r"\+(?<![\w+\[\]]\+)[0-9]{1,3}(?:[ -]?\([0-9]{1,4}\))?(?:[ -][0-9]{1,8}){1,5}" + _PHONE_END),
            _phone_digits,
        ),
    ),
    Rule("phone", _finder(re.compile(r"\+(?<![\w+\[\]]\+)[0-9]{8,15}" + _PHONE_END), _phone_digits)),
    Rule(
        "phone",
        _finder(re.compile(r"\((?<![\w+.\[\]-]\()[0-9]{3}\)[ ]?[0-9]{3}[.-][0-9]{4}" + _PHONE_END), _phone_digits),
    ),
    Rule(
        "phone",
        _finder(re.compile(r"[0-9](?<![\w+.\[\]].)[0-9]{2}[.-][0-9]{3}[.-][0-9]{4}" + _PHONE_END), _north_american),
    ),
)

RULES: tuple[Rule, ...] = SECRET_RULES + (ENV_RULE,) + PII_RULES
LEAK_RULES: tuple[Rule, ...] = tuple(r for r in SECRET_RULES if r.kind in LEAK_KINDS)


# --- public API ----------------------------------------------------------------------------------------


def _apply(text: str, rules: tuple[Rule, ...]) -> Scrubbed:
    removed: dict[str, int] = {}
    lower = text.lower()
    for rule in rules:
        if rule.gate and not any(g in lower for g in rule.gate):
            continue
        pieces, last, hits = [], 0, 0
        for start, end in rule.find(text):
            if start < last:
                continue
            pieces += (text[last:start], placeholder(rule.kind))
            last = end
            hits += 1
        if hits:
            pieces.append(text[last:])
            text = "".join(pieces)
            removed[rule.kind] = removed.get(rule.kind, 0) + hits
    return Scrubbed(text, removed)


MAX_PASSES = 4


def scrub(text: str) -> Scrubbed:
    """The text with every secret and PII match replaced by a typed placeholder, and counts per kind.

    A replacement can change what its neighbours see (``/home/0/home/0``: the second path only starts a path
    once the first user name is gone), so passes repeat until one removes nothing. That makes scrubbing
    idempotent; text with nothing to remove costs a single pass.
    """
    if not text:
        return Scrubbed(text or "", {})
    result = _apply(text, RULES)
    removed = result.removed
    for _ in range(MAX_PASSES - 1):
        if not result.removed:
            break
        result = _apply(result.text, RULES)
        removed = merge_counts(removed, result.removed)
    return Scrubbed(result.text, removed)


def find_leaks(text: str) -> dict[str, int]:
    """Secrets of a known format still present in ``text`` (what the audit stage fails on)."""
    return _apply(text, LEAK_RULES).removed if text else {}


def merge_counts(*counts: dict[str, int] | None) -> dict[str, int]:
    merged: dict[str, int] = {}
    for c in counts:
        for kind, n in (c or {}).items():
            if n:
                merged[kind] = merged.get(kind, 0) + n
    return merged


def string_leaves(obj) -> Iterator[str]:
    """Every string leaf of nested lists/tuples/dicts (values, not keys), in the order scrub_messages visits them."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from string_leaves(value)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from string_leaves(item)


def scrub_messages(obj):
    """A scrubbed copy of ``obj``: every string leaf of nested lists/tuples/dicts is scrubbed, keys are not."""
    removed: dict[str, int] = {}

    def walk(node):
        if isinstance(node, str):
            result = scrub(node)
            for kind, n in result.removed.items():
                removed[kind] = removed.get(kind, 0) + n
            return result.text
        if isinstance(node, dict):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(item) for item in node]
        return node

    return walk(obj), removed


_GROUPS = (
    ("email", "email", "emails"),
    ("ip", "IP", "IPs"),
    ("phone", "phone", "phones"),
    ("home_path", "path", "paths"),
)


def describe(removed: dict[str, int] | None) -> str:
    """What the card says, e.g. ``"1 email · 2 paths · 3 secrets"``; ``"nothing"`` when nothing was removed."""
    removed = {k: n for k, n in (removed or {}).items() if n}
    parts = []
    for kind, one, many in _GROUPS:
        n = removed.pop(kind, 0)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    secrets = sum(n for k, n in removed.items() if k in SECRET_KINDS)
    if secrets:
        parts.append(f"{secrets} secret{'' if secrets == 1 else 's'}")
    parts.extend(f"{n} {k}" for k, n in sorted(removed.items()) if k not in SECRET_KINDS)
    return " · ".join(parts) if parts else "nothing"
