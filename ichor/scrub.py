"""The scrubber: removes secrets and PII from text before anything is stored.

Each rule finds spans with a linear-time regular expression plus, where a shape alone is ambiguous, a small
check of the match and its neighbourhood. Patterns start at a literal anchor where they can ("sk-", "@", "://",
the first dot of an IPv4 address) with the word boundary checked by a fixed-width lookbehind after it, so the
regex engine jumps between anchors instead of trying every position; every nested repeat is bounded or
unambiguous, so backtracking stays bounded per anchor. The whole text is always scrubbed; nothing is cut.

Three sources of rules run in order: ichor's own format rules, the provider formats of the gitleaks catalogue
(``ichor.scrub_catalogue``, data in ``ichor/data/scrub_catalogue.toml``), then ichor's own logic for named
assignments (``ichor.scrub_names``), the other layouts of a name and its value (``ichor.scrub_layouts``: tables,
options, markup, HTTP headers...), command lines, key blocks, home paths and PII (numbers checked by
``ichor.scrub_pii``'s validators).
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

import bisect
import functools
import itertools
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from . import scrub_catalogue, scrub_pii
from .scrub_layouts import (
    find_authorization,
    find_cookies,
    find_option_values,
    find_other_layouts,
    find_pgpass_passwords,
    find_stdin_secrets,
    find_table_values,
    find_url_token_users,
)
from .scrub_names import NAME_GATE, USERINFO_GATE, find_assignments, is_expression
from .scrub_statements import GATE as statement_gate
from .scrub_statements import find_statement_secrets
from .scrub_values import decodes_to_credentials, has_digit, kept_value, looks_like_credential

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
    return looks_like_credential(m.group("token"))


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
    return decodes_to_credentials(m.group("token"))


# An option's value: quoted, or a word that does not start like another option or a placeholder.
_SECRET_WORD = r"""(?!["']?\[REDACTED)(?:"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"'-][^\s"']{0,255})"""
# curl -u user:password, --user=user:password, the password alone quoted or not (the user stays);
# -u may end a cluster of curl's switches (-su, -kLu)
_CLI_USER = re.compile(
    r"""-(?<![\w-]-)(?:[sSfkLvi]{0,3}u|-user)(?:=|[ \t]+)["']?[^\s:"'@]{1,64}:"""
    r"""(?P<q>["']?)(?!\[REDACTED)(?P<secret>[^\s"']{1,256})(?P=q)"""
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
    r"(?:twine|sshpass|(?:docker|podman|nerdctl|buildah|skopeo|az|oc|cf)NEXTlogin|helmNEXTregistryNEXTlogin|"
    r"smbclient|mongosh|mongo)\b".replace("NEXT", _NEXT_WORD)
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
        if value and not value.isdigit() and not is_expression(value):
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
    Rule("slack_token", _finder(_after_boundary("xox", r"[abposr]-[A-Za-z0-9-]{10,}"), _whole(has_digit))),
    Rule("slack_token", _finder(_after_boundary("xapp-", r"[A-Za-z0-9-]{10,}"), _whole(has_digit))),
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
            "su ",
            "ku ",
            "lu ",
            "fu ",
            "vu ",
            "iu ",
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


# --- the finders of names and their values (ichor.scrub_names, ichor.scrub_layouts) as rules -------------

ENV_RULE = Rule("env_secret", find_assignments, gate=NAME_GATE + USERINFO_GATE, checks_values=True)
TABLE_RULE = Rule("env_secret", find_table_values, gate=("|",), checks_values=True, settles=True)
LAYOUT_RULE = Rule("env_secret", find_other_layouts, gate=NAME_GATE, checks_values=True, settles=True)
PGPASS_RULE = Rule("env_secret", find_pgpass_passwords, gate=(":",), checks_values=True, settles=True)
AUTHORIZATION_RULE = Rule("bearer", find_authorization, gate=("authorization",), checks_values=True, settles=True)
COOKIE_RULE = Rule("bearer", find_cookies, gate=("cookie", "-b"), checks_values=True, settles=True)
URL_USER_RULE = Rule("url_password", find_url_token_users, gate=("://",), checks_values=True, settles=True)
STDIN_RULE = Rule("cli_secret", find_stdin_secrets, gate=("--password-stdin",), checks_values=True, settles=True)
OPTION_RULE = Rule("cli_secret", find_option_values, gate=NAME_GATE, checks_values=True, settles=True)
STATEMENT_RULE = Rule(
    "env_secret",
    find_statement_secrets,
    gate=statement_gate,
    checks_values=True,
    settles=True,
)


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
    if not local or len(local) > 64 or not local[0].isalnum() or (start > 0 and text[start - 1] in "[]${"):
        return None  # a placeholder's edge, or a variable before an "@": $CI_JOB_TOKEN@gitlab.com, ${USER}@host
    if local.lower() == "git" or m.group(0).rsplit(".", 1)[1].lower() in _FILE_SUFFIXES:
        return None  # git@github.com:org/repo, icon@2x.png
    if text.endswith("://", 0, start):
        return None  # https://user@host: URL user info, not a mailbox
    if _example_domain(m.group(0)[1:].lower()):
        return None  # RFC 2606 names reach no one: user@example.com
    if local.lower().split("+", 1)[0] in _ROLE_MAILBOXES:
        return None  # a role's mailbox, not a person's: support@github.com, noreply@vendor.io
    return start, m.end()


# Mailboxes that a role answers, not a person: an organisation publishes them (RFC 2142's support, abuse,
# postmaster...), bots write from them (Dependabot's support@github.com), and they identify no one.
_ROLE_MAILBOXES = frozenset(
    {
        "support",
        "noreply",
        "no-reply",
        "no_reply",
        "donotreply",
        "do-not-reply",
        "do_not_reply",
        "notifications",
        "notification",
        "notify",
        "mailer-daemon",
        "postmaster",
        "hostmaster",
        "webmaster",
        "abuse",
        "security",
        "info",
        "help",
        "helpdesk",
        "sales",
        "billing",
        "privacy",
        "legal",
        "press",
        "careers",
        "jobs",
        "feedback",
        "contact",
        "hello",
        "bounce",
        "bounces",
    }
)


_EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost")


def _example_domain(domain: str) -> bool:
    return any(domain == d or domain.endswith("." + d) for d in _EXAMPLE_DOMAINS)


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
    if len(groups) < 2 or max(len(g) for g in groups) < 3 or not has_digit(candidate):
        return None  # a[100::2], dead::beef
    values = _ipv6_groups(address_part)
    if values is None or not any(values) or values == _LOOPBACK_V6 or values[:2] == _DOC_PREFIX_V6:
        return None  # not an address; unspecified, loopback, documentation (2001:db8::/32)
    return start, m.end()


_LOOPBACK_V6 = [0] * 7 + [1]
_DOC_PREFIX_V6 = [0x2001, 0xDB8]


def _ipv6_groups(address: str) -> list[int] | None:
    """The eight 16-bit groups of an IPv6 address written in hex groups (RFC 4291 text form, "::" at most once),
    None if it is not one. By hand: ipaddress' parser cost more than the rest of the rule."""
    head, double, tail = address.partition("::")
    if "::" in tail:
        return None
    left, right = head.split(":") if head else [], tail.split(":") if tail else []
    if not all(1 <= len(g) <= 4 for g in left + right) or len(left) + len(right) > (7 if double else 8):
        return None
    if not double and len(left) != 8:
        return None
    missing = 8 - len(left) - len(right)
    return [int(g, 16) for g in left] + [0] * missing + [int(g, 16) for g in right]


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


# A shell prompt at the start of a line: "priya@devbox:~$", "(venv) priya@devbox:/srv$", "[priya@web-01 app]$",
# zsh's "priya@MacBook-Pro ~ %" and "priya@devbox api %" (zsh shows the folder's last part, not a path).
_PROMPT = re.compile(
    r"^[ \t]*(?:\([\w.-]{1,40}\)[ \t]*)?\[?(?P<user>[A-Za-z_][A-Za-z0-9_.-]{0,31})@[A-Za-z0-9][A-Za-z0-9.-]{0,62}"
    r"(?::(?:~|/)[^\s$#%@:]{0,200}|[ \t]+[^\s\]@:]{1,200}\]|[ \t]+[~/][^\s$#%@:]{0,200}[ \t]+|"
    r"[ \t]+[\w.-]{1,64}[ \t]+(?=%))"
    r"[$#%](?=[ \t]|\r?\n|\Z)",
    re.MULTILINE,
)


_EMAIL = re.compile(
    r"@(?<=[A-Za-z0-9._%+-]@)[A-Za-z0-9][A-Za-z0-9-]{0,62}"
    r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![\[\]A-Za-z0-9-])"
)
_HOME = re.compile(
    r"/(?P<dir>home|Users|users)/(?P<user>(?!(?:Shared|Public|Default)(?![\w.-]))[A-Za-z0-9._-]{1,64})"
    r"(?![\[\]A-Za-z0-9._-])"
)
_WINDOWS_HOME = re.compile(
    r"users(?<=[a-z]:\\users|[a-z]:/users|:\\\\users)(?:\\{1,2}|/)"
    r"(?P<user>(?!(?:Public|Default|All Users)(?![\w.-]))[A-Za-z0-9._-]{1,64})(?![A-Za-z0-9._-])",
    re.IGNORECASE,
)
# ~priya/bin: a user's home folder by the shell's tilde (~/ alone names no one).
_TILDE_HOME = re.compile(r"~(?<![\w~\[\]]~)(?P<user>[a-z_][a-z0-9_.-]{0,31})(?=/)")
_PROMPT_USER = _WINDOWS_HOME_USER = _TILDE_HOME_USER = _group("user", _personal_user)

# A user name learned from a home path or a prompt names the same person wherever else it stands in the text:
# systemd's User=priya beside /home/priya, the host of priya@priya-MacBook-Pro, "sudo -u priya". Every whole-word
# occurrence goes (any case; not inside a longer word or a placeholder), the path's and the prompt's too, so that
# the prompt rule need not read a host that has already lost its name. A name inside an e-mail address is left to
# the e-mail rule. Names shorter than three characters and stock or service accounts are not learned: they are
# words too often (dev, git, build), and a service account names no one.
_USER_SOURCES = (
    (_PROMPT, _PROMPT_USER),
    (_HOME, _home_user),
    (_WINDOWS_HOME, _WINDOWS_HOME_USER),
    (_TILDE_HOME, _TILDE_HOME_USER),
)
_LEARNED_GATE = ("@", "/home/", "/users/", "users", "~")
# The spans each source pattern gives on the last text scanned: the learned-user rule scans every source, and
# the prompt and home rules after it scan the same text again with the same pattern and check (a text the
# learned-user rule left unchanged). A pure function of the text, kept for one text at a time.
_SOURCE_SPANS: tuple[str | None, dict[re.Pattern, list[tuple[int, int]]]] = (None, {})


def _source_spans(text: str, pattern: re.Pattern, check: Check) -> list[tuple[int, int]]:
    global _SOURCE_SPANS
    cached_text, spans_of = _SOURCE_SPANS
    if cached_text is not text:
        spans_of = {}
        _SOURCE_SPANS = (text, spans_of)
    spans = spans_of.get(pattern)
    if spans is None:
        spans = [span for m in pattern.finditer(text) if (span := check(m)) is not None]
        spans_of[pattern] = spans
    return spans


def _source_finder(pattern: re.Pattern, check: Check) -> Finder:
    """``_finder(pattern, check)``, sharing its scan with the learned-user rule's."""
    return lambda text: iter(_source_spans(text, pattern, check))


_NOT_LEARNED = frozenset(
    {
        "dev",
        "developer",
        "test",
        "tester",
        "build",
        "builder",
        "deploy",
        "deployer",
        "git",
        "docker",
        "postgres",
        "mysql",
        "redis",
        "jenkins",
        "gitlab",
        "github",
        "www",
        "www-data",
        "web",
        "data",
        "server",
        "service",
        "worker",
        "backup",
        "daemon",
        "nobody",
        "oracle",
        "mail",
        "ftp",
        "shared",
        "public",
        "default",
        "local",
        "home",
        "work",
        "code",
        "projects",
        "src",
        "tmp",
        "bin",
        "lib",
        "opt",
        "etc",
        "var",
    }
)
_MAX_LEARNED = 16


def _find_learned_users(text: str) -> Iterator[tuple[int, int]]:
    sources: set[tuple[int, int]] = set()
    names: set[str] = set()
    for pattern, check in _USER_SOURCES:
        for span in _source_spans(text, pattern, check):
            if span[1] - span[0] < 3:
                continue
            name = text[span[0] : span[1]].lower()
            if name in _NOT_LEARNED or name in _GENERIC_USERS:
                continue
            sources.add(span)
            if len(names) < _MAX_LEARNED:
                names.add(name)
    if not names:
        return
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    spans = []
    bare = False
    for m in re.finditer(rf"(?<![\w\[\]])(?:{alternatives})(?![\w\[\]])", text, re.IGNORECASE):
        if m.span() in sources:
            spans.append(m.span())
            continue
        after = m.end()
        while after < len(text) and text[after] in _LOCAL_CHARS:
            after += 1
        if after < len(text) and text[after] == "@":
            continue  # in an e-mail address: the e-mail rule takes all of it
        spans.append(m.span())
        bare = True
    if bare:
        yield from spans


def _phone_digits(m: re.Match) -> tuple[int, int] | None:
    digits = "".join(c for c in m.group(0) if c.isdigit())
    if not 8 <= len(digits) <= 15 or _test_number(digits):
        return None
    return m.span()


# Published test numbers reach no one, like the payment processors' test cards: Twilio's magic numbers
# (+1 500 555 0000 to 0009: its test credentials accept only these).
_TEST_NUMBERS = re.compile(r"1?500555000[0-9]")


def _test_number(digits: str) -> bool:
    return _TEST_NUMBERS.fullmatch(digits) is not None


def _north_american(m: re.Match) -> tuple[int, int] | None:
    text, start = m.string, m.start()
    leading_one = start >= 2 and text[start - 1] in " .-" and text[start - 2] == "1"
    if leading_one and (start < 3 or not text[start - 3].isalnum()):
        start -= 2  # 1-800-555-0100
    elif start > 0 and text[start - 1] in ".-" and start > 1 and text[start - 2].isdigit():
        return None  # part of a longer dotted or dashed number
    if _test_number("".join(c for c in text[start : m.end()] if c.isdigit())):
        return None
    return start, m.end()


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PHONE_END = r"(?![\w\[\]]|[.-][0-9])"

PII_RULES: tuple[Rule, ...] = (
    Rule("user_name", _find_learned_users, gate=_LEARNED_GATE),
    Rule("user_name", _source_finder(_PROMPT, _PROMPT_USER), gate=("@",)),
    Rule("email", _finder(_EMAIL, _email), gate=("@",)),
    Rule("home_path", _source_finder(_HOME, _home_user), gate=("/home/", "/users/")),
    Rule("home_path", _source_finder(_WINDOWS_HOME, _WINDOWS_HOME_USER), gate=("users",)),
    Rule("home_path", _source_finder(_TILDE_HOME, _TILDE_HOME_USER), gate=("~",)),
    Rule("iban", scrub_pii.find_ibans),
    Rule("card", scrub_pii.find_cards),
    Rule("ssn", scrub_pii.find_ssns, gate=("-",)),
    Rule("ssn", scrub_pii.find_labelled_ssns, gate=scrub_pii.SSN_LABEL_GATE),
    Rule("ip", _finder(re.compile(rf"\.(?<=[0-9]\.){_OCTET}\.{_OCTET}\.{_OCTET}(?![\w\[\]]|\.[0-9])"), _ipv4)),
    Rule("ip", _finder(re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:]{0,36}(?:%[A-Za-z0-9]{1,15})?"), _ipv6)),
    Rule(
        "phone",
        _finder(
            re.compile(
                r"\+(?<![\w+\[\]]\+)[0-9]{1,3}(?:[ -]?\([0-9]{1,4}\)[0-9]{0,4})?(?:[ -][0-9]{1,12}){1,5}" + _PHONE_END
            ),
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
    Rule("phone", scrub_pii.find_labelled_phones, gate=scrub_pii.PHONE_LABEL_GATE),
    Rule("phone", scrub_pii.find_phone_columns, gate=scrub_pii.PHONE_COLUMN_GATE),
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
    layouts = (
        ENV_RULE,
        TABLE_RULE,
        LAYOUT_RULE,
        STATEMENT_RULE,
        PGPASS_RULE,
        OPTION_RULE,
        STDIN_RULE,
        AUTHORIZATION_RULE,
        COOKIE_RULE,
        URL_USER_RULE,
    )
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
