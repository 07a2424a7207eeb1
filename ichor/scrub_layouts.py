"""Secrets whose name and value sit in a layout other than an assignment.

Table cells and columns, a line of a name and one value (a config file, a .netrc, a Dockerfile's ENV), markup
elements, a record's name and value fields (Kubernetes env lists), calls that name a secret and give it, .pgpass
lines, HTTP Authorization headers and cookies, and an option's value as the next word or list element. Each
finder yields the spans of values to remove, left to right; ``ichor.scrub`` turns them into rules. Names are
judged by ``ichor.scrub_names``, values by the same checks as an assignment's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from .scrub_names import NAME_GATE_RE, assignment_value, is_expression, name_strength
from .scrub_values import has_digit_and_letter, kept_value, looks_generated, looks_like_credential, looks_random

# --- a secret-named table cell's value in the next cell, or in the cells of a secret-named column ------------

# A table row: a line with a "|" between cells (Markdown, psql, ASCII boxes), or a separator row (|---|:--|,
# psql's ---+---, a box's +---+), which ends a header. Cells are split in Python; the pattern only picks lines.
_TABLE_LINE = re.compile(r"^(?:[^\n|]*\|[^\n]*|[ \t]*[-+:| \t]*-{2,}[-+:| \t]*$)", re.MULTILINE)
_SEPARATOR_ROW = re.compile(r"[ \t]*[|+]?(?:[ \t]*:?-{2,}:?[ \t]*(?:\||\+|$))+[ \t]*\Z")
_CELL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_. -]{0,59}")
_CELL_DECORATION = " \t*`"  # padding, and bold or code marks around a name: **DB password**, `api_key`
_WHITESPACE = re.compile(r"\s")


@functools.lru_cache(maxsize=4096)
def _cell_strength(cell: str) -> str | None:
    """The strength of a cell read as a name (``SMTP password`` reads as SMTP_password), None if it is none."""
    name = cell.strip(_CELL_DECORATION)
    if not _CELL_NAME.fullmatch(name) or not NAME_GATE_RE.search(name):
        return None
    return name_strength(name.replace(" ", "_"))


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
    if not looks_random(text[start:end]):
        return None  # | Secret | kubernetes.io/tls |: a type, a path, a word
    return assignment_value(text, name, strength, ":", start, end, None)


def find_table_values(text: str) -> Iterator[tuple[int, int]]:
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
        if not columns and not NAME_GATE_RE.search(text, line.start(), line.end()):
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


# --- other layouts of a name and its value ---------------------------------------------------------------

# A line that is only a name and a value, split by spaces: a config file's "requirepass X", a .netrc's
# "password X", a Dockerfile's ENV/ARG, csh's setenv. The value must look generated (a line of prose is words).
_SPACED_LINE = re.compile(
    r"^[ \t]*(?:(?:ENV|ARG|setenv|set|export)[ \t]+)?(?P<name>[A-Za-z][A-Za-z0-9_.-]{1,60})[ \t]+"
    r"(?!\[REDACTED)(?P<value>[^\s\"'`][^\s]{0,1023})[ \t]*$",
    re.MULTILINE,
)
# A .netrc entry on one line: machine HOST login USER password SECRET.
_NETRC_PASSWORD = re.compile(
    r"login(?<![\w]login)[ \t]+\S+[ \t]+(?:password|passwd)[ \t]+(?!\[REDACTED)(?P<value>\S+)"
)
# The element of a markup file: <password>X</password> (Maven's settings.xml, a SOAP body, a .NET config).
_ELEMENT = re.compile(r"<(?P<name>[A-Za-z][\w.:-]{0,60})>(?!\[REDACTED)(?P<value>[^<\n]{1,1024})</(?P=name)>")
# An element whose name attribute names the secret: <param name="token">X</param>, <entry key="password">X</entry>.
_NAMED_ELEMENT = re.compile(
    r"""<(?P<tag>[A-Za-z][\w.:-]{0,60})[ \t][^<>\n]{0,200}?(?:name|key)="""
    r"""["'](?P<name>[A-Za-z][A-Za-z0-9_.-]{0,80})["']"""
    r"""[^<>\n]{0,200}?>(?!\[REDACTED)(?P<value>[^<\n]{1,1024})</(?P=tag)>"""
)
# A name and a value as two fields of one record: Kubernetes' and ECS' env lists (- name: X / value: Y,
# {"name": "X", "value": "Y"}) and .NET's <add key="X" value="Y"/>.
_NAME_VALUE_FIELDS = re.compile(
    r"""[nNkK](?<![\w-][nNkK])(?:(?<=[nN])ame|(?<=[kK])ey)["']?[ \t]*[:=][ \t]*["']?"""
    r"""(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,80})["']?"""
    r"""(?:[ \t]*,[ \t]*|[ \t]+|[ \t]*,?[ \t]*\r?\n[ \t]*)["']?(?:value|Value)["']?[ \t]*[:=][ \t]*"""
    r"""(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,1024}"|'[^'\n]{1,1024}'|[^\s"',}\]][^\s,}\]]{0,1023})"""
)

# A call that names a secret in its first argument and gives it in its second: define('DB_PASSWORD', 'X'),
# System.setProperty("db.password", "X"), os.getenv("API_TOKEN", "X"), os.environ.setdefault(...), ENV.fetch(...),
# s.cookies.set('__Secure-next-auth.session-token', 'X'). The value can run to a session cookie's 4 KB and more.
_NAMED_ARGUMENT = re.compile(
    r"""\([ \t]*["'](?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})["'][ \t]*,[ \t]*"""
    r"""(?!["']\[REDACTED)(?P<value>"[^"\n]{1,8192}"|'[^'\n]{1,8192}')"""
)
# A call named for a secret, whose last argument is a literal: set_password("X"), .withPassword("X"),
# keyring.set_password("svc", "user", "X"), setApiKey('X').
_SECRET_CALL = re.compile(
    r"""\((?<=[A-Za-z0-9_]\()(?:[^()\n]{0,200}?,[ \t]*)?"""
    r"""(?!["']\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}')[ \t]*\)"""
)
_FUNCTION_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{0,60}\Z")  # the name before a call's "("
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
    strength = name_strength(m.group("name"))
    if strength is None:
        return None
    start, end = m.span("value")
    text = m.string
    quote = text[start] if text[start] in "\"'" else None
    if quote:
        start, end = start + 1, end - 1
    elif m.re is _ELEMENT or m.re is _NAMED_ELEMENT:
        quote = "<"
    elif m.re is _SPACED_LINE and not looks_random(text[start:end]):
        return None  # "secret kubernetes.io/tls", "token not-set": words, not a value
    return assignment_value(text, m.group("name"), strength, operator, start, end, quote)


def _call_value(m: re.Match, name: str) -> tuple[int, int] | None:
    """A call's literal argument when ``name`` names a secret and the literal looks generated (a call's
    arguments are as often labels and messages as values)."""
    strength = name_strength(name)
    if strength is None:
        return None
    start, end = m.start("value") + 1, m.end("value") - 1
    value = m.string[start:end]
    if strength == "weak" and not (len(value) >= 8 and has_digit_and_letter(value)):
        return None  # define('AUTH_KEY', ...) holds a secret; a generic *_KEY only a generated one
    return (start, end) if looks_random(value) and not kept_value(value) else None


def _setter_value(m: re.Match) -> tuple[int, int] | None:
    """The last literal argument of a setter or builder named for a secret; a getter's argument (get_secret("db"))
    names the secret instead of holding it."""
    name = _FUNCTION_NAME.search(m.string, max(0, m.start() - 61), m.start())
    if name is None:
        return None
    function = name.group(0)
    setter = _SETTER.match(function)
    if setter is not None:
        return _call_value(m, function[setter.end() :])
    return _call_value(m, function) if _BUILDER_NAME.fullmatch(function) else None


def find_other_layouts(text: str) -> Iterator[tuple[int, int]]:
    spans = [
        span
        for pattern, operator in (
            (_SPACED_LINE, ":"),
            (_ELEMENT, "="),
            (_NAMED_ELEMENT, "="),
            (_NAME_VALUE_FIELDS, "="),
        )
        for m in pattern.finditer(text)
        if (span := _named_value(m, operator)) is not None
    ]
    spans += [span for m in _NAMED_ARGUMENT.finditer(text) if (span := _call_value(m, m["name"]))]
    spans += [span for m in _SECRET_CALL.finditer(text) if (span := _setter_value(m))]
    spans += [m.span("value") for m in _NETRC_PASSWORD.finditer(text) if not kept_value(m.group("value"))]
    yield from sorted(spans)


def find_pgpass_passwords(text: str) -> Iterator[tuple[int, int]]:
    for m in _PGPASS_LINE.finditer(text):
        value = m.group("value")
        if looks_generated(value) and not value.isdigit() and not kept_value(value):
            yield m.span("value")  # a word is more likely a message: main.c:10:5:warning:unused


# --- HTTP credentials: an Authorization header of any scheme, and cookies ---------------------------------

# Authorization: Token X, ApiKey X, SSWS X, or a bare X (Bearer and Basic have their own rules, which run first).
_AUTHORIZATION = re.compile(
    r"""(?i:authorization)(?<![\w-]authorization)["']?[ \t]*[:=][ \t]*["']?"""
    r"""(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]{1,20})[ \t]+)?(?!\[REDACTED)(?P<token>[A-Za-z0-9._~+/=-]{16,}+)"""
    r"""(?![ \t]+\[REDACTED)"""  # a scheme whose credential is gone already: scrubbing twice changes nothing
)
# The cookies of a Cookie or Set-Cookie header, of curl's -b/--cookie, or of a cookie string assigned or shown
# after its name (document.cookie = "...", a console's document.cookie then its output): "name=value; name=value".
_COOKIE_HEADER = re.compile(
    r"""(?:(?i:(?:set-)?cookie)(?<![\w-]cookie)(?<![\w-]set-cookie)[ \t]*(?::|=(?!=)[ \t]*["'`]?|\r?\n[ \t]*["'`])|"""
    r"""(?<![\w-])(?:-b|--cookie)[ \t]+["']?)"""
    r"""(?P<cookies>[^\n"']{1,4096})"""
)
_COOKIE = re.compile(r"(?:^|;)[ \t]*(?P<name>[^=;\s]{1,128})=(?!\[REDACTED)(?P<value>[^;\s]{1,4096})")
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "samesite", "priority", "version", "comment"}


def find_authorization(text: str) -> Iterator[tuple[int, int]]:
    for m in _AUTHORIZATION.finditer(text):
        scheme = (m.group("scheme") or "").lower()
        if scheme in ("bearer", "basic") or not looks_like_credential(m.group("token")):
            continue  # their own rules judge those; a short or all-lower-case word is not a credential
        yield m.span("token")


def find_cookies(text: str) -> Iterator[tuple[int, int]]:
    """Every cookie value that looks generated: a session id or a token, not "en" or "dark"."""
    for header in _COOKIE_HEADER.finditer(text):
        offset = header.start("cookies")
        for cookie in _COOKIE.finditer(header.group("cookies")):
            if cookie.group("name").lower() in _COOKIE_ATTRIBUTES:
                continue
            value = cookie.group("value")
            if len(value) >= 12 and has_digit_and_letter(value) and not kept_value(value):
                yield offset + cookie.start("value"), offset + cookie.end("value")


# --- credentials handed to a command: a URL's token user, a secret piped to --password-stdin ---------------

# A token as a URL's user, with no password: https://TOKEN@github.com/org/repo.git.
_URL_TOKEN_USER = re.compile(
    r"://(?<=[A-Za-z0-9+.-]://)(?!\[REDACTED)(?P<token>[A-Za-z0-9._~%+-]{16,256})@(?=[A-Za-z0-9])"
)
# A secret piped into a command that reads it from stdin: echo X | docker login --password-stdin, and <<< X.
_PIPED_SECRET = re.compile(
    r"""echo(?<![\w-]echo)[ \t]+(?:-n[ \t]+)?(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s|;&]{1,256})"""
    r"""[ \t]*\|[^|\n]{0,200}?--password-stdin"""
)
_HERE_STRING_SECRET = re.compile(
    r"""--password-stdin[^<\n]{0,200}?<<<[ \t]*(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|\S{1,256})"""
)


def find_url_token_users(text: str) -> Iterator[tuple[int, int]]:
    """A URL's user that is a credential (long, with a digit or mixed case), not a person's name."""
    for m in _URL_TOKEN_USER.finditer(text):
        if looks_like_credential(m.group("token")) and not kept_value(m.group("token")):
            yield m.span("token")


def find_stdin_secrets(text: str) -> Iterator[tuple[int, int]]:
    """A literal echoed into, or here-stringed to, a command that reads its password from stdin ($VARs stay)."""
    spans = []
    last_value, last_kept = None, False  # text that repeats one command judges its value once
    # A here-string is looked for only where one is written: its pattern scans up to 200 characters after every
    # --password-stdin.
    patterns = (_PIPED_SECRET, _HERE_STRING_SECRET) if "<<<" in text else (_PIPED_SECRET,)
    for pattern in patterns:
        for m in pattern.finditer(text):
            start, end = m.span("value")
            if text[start] in "\"'":
                start, end = start + 1, end - 1
            value = text[start:end]
            if value != last_value:
                last_value, last_kept = value, kept_value(value)
            if not last_kept:
                spans.append((start, end))
    yield from sorted(spans)


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


def find_option_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _SECRET_OPTION.finditer(text):
        strength = name_strength(m.group("name"))
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
    if not value or value.isdigit() or is_expression(value) or kept_value(value):
        return None
    if glued and not looks_generated(value):
        return None  # --compass-like words: only a value that looks generated
    return start, end
