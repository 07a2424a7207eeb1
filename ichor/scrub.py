"""The scrubber: removes secrets and PII from text before anything is stored.

Each rule finds spans with a linear-time regular expression plus, where a shape alone is ambiguous, a small
check of the match and its neighbourhood. Patterns start at a literal anchor where they can ("sk-", "@", "://",
the first dot of an IPv4 address) with the word boundary checked by a fixed-width lookbehind after it, so the
regex engine jumps between anchors instead of trying every position; every nested repeat is bounded or
unambiguous, so backtracking stays bounded per anchor. The whole text is always scrubbed; nothing is cut.

Three sources of rules run in order: ichor's own format rules, the provider formats of the gitleaks catalogue
(``ichor.scrub_catalogue``, data in ``ichor/data/scrub_catalogue.toml``), then ichor's own logic for named
assignments, command lines, key blocks, home paths and PII (numbers checked by ``ichor.scrub_pii``'s validators).
A value that is a placeholder or a reference (``ichor.scrub_values``) is kept whichever rule matched it.

Secrets become ``[REDACTED:<kind>]``; PII becomes ``[EMAIL]``, ``[IP]``, ``[PHONE]``, ``[CARD]``, ``[IBAN]``,
``[SSN]``, and home folders and prompts keep their shape (``/home/[USER]/...``). Placeholders never match a rule
and count as word characters at every boundary, so scrubbing is idempotent.

>>> scrub("mail me at ada@corp.io").text
'mail me at [EMAIL]'
>>> describe({"home_path": 2, "openai_key": 1})
'2 paths · 1 secret'
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import ipaddress
import itertools
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from . import scrub_catalogue, scrub_pii
from .scrub_values import is_placeholder, is_template, kept_value

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
    "basic_auth",
    "cli_secret",
    "api_token",
    "env_secret",
)
PII_KINDS = ("email", "ip", "phone", "home_path", "user_name", "card", "iban", "ssn")
KINDS = SECRET_KINDS + PII_KINDS
# Kinds defined by their own format, not by surrounding context: what the audit treats as a leak.
LEAK_KINDS = tuple(
    k for k in SECRET_KINDS if k not in ("aws_secret_key", "bearer", "basic_auth", "cli_secret", "env_secret")
)

PII_PLACEHOLDERS = {
    "email": "[EMAIL]",
    "ip": "[IP]",
    "phone": "[PHONE]",
    "card": "[CARD]",
    "iban": "[IBAN]",
    "ssn": "[SSN]",
}
USER_PLACEHOLDER = "[USER]"


# Any placeholder, in lower case: the words inside one ("secret", "key", "token") are not text.
PLACEHOLDER_LOWER = (
    r"\[(?:redacted:[a-z_]{1,40}|"
    + "|".join(re.escape(p[1:-1].lower()) for p in (*PII_PLACEHOLDERS.values(), USER_PLACEHOLDER))
    + r")\]"
)


def placeholder(kind: str) -> str:
    if kind in ("home_path", "user_name"):
        return USER_PLACEHOLDER  # only the user name is replaced: /home/[USER]/..., [USER]@devbox:~$
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
    # True when the finder itself keeps placeholders and references, so the engine need not check again.
    checks_values: bool = False
    # True when the rule's own replacements can't make a new match for it (its names are words, its values are
    # skipped once they are placeholders): it runs again only when another rule changes the text.
    settles: bool = False


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


_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_SYMBOL = re.compile(r"[!@#$%^&*_\-+=/~.]")


def _has_digit(s: str) -> bool:
    return _DIGIT.search(s) is not None


def _has_digit_and_letter(s: str) -> bool:
    return _has_digit(s) and _LETTER.search(s) is not None


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
            body = _PEM_BODY.match(text, begin.end())
            pos = body.end() if body else begin.end()
        else:
            pos = end.end()
        yield begin.start(), pos


# A PuTTY .ppk key: its header line, then every "Name: value" and base64 line that follows, whole.
_PUTTY_KEY = re.compile(
    r"PuTTY-User-Key-File-[0-9]:[^\n]{0,200}(?:\r?\n[ \t]*(?:[A-Za-z-]{1,40}:[^\n]{0,200}|[A-Za-z0-9+/=]{8,})[ \t]*)*"
)

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


def _basic_credentials(m: re.Match) -> bool:
    """A Basic token is base64 of "user:password"; prose ("Basic authentication") does not decode to that."""
    try:
        decoded = base64.b64decode(m.group("token"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


# An option's value: quoted, or a word that does not start like another option or a placeholder.
_SECRET_WORD = r"""(?!["']?\[REDACTED)(?:"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"'-][^\s"']{0,255})"""
# curl -u user:password, --user=user:password (the user stays)
_CLI_USER = re.compile(
    r"""-(?<![\w-]-)(?:u|-user)(?:=|[ \t]+)["']?[^\s:"'@]{1,64}:(?!\[REDACTED)(?P<secret>[^\s"']{1,256})"""
)
# --password SECRET, --token SECRET, --api-key SECRET: a secret-named long option and the next word
_CLI_LONG = re.compile(
    r"--(?<![\w-]--)(?:password|passwd|pass|token|api-key|apikey|api-token|secret|client-secret|auth-token|"
    rf"access-token|access-key|secret-key|private-key)[ \t]+(?P<secret>{_SECRET_WORD})"
)
# -p: the password glued to it for the MySQL family (mysql -pSECRET), the next word for tools where -p means
# password (twine, sshpass, docker login); elsewhere -p is a port, a parent folder or a plugin.
_CLI_P = re.compile(rf"-p(?<=\s-p)(?:(?P<glued>{_SECRET_WORD})|[ \t]+(?P<spaced>{_SECRET_WORD}))")
# The same as elements of a list (a Dockerfile's exec form, a compose command, subprocess.run's argv):
# ["mysql", "-pSECRET"] and ["twine", "upload", "-p", "SECRET"].
_CLI_P_LISTED = re.compile(
    r"""(?P<q>["'])-p(?<=[\[,\s]["']-p)(?!\[REDACTED)"""
    r"""(?:(?P<glued>[^"'\s]{1,256})(?P=q)|"""
    r"""(?P=q)[ \t]*,[ \t]*(?P<q2>["'])(?!\[REDACTED)(?P<spaced>[^"'\n]{1,256})(?P=q2))"""
)
_NEXT_WORD = r"""(?:[ \t]+|["'][ \t]*,[ \t]*["'])"""  # the next word, or the next element of a list
# Command names start with a literal (no leading \b), so the engine skips between candidates; the character
# before a name is checked afterwards.
_GLUED_P_COMMAND = re.compile(r"(?:mysql|mysqldump|mysqladmin|mariadb|mysqlsh)\b")
_SPACED_P_COMMAND = re.compile(
    r"(?:twine|sshpass|(?:docker|podman|nerdctl|buildah|skopeo)NEXTlogin|helmNEXTregistryNEXTlogin|smbclient)\b".replace(
        "NEXT", _NEXT_WORD
    )
)
# redis-cli -a PASSWORD (elsewhere -a means "all" or "append").
_CLI_A = re.compile(rf"-a(?<=\s-a)[ \t]+(?P<redis>{_SECRET_WORD})")
_CLIENT_COMMANDS = {
    "glued": _GLUED_P_COMMAND,
    "spaced": _SPACED_P_COMMAND,
    "redis": re.compile(r"redis-cli\b"),
}
_COMMAND_REACH = 300  # how far back on the line the command may be
_WORD_CHAR = re.compile(r"[\w-]")


def _cli_candidates(text: str) -> Iterator[tuple[int, int]]:
    for pattern in (_CLI_USER, _CLI_LONG):
        for m in pattern.finditer(text):
            yield m.span("secret")
    commands: dict[str, list[int]] = {}
    for m in itertools.chain(_CLI_P.finditer(text), _CLI_P_LISTED.finditer(text), _CLI_A.finditer(text)):
        group = m.lastgroup or ""  # the value's group, which closes last: glued, spaced or redis
        if group not in commands:  # every command's position, found once: each flag then costs a bisect
            commands[group] = [
                c.start()
                for c in _CLIENT_COMMANDS[group].finditer(text)
                if c.start() == 0 or not _WORD_CHAR.match(text[c.start() - 1])
            ]
        reach = max(0, m.start() - _COMMAND_REACH)
        line_start = text.rfind("\n", reach, m.start()) + 1 or reach
        before = commands[group]
        i = bisect.bisect_left(before, line_start)
        if i < len(before) and before[i] < m.start():
            yield m.span(group)


def _find_cli_secrets(text: str) -> Iterator[tuple[int, int]]:
    """Secrets passed to a command line as an option's argument, left to right like every finder."""
    for start, end in sorted(_cli_candidates(text)):
        if text[start] in "\"'":
            start, end = start + 1, end - 1
        value = text[start:end]
        if value and not value.isdigit() and not _EXPRESSION.match(value):
            yield start, end


SECRET_RULES: tuple[Rule, ...] = (
    Rule("private_key", _find_private_keys, gate=("-----begin",)),
    Rule("private_key", _finder(_PUTTY_KEY, _whole()), gate=("putty-user-key-file-",)),
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
            # The user may be empty (redis://:pw@host) and the password may hold a raw "@": it runs to the last
            # "@" before the host, which is followed by "/", "?", "#", a space or the end.
            re.compile(
                r"://(?<=[A-Za-z0-9+.-]://)[^\s:/@\[\]]{0,128}:(?!\[REDACTED)(?P<password>[^\s/]{1,256})"
                r"@(?=[^\s/@]*(?:[/?#\s]|\Z))"
            ),
            _group("password"),
        ),
    ),
    *(
        Rule(
            "basic_auth",
            _finder(
                re.compile(rf"{word}(?<![\w{PH}]{word})[ \t]+(?P<token>[A-Za-z0-9+/]{{6,}}={{0,2}})(?![\w+/=])"),
                _group("token", _basic_credentials),
            ),
        )
        for word in ("Basic", "basic", "BASIC")
    ),
    Rule(
        "cli_secret",
        _find_cli_secrets,
        # A necessary condition: every option the finder knows holds one of these (--client-secret and
        # --access-token hold neither "--secret" nor "--token", so they have their own).
        gate=(
            "-u",
            "--user",
            "-p",
            "-a",
            "--pass",
            "--token",
            "--secret",
            "--api",
            "--auth",
            "--client-secret",
            "--access-",
        ),
    ),
    Rule("aws_secret_key", _find_aws_secrets, gate=("aws", "secret", "akia")),
)


# --- NAME=value assignments ----------------------------------------------------------------------------

# Names are normalised first (leading dashes dropped, "-" and "." read as "_"), so --password, X-API-Key,
# db-password and spring.datasource.password are names like any other. A trailing qualifier (client-key-data,
# password_b64) does not change what the name holds.
_NAME_QUALIFIER = r"(?:_(?:data|value|b64|base64|raw|plain|plaintext|str|enc|encoded|encrypted|hash))?"
_STRONG_NAME = re.compile(
    r"(?i)(?:\w*_)?(?:api_?key|apikey|secret|secret_?key|client_?secret|token|access_?token|auth_?token|"
    r"refresh_?token|bot_?token|api_?token|session_?token|password|passwd|pwd|pass|pw|passcode|passphrase|"
    r"private_?key|access_?key|secret_?access_?key|signing_?key|encryption_?key|master_?key|credentials?)"
    + _NAME_QUALIFIER
)
_KEY_NAME = re.compile(r"(?i)\w*_key" + _NAME_QUALIFIER)
# Code where a value should be: attribute access (tokenizer.eos_token, self.v2) or a call or subscript. A dotted
# value whose parts are not identifiers (Summer.2024, a dotted token) is a value.
_EXPRESSION = re.compile(
    r"[A-Za-z_][A-Za-z_]*[0-9]{0,4}(?:\.[A-Za-z_][A-Za-z_]*[0-9]{0,4})+(?![^)\]},:])|[A-Za-z_][\w.]*[(\[]"
)
_NAME_GATE = ("key", "secret", "token", "pass", "pwd", "pw", "credential")
_NAME_GATE_RE = re.compile("|".join(_NAME_GATE), re.IGNORECASE)
_REMOVED = ("[REDACTED", '"[REDACTED', "'[REDACTED")

# Where a secret's name can end and its operator follow: every name above ends in one of these words, then
# perhaps a qualifier, a closing quote and spaces. Only the operator is matched, never the value, so an operator
# inside another assignment's value (Groq(api_key="..."), //host/:_authToken=..., jdbc:...?password=..., a JSON
# connection string) is examined too. Operators after any other word are skipped by the regex engine, not here.
# The first letter is matched case by case and the word after it dispatched on it by a lookbehind: a pattern that
# starts with a set of letters lets the engine skip to the next such letter instead of trying every position.
_NAMED_OPERATOR = re.compile(
    r"[kKsStTpPcC](?i:(?<=k)ey|(?<=s)ecret|(?<=t)oken|(?<=p)(?:ass(?:word|wd|code|phrase)?|wd|w)|(?<=c)redentials?)"
    + "(?i:"
    + _NAME_QUALIFIER.replace("_", "[_.-]", 1)
    + ")"
    + r"[\"']?\]?[ \t]{0,8}(?P<op>=>|:=|<-|=(?!=)|:(?!=))[ \t]*+(?![\"']?\[REDACTED)"  # not a value already removed
)
# The name before the operator, matched on the reversed text (so it is an anchored match, not a search).
# A subscript's key is a name too: os.environ["DB_PASSWORD"] = ..., config['password'] = ..., ENV["API_KEY"] = ...
_NAME_REVERSED = re.compile(
    r"[ \t]{0,8}(?P<sub>\])?(?P<q>[\"']?)(?P<name>[A-Za-z0-9_.-]{0,80}[A-Za-z_]-{0,2})(?P=q)"
    r"(?(sub)\[|(?![\w.\[\]-]))"
)
# A type between a name and its value: let token: string = "...", const API_KEY: &str = "...". The "=" has a
# space before it, unlike base64 padding (db-password: c2VjcmV0=).
_TYPE_ANNOTATION = re.compile(r"[A-Za-z_&][\w<>\[\]., &|?']{0,60}?[ \t]+=(?![=>])[ \t]*")
# A YAML anchor or tag before a value.
_YAML_DECORATION = re.compile(r"(?:[&!][^\s]{0,40}[ \t]+)+")
# Where a value ends. Values are not cut at any length: a session token can run past 1,000 characters.
_BARE_END = re.compile(r"[\s\"'`,;]")
_DQ_END = re.compile(r"[\"\n]")
_SQ_END = re.compile(r"['\n]")
# Operators examined within one run of value text: deeper nesting than this is not an assignment anyone wrote,
# and the bound keeps hostile text (token=token=token=...) linear.
_MAX_NESTED = 8


class _NextMatch:
    """The next match of ``pattern`` at or after a position, for positions that only increase (linear overall)."""

    def __init__(self, text: str, pattern: re.Pattern):
        self.text, self.pattern, self.at = text, pattern, -1

    def __call__(self, pos: int) -> int:
        if self.at < pos:
            m = self.pattern.search(self.text, pos)
            self.at = m.start() if m else len(self.text)
        return self.at


def _find_assignments(text: str) -> Iterator[tuple[int, int]]:
    reversed_text = None
    ends = {"bare": _NextMatch(text, _BARE_END), '"': _NextMatch(text, _DQ_END), "'": _NextMatch(text, _SQ_END)}
    taken_until, run_end, in_run = 0, -1, 0
    size = len(text)
    for m in _NAMED_OPERATOR.finditer(text):
        op_start, start = m.start("op"), m.end()  # the value starts after the operator's spaces
        if op_start < taken_until:
            continue  # inside a value already removed
        if reversed_text is None:
            reversed_text = text[::-1]
        name = _NAME_REVERSED.match(reversed_text, size - op_start)
        if name is None:
            continue
        raw_name = name.group("name")[::-1]
        strength = _name_strength(raw_name)
        if strength is None:
            continue
        operator = m.group("op")
        first = text[start] if start < size else ""
        if operator == ":" and first not in "\"'" and (annotation := _TYPE_ANNOTATION.match(text, start)):
            start, operator = annotation.end(), "="  # token: string = VALUE: the value is after the type
            first = text[start] if start < size else ""
        if first in "&!" and operator == ":" and (decoration := _YAML_DECORATION.match(text, start)):
            start = decoration.end()  # password: &anchor VALUE, secret: !!binary VALUE
            if text.startswith(_REMOVED, start):
                continue  # the value is already a placeholder (the engine's second pass)
            first = text[start] if start < size else ""
        quote = first if first and first in "\"'" else None
        end = ends[quote](start + 1) if quote else ends["bare"](start)
        in_run = in_run + 1 if end == run_end else 1
        run_end = end
        if in_run > _MAX_NESTED:
            continue
        span = _assignment_value(text, raw_name, strength, operator, start + (1 if quote else 0), end, quote)
        if span is not None:
            taken_until = span[1]
            yield span


def _looks_generated(value: str) -> bool:
    """A digit or a symbol: unlike an ordinary word or a type name."""
    return len(value) >= 6 and (_has_digit(value) or _SYMBOL.search(value) is not None)


@functools.lru_cache(maxsize=4096)
def _normal_name(name: str) -> str:
    return name.lstrip("-").replace("-", "_").replace(".", "_")


# camelCase names are read with "_" at each lower-to-upper step: rootPassword, dbPass, adminToken, clientKey.
_CAMEL_STEP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A secret word glued to the word before it: PGPASSWORD, MYSQLPWD, requirepass, storepass.
_GLUED_NAME = re.compile(r"(?i)[a-z]{2,}(?:password|passwd|pass|pwd|secret|token)" + _NAME_QUALIFIER)
_NOT_GLUED = {"bypass", "compass", "encompass", "trespass", "surpass", "overpass", "underpass"}


@functools.lru_cache(maxsize=4096)
def _name_strength(raw_name: str) -> str | None:
    """How surely a name holds a secret: "strong" (DB_PASSWORD, rootPassword, PGPASSWORD), "glued" for a secret
    word glued on in lower case (requirepass: only a value that looks generated), "weak" for a generic *_KEY,
    else None."""
    name = _CAMEL_STEP.sub("_", _normal_name(raw_name))
    if _STRONG_NAME.fullmatch(name):
        return "strong"
    if _KEY_NAME.fullmatch(name):
        return "weak"
    if _GLUED_NAME.fullmatch(name) and name.lower() not in _NOT_GLUED:
        return "strong" if name.isupper() else "glued"
    return None


def _assignment_value(
    text: str, raw_name: str, strength: str, operator: str, start: int, end: int, quote: str | None
) -> tuple[int, int] | None:
    """The span of the value when ``name <operator> value`` assigns a secret (``strength`` of its name), else None."""
    if quote is None:
        while end > start and text[end - 1] in ")]},:":
            end -= 1  # a call's or literal's closing bracket: password=None)
    value = text[start:end]
    if not value or value.startswith("[REDACTED") or (quote is None and value[0] in "([{"):
        return None  # already removed, or code: (a * b), [x], {...}
    if quote is None and _EXPRESSION.match(value):
        return None  # code: tokenizer.eos_token, os.environ[...], get_token()
    if is_template(value) or is_placeholder(value):
        return None
    if strength == "weak":
        # A generic *_KEY (SORT_KEY, WANDB_RUN_ID_KEY, cache_key): only a value that looks generated.
        ok = len(value) >= 8 and _has_digit_and_letter(value) and " " not in value
        return (start, end) if ok else None
    if (strength == "glued" or (quote is None and operator == ":")) and not _looks_generated(value):
        # bypass-like words that happen to end in "pass"; prose and annotations after a colon ("Token: the issue
        # is", "private_key: PrivateKeyTypes"): only a value that looks generated
        return None
    if quote is None:
        name = _normal_name(raw_name)
        if name[:1].islower() and _IDENTIFIER.fullmatch(value):
            return None  # code: token = response, token = Operator, dbPassword = userInput
        if value.isdigit() and not _DIGITS_NAME.search(name):
            return None  # MAX_TOKEN=4096
    return start, end


_IDENTIFIER = re.compile(r"[A-Za-z_]+")
_DIGITS_NAME = re.compile(r"(?i)pass|pwd|pw$|pin")  # names whose value may be all digits: a PIN, a passcode


ENV_RULE = Rule("env_secret", _find_assignments, gate=_NAME_GATE, checks_values=True)


# --- a secret-named table cell's value in the next cell, or in the cells of a secret-named column ------------

# A table row: a line with a "|" between cells (Markdown, psql, ASCII boxes), or a separator row (|---|:--|,
# psql's ---+---, a box's +---+), which ends a header. Cells are split in Python; the pattern only picks lines.
_TABLE_LINE = re.compile(r"^(?:[^\n|]*\|[^\n]*|[ \t]*[-+:| \t]*-{2,}[-+:| \t]*$)", re.MULTILINE)
_SEPARATOR_ROW = re.compile(r"[ \t]*[|+]?(?:[ \t]*:?-{2,}:?[ \t]*(?:\||\+|$))+[ \t]*\Z")
_CELL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_. -]{0,59}")
_CELL_DECORATION = " \t*`"
_WHITESPACE = re.compile(r"\s")  # bold or code marks around a name: **DB password**, `api_key`


@functools.lru_cache(maxsize=4096)
def _cell_strength(cell: str) -> str | None:
    """The strength of a cell read as a name (``SMTP password`` reads as SMTP_password), None if it is none."""
    name = cell.strip(_CELL_DECORATION)
    if not _CELL_NAME.fullmatch(name) or not _NAME_GATE_RE.search(name):
        return None
    return _name_strength(name.replace(" ", "_"))


def _cell_value(text: str, start: int, end: int, name: str, strength: str) -> tuple[int, int] | None:
    """The span of a cell's value when it is a secret, without its padding or one layer of backticks/quotes."""
    while start < end and text[start] in " \t":
        start += 1
    while end > start and text[end - 1] in " \t":
        end -= 1
    if end - start >= 2 and text[start] == text[end - 1] and text[start] in "`\"'":
        start, end = start + 1, end - 1
    if start == end or text.startswith("[REDACTED", start) or _WHITESPACE.search(text, start, end):
        return None  # empty, already removed, or words: "see the vault", "min 12 characters"
    return _assignment_value(text, name, strength, ":", start, end, None)


def _find_table_values(text: str) -> Iterator[tuple[int, int]]:
    """``| DB password | Xy7... |``: a cell naming a secret, then its value in the next cell of the row; and
    ``| user | password |`` over ``|---|---|``: the values of a secret-named column in the rows below."""
    columns: dict[int, tuple[str, str]] = {}  # column index -> (name, strength), from the header above
    header: tuple[int, int] | None = None  # the previous row, which a separator row makes the header
    last_line_end = -2
    for line in _TABLE_LINE.finditer(text):
        if line.start() != last_line_end + 1:
            columns, header = {}, None  # not the next line: a new table
        last_line_end = line.end()
        if "--" in line.group(0) and _SEPARATOR_ROW.match(line.group(0)):
            columns = _secret_columns(text, *header) if header is not None else {}
            continue
        header = line.span()
        if not columns and not _NAME_GATE_RE.search(text, line.start(), line.end()):
            continue  # no cell can name a secret, and no column does
        cells = _cells(text, line.start(), line.end())
        for i, (a, b) in enumerate(cells):
            if i + 1 < len(cells) and (strength := _cell_strength(text[a:b])) is not None:
                span = _cell_value(text, *cells[i + 1], text[a:b].strip(_CELL_DECORATION), strength)
            elif i in columns:
                span = _cell_value(text, a, b, *columns[i])
            else:
                continue
            if span is not None:
                yield span


def _secret_columns(text: str, start: int, end: int) -> dict[int, tuple[str, str]]:
    """The columns of a header row whose name is a secret's: index -> (name, strength)."""
    named = ((i, text[a:b].strip(_CELL_DECORATION)) for i, (a, b) in enumerate(_cells(text, start, end)))
    return {i: (name, strength) for i, name in named if (strength := _cell_strength(name)) is not None}


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The (start, end) of each cell of a table row: the text between its "|", without the outer empty ones."""
    bounds = [start - 1]
    while (bar := text.find("|", bounds[-1] + 1, end)) != -1:
        bounds.append(bar)
    bounds.append(end)
    cells = [(a + 1, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    if cells and not text[cells[0][0] : cells[0][1]].strip():
        cells = cells[1:]  # a leading "|"
    if cells and not text[cells[-1][0] : cells[-1][1]].strip():
        cells = cells[:-1]  # a trailing "|"
    return cells


TABLE_RULE = Rule("env_secret", _find_table_values, gate=("|",), checks_values=True, settles=True)


# --- other layouts of a name and its value ---------------------------------------------------------------

# A line that is only a name and a value, split by spaces: a config file's "requirepass X", a .netrc's
# "password X", a Dockerfile's ENV/ARG, csh's setenv. The value must look generated (a line of prose is words).
_SPACED_LINE = re.compile(
    r"^[ \t]*(?:(?:ENV|ARG|setenv|set|export)[ \t]+)?(?P<name>[A-Za-z][A-Za-z0-9_.-]{1,60})[ \t]+"
    r"(?!\[REDACTED)(?P<value>[^\s\"'`][^\s]{0,1023})[ \t]*$",
    re.MULTILINE,
)
# A .netrc entry on one line: machine HOST login USER password SECRET.
_NETRC_PASSWORD = re.compile(r"\blogin[ \t]+\S+[ \t]+(?:password|passwd)[ \t]+(?!\[REDACTED)(?P<value>\S+)")
# The element of a markup file: <password>X</password> (Maven's settings.xml, a SOAP body, a .NET config).
_ELEMENT = re.compile(r"<(?P<name>[A-Za-z][\w.:-]{0,60})>(?!\[REDACTED)(?P<value>[^<\n]{1,1024})</(?P=name)>")
# A name and a value as two fields of one record: Kubernetes' and ECS' env lists (- name: X / value: Y,
# {"name": "X", "value": "Y"}) and .NET's <add key="X" value="Y"/>.
_NAME_VALUE_FIELDS = re.compile(
    r"""(?<![\w-])(?:name|key|Name|Key)["']?[ \t]*[:=][ \t]*["']?(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,80})["']?"""
    r"""(?:[ \t]*,[ \t]*|[ \t]+|[ \t]*,?[ \t]*\r?\n[ \t]*)["']?(?:value|Value)["']?[ \t]*[:=][ \t]*"""
    r"""(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,1024}"|'[^'\n]{1,1024}'|[^\s"',}\]][^\s,}\]]{0,1023})"""
)

# A call that names a secret in its first argument and gives it in its second: define('DB_PASSWORD', 'X'),
# System.setProperty("db.password", "X"), os.getenv("API_TOKEN", "X"), os.environ.setdefault(...), ENV.fetch(...).
_NAMED_ARGUMENT = re.compile(
    r"""\([ \t]*["'](?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})["'][ \t]*,[ \t]*"""
    r"""(?!["']\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}')"""
)
# A call named for a secret, whose last argument is a literal: set_password("X"), .withPassword("X"),
# keyring.set_password("svc", "user", "X"), setApiKey('X').
_SECRET_CALL = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_]{0,60})\((?:[^()\n]{0,200}?,[ \t]*)?"""
    r"""(?!["']\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}')[ \t]*\)"""
)
_SETTER = re.compile(r"(?:set|with|use|put)_?(?=[A-Za-z])", re.IGNORECASE)
# A builder method that is only the secret's name: .password("X"), .apiKey("X"), .token("X").
_BUILDER_NAME = re.compile(r"(?i)password|passwd|passphrase|secret|token|api_?key|client_?secret|access_?token")
# A line of a .pgpass file: host:port:database:user:password (the port a number or *).
_PGPASS_LINE = re.compile(
    r"^[^:\s#]{1,253}:(?:[0-9]{1,5}|\*):[^:\s]{1,63}:[^:\s]{1,63}:(?!\[REDACTED)(?P<value>[^:\s]{1,256})[ \t]*$",
    re.MULTILINE,
)


def _named_value(m: re.Match, operator: str) -> tuple[int, int] | None:
    """The span of ``m``'s value group when ``m``'s name group names a secret. An element's text is a literal,
    like a quoted value: <password>correcthorse</password> is not code."""
    strength = _name_strength(m.group("name"))
    if strength is None:
        return None
    start, end = m.span("value")
    text = m.string
    quote = text[start] if text[start] in "\"'" else None
    if quote:
        start, end = start + 1, end - 1
    elif m.re is _ELEMENT:
        quote = "<"
    return _assignment_value(text, m.group("name"), strength, operator, start, end, quote)


def _call_value(m: re.Match, name: str) -> tuple[int, int] | None:
    """A call's literal argument when ``name`` names a secret and the literal looks generated (a call's
    arguments are as often labels and messages as values)."""
    strength = _name_strength(name)
    if strength is None:
        return None
    start, end = m.start("value") + 1, m.end("value") - 1
    value = m.string[start:end]
    if strength == "weak" and not (len(value) >= 8 and _has_digit_and_letter(value)):
        return None  # define('AUTH_KEY', ...) holds a secret; a generic *_KEY only a generated one
    return (start, end) if _looks_generated(value) and not kept_value(value) else None


def _setter_value(m: re.Match) -> tuple[int, int] | None:
    """The last literal argument of a setter or builder named for a secret; a getter's argument (get_secret("db"))
    names the secret instead of holding it."""
    function = m["name"]
    setter = _SETTER.match(function)
    if setter is not None:
        return _call_value(m, function[setter.end() :])
    return _call_value(m, function) if _BUILDER_NAME.fullmatch(function) else None


def _find_other_layouts(text: str) -> Iterator[tuple[int, int]]:
    spans = [
        span
        for pattern, operator in ((_SPACED_LINE, ":"), (_ELEMENT, "="), (_NAME_VALUE_FIELDS, "="))
        for m in pattern.finditer(text)
        if (span := _named_value(m, operator)) is not None
    ]
    spans += [span for m in _NAMED_ARGUMENT.finditer(text) if (span := _call_value(m, m["name"]))]
    spans += [span for m in _SECRET_CALL.finditer(text) if (span := _setter_value(m))]
    spans += [m.span("value") for m in _NETRC_PASSWORD.finditer(text) if not kept_value(m.group("value"))]
    yield from sorted(spans)


def _find_pgpass_passwords(text: str) -> Iterator[tuple[int, int]]:
    for m in _PGPASS_LINE.finditer(text):
        value = m.group("value")
        if _looks_generated(value) and not value.isdigit() and not kept_value(value):
            yield m.span("value")  # a word is more likely a message: main.c:10:5:warning:unused


LAYOUT_RULE = Rule("env_secret", _find_other_layouts, gate=_NAME_GATE, checks_values=True, settles=True)
PGPASS_RULE = Rule("env_secret", _find_pgpass_passwords, gate=(":",), checks_values=True, settles=True)


# --- HTTP credentials: an Authorization header of any scheme, and cookies ---------------------------------

# Authorization: Token X, ApiKey X, SSWS X, or a bare X (Bearer and Basic have their own rules, which run first).
_AUTHORIZATION = re.compile(
    r"""(?i:authorization)(?<![\w-]authorization)["']?[ \t]*[:=][ \t]*["']?"""
    r"""(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]{1,20})[ \t]+)?(?!\[REDACTED)(?P<token>[A-Za-z0-9._~+/=-]{16,})"""
)
# The cookies of a Cookie or Set-Cookie header, or of curl's -b/--cookie: "name=value; name=value".
_COOKIE_HEADER = re.compile(
    r"""(?:(?i:(?:set-)?cookie)(?<![\w-]cookie)(?<![\w-]set-cookie)[ \t]*:|(?<![\w-])(?:-b|--cookie)[ \t]+["']?)"""
    r"""(?P<cookies>[^\n"']{1,4096})"""
)
_COOKIE = re.compile(r"(?:^|;)[ \t]*(?P<name>[^=;\s]{1,128})=(?!\[REDACTED)(?P<value>[^;\s]{1,4096})")
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "samesite", "priority", "version", "comment"}


def _find_authorization(text: str) -> Iterator[tuple[int, int]]:
    for m in _AUTHORIZATION.finditer(text):
        scheme = (m.group("scheme") or "").lower()
        if scheme in ("bearer", "basic") or not _bearer_token(m):
            continue  # their own rules judge those; a short or all-lower-case word is not a credential
        yield m.span("token")


def _find_cookies(text: str) -> Iterator[tuple[int, int]]:
    """Every cookie value that looks generated: a session id or a token, not "en" or "dark"."""
    for header in _COOKIE_HEADER.finditer(text):
        offset = header.start("cookies")
        for cookie in _COOKIE.finditer(header.group("cookies")):
            if cookie.group("name").lower() in _COOKIE_ATTRIBUTES:
                continue
            value = cookie.group("value")
            if len(value) >= 12 and _has_digit_and_letter(value) and not kept_value(value):
                yield offset + cookie.start("value"), offset + cookie.end("value")


AUTHORIZATION_RULE = Rule("bearer", _find_authorization, gate=("authorization",), checks_values=True, settles=True)
COOKIE_RULE = Rule("bearer", _find_cookies, gate=("cookie", "-b"), checks_values=True, settles=True)


# --- a secret-named option's value in the next word or list element ---------------------------------------

# An option whose name ends in a secret word, with one or two dashes (keytool's -storepass too), at the start
# of a word, a quoted string or a list element. Its value is the next word (redis-server --requirepass X), the
# next element of a list (["--requirepass", "X"], [--requirepass, X]) or the next item of a YAML block list.
_SECRET_OPTION = re.compile(
    r"""-(?<![^\s"'\[,(]-)-?(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,60}?"""
    r"""(?i:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|key))(?![A-Za-z0-9_.-])"""
)
_OPTION_VALUE = re.compile(
    r"""(?P<sep>["']?[ \t]*,\s*|[ \t]+|\r?\n[ \t]*-[ \t]+)(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"',\[\]-][^\s"']{0,255})"""
)
_LIST_ITEM_START = re.compile(r"[ \t]*-[ \t]+[\"']?\Z")


def _find_option_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _SECRET_OPTION.finditer(text):
        strength = _name_strength(m.group("name"))
        if strength not in ("strong", "glued"):
            continue  # a generic *-key option (--sort-key) holds no secret
        quote = text[m.start() - 1] if m.start() > 0 and text[m.start() - 1] in "\"'" else ""
        if quote and not text.startswith(quote, m.end()):
            continue  # "--password-file" ... not a whole quoted option
        value = _OPTION_VALUE.match(text, m.end())
        if value is None or (quote and "," not in value.group("sep")):
            continue  # a quoted option is a list element: its value is the next element
        if "\n" in value.group("sep"):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not _LIST_ITEM_START.match(text[line_start : m.start()]):
                continue  # the next line is a list item, but the option was not one
        span = _option_value(value, in_list=bool(quote) or "," in value.group("sep"), glued=strength == "glued")
        if span is not None:
            yield span


def _option_value(m: re.Match, in_list: bool, glued: bool) -> tuple[int, int] | None:
    start, end = m.span("value")
    text = m.string
    if text[start] in "\"'":
        start, end = start + 1, end - 1
    elif in_list:
        while end > start and text[end - 1] in ",]":
            end -= 1  # [--requirepass, X]
    value = text[start:end]
    if not value or value.isdigit() or _EXPRESSION.match(value) or kept_value(value):
        return None
    if glued and not _looks_generated(value):
        return None  # --compass-like words: only a value that looks generated
    return start, end


OPTION_RULE = Rule("cli_secret", _find_option_values, gate=_NAME_GATE, checks_values=True, settles=True)


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
    if _example_domain(m.group(0)[1:].lower()):
        return None  # RFC 2606 names reach no one: user@example.com
    return start, m.end()


_EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost")


def _example_domain(domain: str) -> bool:
    return any(domain == d or domain.endswith("." + d) for d in _EXAMPLE_DOMAINS)


_DOC_NETS_V6 = (ipaddress.ip_network("2001:db8::/32"),)
# IPv4 addresses that identify no one, by their leading octets: loopback, link-local (169.254.169.254 is cloud
# metadata), netmasks (255.x) and the documentation networks. Compared as integers: an address is four numbers
# the pattern has already checked, and ipaddress' parser would cost more than the rest of the rule.
_KEPT_V4_FIRST = frozenset({127, 255})
_KEPT_V4_NETS = frozenset({(169, 254, n) for n in range(256)} | {(192, 0, 2), (198, 51, 100), (203, 0, 113)})
_VERSION_CONTEXT = re.compile(r"(?i)(?:version|ver|release|build|rev|v|==|>=|<=|~=|!=|\^|~)[ \t]*[:=]?[ \t]*\Z")
_VERSION_CONTEXT_LAST = frozenset("nNrReEdDvV=^~:")  # the last character of every _VERSION_CONTEXT


def _walk_back(text: str, end: int, chars, limit: int) -> int:
    start = end
    while start > end - limit and start > 0 and text[start - 1] in chars:
        start -= 1
    return start


_DIGITS = "0123456789"
_HEXCHARS = "0123456789abcdefABCDEF"


def _ipv4(m: re.Match) -> tuple[int, int] | None:
    # The match starts at the first dot: the first octet comes before it (the pattern checked the other three).
    text = m.string
    start = _walk_back(text, m.start(), _DIGITS, 3)
    if start == m.start() or (start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.[]")):
        return None
    first = text[start : m.start()]
    if int(first) > 255 or (len(first) > 1 and first[0] == "0"):
        return None  # not an address: 300.1.2.3, 010.1.2.3
    octets = (int(first), *map(int, m.group(0)[1:].split(".")))
    if octets[3] == 0 or octets[0] in _KEPT_V4_FIRST or octets[:3] in _KEPT_V4_NETS:
        return None  # network addresses, and the kept ranges above
    if m.end() - start == 7:
        return None  # version-shaped: 1.2.3.4
    window = max(0, start - 24)
    before = text[window:start].rstrip(" \t")
    if before and before[-1] in _VERSION_CONTEXT_LAST and _VERSION_CONTEXT.search(text, window, start):
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
    address_part = candidate.split("%", 1)[0]
    groups = [g for g in address_part.split(":") if g]
    if len(groups) < 2 or max(len(g) for g in groups) < 3 or not _has_digit(candidate):
        return None  # a[100::2], dead::beef
    try:
        address = ipaddress.IPv6Address(address_part)
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified or any(address in net for net in _DOC_NETS_V6):
        return None
    return start, m.end()


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


# Roots under which a home folder sits: WSL's view of Windows, Fedora Silverblue, macOS' data volume.
_HOME_ROOT = re.compile(r"(?:^|[^\w.~\[\]/-])(?:/mnt/[A-Za-z]|/var|/System/Volumes/Data|/private/var)\Z")
_PATH_CHARS = frozenset(string.ascii_letters + string.digits + "_.~[]-/")


def _home_user(m: re.Match) -> tuple[int, int] | None:
    """The user of /home/USER, /Users/USER, and of the same under /mnt/c, /var or a macOS volume."""
    text, start = m.string, m.start()
    under_root = False
    if start > 0 and text[start - 1] in _PATH_CHARS:
        under_root = _HOME_ROOT.search(text, max(0, start - 24), start) is not None
        if not under_root:
            return None  # part of a longer path or a URL: github.com/users/x
    if m.group("dir") == "users" and not under_root:
        return None  # lower-case /users/ only where Windows' folder shows through (/mnt/c/users/)
    return m.span("user") if _personal_user(m) else None


# A shell prompt at the start of a line: "priya@devbox:~$", "(venv) priya@devbox:/srv$", "[priya@web-01 app]$".
_PROMPT = re.compile(
    r"^[ \t]*(?:\([\w.-]{1,40}\)[ \t]*)?\[?(?P<user>[A-Za-z_][A-Za-z0-9_.-]{0,31})@[A-Za-z0-9][A-Za-z0-9.-]{0,62}"
    r"(?::(?:~|/)[^\s$#%@:]{0,200}|[ \t]+[^\s\]@:]{1,200}\])[$#%](?=[ \t]|\r?\n|\Z)",
    re.MULTILINE,
)


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
    Rule("user_name", _finder(_PROMPT, _group("user", _personal_user)), gate=("@",)),
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
                r"/(?P<dir>home|Users|users)/(?P<user>(?!(?:Shared|Public|Default)(?![\w.-]))[A-Za-z0-9._-]{1,64})"
                r"(?![\[\]A-Za-z0-9._-])"
            ),
            _home_user,
        ),
        gate=("/home/", "/users/"),
    ),
    Rule(
        "home_path",
        _finder(
            re.compile(
                r"users(?<=[a-z]:\\users|[a-z]:/users|:\\\\users)(?:\\{1,2}|/)"
                r"(?P<user>(?!(?:Public|Default|All Users)(?![\w.-]))[A-Za-z0-9._-]{1,64})(?![A-Za-z0-9._-])",
                re.IGNORECASE,
            ),
            _group("user", _personal_user),
        ),
        gate=("users",),
    ),
    Rule("iban", scrub_pii.find_ibans),
    Rule("card", scrub_pii.find_cards),
    Rule("ssn", scrub_pii.find_ssns, gate=("-",)),
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
    Rule("phone", scrub_pii.find_national_phones, gate=("0",)),
)

_SECRET_KIND_SET = frozenset(SECRET_KINDS)


@dataclass(frozen=True)
class _RuleSets:
    catalogue_rows: tuple[scrub_catalogue.Row, ...]
    catalogue: tuple[Rule, ...]
    rules: tuple[Rule, ...]
    leak: tuple[Rule, ...]
    gates: scrub_catalogue.KeywordIndex


@functools.cache
def _rule_sets() -> _RuleSets:
    """Every rule, built on first use: reading the catalogue and compiling its gate is the costly part of import."""
    rows = scrub_catalogue.rows()
    catalogue = tuple(Rule(r.kind, r.find, r.keywords, checks_values=True) for r in rows)
    layouts = (ENV_RULE, TABLE_RULE, LAYOUT_RULE, PGPASS_RULE, OPTION_RULE, AUTHORIZATION_RULE, COOKIE_RULE)
    rules = SECRET_RULES + catalogue + layouts + PII_RULES
    leak = tuple(r for r in SECRET_RULES if r.kind in LEAK_KINDS) + tuple(
        rule for rule, row in zip(catalogue, rows, strict=True) if not row.named
    )
    gates = scrub_catalogue.KeywordIndex((g for rule in rules for g in rule.gate), skip=PLACEHOLDER_LOWER)
    return _RuleSets(rows, catalogue, rules, leak, gates)


def warm() -> None:
    """Build every rule, compile every pattern and import the validators now rather than on the first scrub.

    The first scrub of a process otherwise pays this once (reading the catalogue, compiling ~250 patterns);
    a host can call this where a delay is free, e.g. in a background thread at start-up.
    """
    for row in _rule_sets().catalogue_rows:
        _ = row.pattern
    scrub_pii.warm()
    scrub("warm 07700 900123 4111 1111 1111 1111 DE00 0000 0000 0000 0000 00 123-45-6789")


_LAZY = {
    "CATALOGUE_ROWS": "catalogue_rows",
    "CATALOGUE_RULES": "catalogue",
    "RULES": "rules",
    "LEAK_RULES": "leak",
}


def __getattr__(name: str):
    """RULES, LEAK_RULES, CATALOGUE_RULES and CATALOGUE_ROWS, built on first access."""
    if name in _LAZY:
        return getattr(_rule_sets(), _LAZY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- public API ----------------------------------------------------------------------------------------


def _apply(text: str, rules: tuple[Rule, ...], passes: int = 1) -> Scrubbed:
    """``text`` with ``rules`` applied in order, for up to ``passes`` passes over them.

    A rule runs again only when the text has changed since it last ran: the rules after the last one that
    replaced something have already seen the final text. The gate keywords are looked for once: outside
    placeholders, text only ever loses keywords (each stretch between placeholders is a stretch of the text
    before), so the first look is a superset for every later text.
    """
    removed: dict[str, int] = {}
    first_lower = text.lower()
    present = _rule_sets().gates.present(first_lower)
    lower: str | None = first_lower
    quiet = 0  # rules in a row that have run on the current text and found nothing
    for i in range(len(rules) * passes):
        if quiet == len(rules):
            break
        rule = rules[i % len(rules)]
        quiet += 1
        if rule.gate and present.isdisjoint(rule.gate):
            continue
        if lower is not None:
            scrub_catalogue.remember_lower(text, lower)
        spans = _kept_spans(text, rule)
        if spans:
            text, lower = _replace(text, lower, spans, placeholder(rule.kind))
            removed[rule.kind] = removed.get(rule.kind, 0) + len(spans)
            quiet = 1 if rule.settles else 0  # whether this rule has, in effect, seen the new text
    return Scrubbed(text, removed)


def _kept_spans(text: str, rule: Rule) -> list[tuple[int, int]]:
    """The rule's spans, left to right, without overlaps and without placeholders or references."""
    spans: list[tuple[int, int]] = []
    last = 0
    check = rule.kind in _SECRET_KIND_SET and not rule.checks_values
    for start, end in rule.find(text):
        if start < last or (check and kept_value(text[start:end])):
            continue
        spans.append((start, end))
        last = end
    return spans


def _replace(text: str, lower: str | None, spans: list[tuple[int, int]], mark: str) -> tuple[str, str | None]:
    """``text`` with each span replaced by ``mark``, and its lower case kept in step (so it isn't recomputed)."""
    new_text = _join(text, spans, mark)
    if lower is None or len(lower) != len(text):
        return new_text, None  # lower-casing changed the length: positions don't line up, recompute when needed
    return new_text, _join(lower, spans, mark.lower())


def _join(text: str, spans: list[tuple[int, int]], mark: str) -> str:
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces += (text[last:start], mark)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


MAX_PASSES = 4


def scrub(text: str) -> Scrubbed:
    """The text with every secret and PII match replaced by a typed placeholder, and counts per kind.

    A replacement can change what its neighbours see (``/home/0/home/0``: the second path only starts a path
    once the first user name is gone), so rules run again until every rule has seen the final text and found
    nothing there. That makes scrubbing idempotent; text with nothing to remove costs a single pass.
    """
    if not text:
        return Scrubbed(text or "", {})
    return _apply(text, _rule_sets().rules, passes=MAX_PASSES)


def scrub_cut(text: str, limit: int, mark: str = "…") -> str:
    """``text`` scrubbed, then cut to at most ``limit`` characters, never inside a placeholder.

    Redaction comes first: cutting first can split a token so that no rule recognises the part that is left.
    """
    clean = scrub(text).text
    if len(clean) <= limit:
        return clean
    cut = max(0, limit - len(mark))
    opening = clean.rfind("[", 0, cut)
    if opening != -1 and clean.find("]", opening) >= cut:
        cut = opening  # the cut would fall inside a placeholder: cut before it
    return clean[:cut] + mark


def find_leaks(text: str) -> dict[str, int]:
    """Secrets of a known format still present in ``text`` (what the audit stage fails on)."""
    return _apply(text, _rule_sets().leak).removed if text else {}


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
    ("user_name", "user name", "user names"),
    ("card", "card number", "card numbers"),
    ("iban", "IBAN", "IBANs"),
    ("ssn", "SSN", "SSNs"),
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
