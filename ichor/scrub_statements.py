"""Secrets handed over by a keyword, a directive or a file's columns instead of an assignment's operator.

SQL's ``PASSWORD '...'`` and ``IDENTIFIED BY '...'``; a server's header directive (nginx ``proxy_set_header
X-Api-Key VALUE;``, Apache ``RequestHeader set``, HAProxy ``http-request set-header``, Caddy ``header_up``);
PowerShell's ``ConvertTo-SecureString "..." -AsPlainText``; a base64 ``user:password`` under an ``auth`` name
(Docker's config.json, .npmrc's ``_auth``); the value column of a Netscape cookie file (curl's and wget's
cookie jars); a call given a user and a password (``smtp.login("me@x.io", "X")``); and prose that says what a
password is (``her password is X``, ``login is admin / X``).
Each finder yields the spans of values to remove, left to right; values are judged by ``ichor.scrub_values``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from .scrub_catalogue import lower_of
from .scrub_names import is_expression, name_strength
from .scrub_values import (
    decodes_to_credentials,
    has_digit_and_letter,
    kept_value,
    looks_generated,
    looks_like_credential,
    looks_random,
)

_QUOTED = r"""(?P<value>'[^'\n]{1,256}'|"[^"\n]{1,256}")"""

# CREATE ROLE r WITH LOGIN PASSWORD 'X', ALTER USER u PASSWORD 'X', CREATE USER 'u'@'%' IDENTIFIED BY 'X',
# Oracle's unquoted IDENTIFIED BY X. The keyword then a literal, no operator. Both keywords end in "d": the
# pattern starts there (one letter the engine skips to) and checks the word behind it.
_SQL_PASSWORD = re.compile(
    r"[dD](?i:(?<=password)(?<![\w-]password)|(?<=identified)(?<![\w-]identified)[ \t]+by(?:[ \t]+password)?)[ \t]+"
    r"""(?!["']?\[REDACTED)(?:""" + _QUOTED[:-1] + r"""|(?<=[bB][yY][ \t])[^\s'";,]{1,256}))"""
)
# A header set by a server's configuration: the directive, the header's name, then its value.
_HEADER_DIRECTIVE = re.compile(
    r"[ \t]*(?:proxy_set_header|add_header|grpc_set_header|more_set_input_headers|more_set_headers|header_up|"
    r"(?:Request)?Header[ \t]+(?:always[ \t]+)?(?:set|add|append)|http-(?:request|response)[ \t]+set-header)"
    r"""[ \t]+["']?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,60})["']?:?[ \t]+(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,1024}"|'[^'\n]{1,1024}'|[^\s;"'{}]{1,1024})"""
)
# PowerShell turning a literal into a SecureString: the literal is the password.
_SECURE_STRING = re.compile(
    r"(?i:ConvertTo-SecureString)[ \t]+(?:-String[ \t]+)?" + _QUOTED + r"(?=[^\n]{0,80}?(?i:-AsPlainText))"
)
# The base64 of "user:password" under an auth name: Docker's "auth": "...", .npmrc's _auth=...
_AUTH_BLOB = re.compile(
    r"""[_aA](?<![\w.-][_aA])(?:(?<=_)[aA])?(?i:(?<=a)uth)["']?[ \t]*[:=][ \t]*["']?"""
    r"""(?P<value>[A-Za-z0-9+/]{8,4096}={0,2})(?![\w+/=])"""
)
# A line of a Netscape cookie file: domain, include-subdomains, path, secure, expiry, name, value (tab-separated).
# The pattern starts at the first tab (a literal the engine can skip to); the domain before it is checked apart.
_COOKIE_JAR_LINE = re.compile(
    r"\t(?:TRUE|FALSE)\t[^\t\n]{1,1024}\t(?:TRUE|FALSE)\t[0-9]{1,20}\t"
    r"[^\t\n]{1,256}\t(?!\[REDACTED)(?P<value>[^\t\n]{1,8192})$",
    re.MULTILINE,
)
_COOKIE_DOMAIN = re.compile(r"(?:#HttpOnly_)?[^\t\n#][^\t\n]{0,253}")
# A call that takes a user and a password as its last two literals: smtp.login("me@x.io", "X"),
# DriverManager.getConnection(url, "app", "X"), NetworkCredential("u", "X"), new BasicAuth('u', 'X').
_CREDENTIAL_CALL = re.compile(
    r"(?<![\w-])(?i:log_?in|sign_?in|authenticate|get_?connection|basic_?auth|http_?basic_?auth|network_?credential|"
    r"password_?authentication|username_?password_?credentials?|credentials?)[ \t]*\([ \t]*"
    r"""(?:(?:"[^"\n]{0,256}"|'[^'\n]{0,256}'|[\w.]{1,64})[ \t]*,[ \t]*)?"""
    r"""(?:"[^"\n]{1,128}"|'[^'\n]{1,128}')[ \t]*,[ \t]*(?!["']\[REDACTED)""" + _QUOTED + r"[ \t]*[,)]"
)
# A client constructor given an account's id and its secret as positional literals: Twilio's
# Client('AC...', 'TOKEN'), Minio('host', 'ACCESS', 'SECRET'), OAuth1('key', 'SECRET'), tweepy.OAuthHandler(...).
# The last of two to four literals goes when it is shaped like a token (see ``_token_shaped``).
_CLIENT_CALL = re.compile(
    r"(?i:client|minio|oauth1|oauth_?handler)[ \t]*\([ \t]*"
    r"""(?:(?:"[^"\n]{1,256}"|'[^'\n]{1,256}')[ \t]*,[ \t]*){1,3}(?!["']\[REDACTED)""" + _QUOTED + r"[ \t]*[,)]"
)
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_-]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


def _token_shaped(value: str) -> bool:
    """32+ hex digits, or 20+ token characters mixing upper case, lower case and digits: not a region, a host,
    a project's or a file's name (us-east-1, play.min.io, my-project-20240101)."""
    if not _TOKEN_CHARS.fullmatch(value) or kept_value(value):
        return False
    if len(value) >= 32 and _HEX.fullmatch(value) and has_digit_and_letter(value):
        return True
    return len(value) >= 20 and has_digit_and_letter(value) and bool(_UPPER.search(value) and _LOWER.search(value))


def _client_call_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _CLIENT_CALL.finditer(text):
        start, end = _literal(m)
        if _token_shaped(text[start:end]):
            yield start, end


# Google's app password: four groups of four lower-case letters, given where a password goes.
_APP_PASSWORD = re.compile(r"[a-z]{4}(?: [a-z]{4}){3}")
# Prose that says what a secret is: "the password is X", "her passphrase was X", "my token is X".
# The pattern starts at the "s" of "is" or "was"; the secret's name before them is checked apart.
_PROSE_SECRET = re.compile(
    r"[sS](?:(?<=[ \t][iI][sS])|(?<=[ \t][wW][aA][sS]))[ \t]+"
    r"""(?!["']?\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"']{1,256})"""
)
_PROSE_NAME = re.compile(r"(?<![\w-])(?i:pass(?:word|phrase|code|wd)|api[ _-]?key|token|secret)[ \t]+(?i:is|was)\Z")
_PROSE_NAME_REACH = 24  # the longest name, its spaces and "was"
# A login given as "user / password": "login is admin / X", "credentials: admin / X".
_LOGIN_PAIR = re.compile(
    r"[lLcC](?<![\w-][lLcC])(?i:(?<=l)ogins?|(?<=c)red(?:entials|s))[ \t]*(?:(?i:is|are)[ \t]+|:[ \t]*)"
    r"""[^\s/]{1,64}[ \t]+/[ \t]+(?!\[REDACTED)(?P<value>[^\s"']{1,256})"""
)
# A sentence that names a secret, then a few words, then a colon and the value: "the admin password for
# staging: X", "she put her password in the ticket too: X". The words between are words, not code or a path.
_PROSE_COLON = re.compile(
    r"[pPaAtTsS](?<![\w-][pPaAtTsS])(?i:(?<=p)ass(?:word|phrase|code)|(?<=a)pi[ _-]?key|(?<=t)oken|(?<=s)ecret)"
    r"(?:[ \t]+[A-Za-z']{1,20}){1,6}:[ \t]+"
    r"""(?!["']?\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"']{1,256})"""
)
_TRAILING_PUNCTUATION = ".,;:)"  # not "!" or "?": passwords end with them too
# Prose that names a password, a few words later says what it is or was set to, and gives the value, perhaps on
# the next line, in any of the languages people paste in: "the temporary password we set was X", "the root
# password is\nX", "das Passwort für die Datenbank auf „X\" geändert", "la contraseña del usuario admin es X",
# "a senha do Grafana é X", "パスワードは「X」". The words between are words, not code, an operator or a path.
_PROSE_NAMED = re.compile(
    r"(?i)(?:[pkcsm](?<![\w-][pkcsm])(?:(?<=p)ass(?:word|phrase|code|wort)|(?<=k)ennwort|(?<=c)ontrase(?:ñ|n)a|"
    r"(?<=s)enha|(?<=m)ot[ -]de[ -]passe)|パスワード|暗証番号)"
    r"(?:[ \t]+[^\s:=/\\()<>\[\]{}|\"'„“”«»「」]{1,30}){0,4}?"
    r"(?:[ \t]+(?:is|was|are|to|ist|war|lautet|auf|es|era|é|est|était|foi)(?:[ \t]+|[ \t]*\r?\n[ \t]*)"
    r"|(?<=[ド号])[は:：])[ \t]*"
    r"""(?!["'„“«「`]?\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|„[^"“”\n]{1,256}["“”]|“[^”\n]{1,256}”|"""
    r"""«[^»\n]{1,256}»|「[^」\n]{1,256}」|`[^`\n]{1,256}`|[^\s"'„“«「`]{1,256})"""
)


# A variable set by a command that takes the name and the value as two words: Windows' setx NAME VALUE, fish's
# set -gx NAME VALUE, launchctl setenv NAME VALUE (macOS).
_SET_COMMAND = re.compile(
    r"[sl](?<![\w-][sl])(?:(?<=s)etx|(?<=s)et[ \t]+-[A-Za-z]{1,4}(?:[ \t]+-[A-Za-z]{1,4})?|"
    r"(?<=l)aunchctl[ \t]+setenv)[ \t]+"
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_]{0,80})[ \t]+(?!["']?\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"';]{1,256})"""
)
# A secret-named variable read with a literal fallback: the fallback is the secret. os.getenv("API_TOKEN", "X"),
# os.environ.get("DB_PASSWORD", "X"), ENV.fetch("DATABASE_PASSWORD") { "X" }, ENV.fetch("KEY", "X"),
# process.env.API_KEY || "X" (or ??), getenv('DB_PASS') ?: 'X', and the shell's ${DB_PASSWORD:-X}.
# The call's name is checked apart (_ENV_CALL, on the text before the bracket): the pattern starts at a literal.
_ENV_FALLBACK = re.compile(
    r"""(?:\([ \t]*(?P<q>["'])(?P<name>[A-Za-z_][\w.-]{0,80})(?P=q)[ \t]*(?:,|\)[ \t]*(?:\{|\|\||\?\?|\?:|or\b))"""
    r"""|process\.env\.(?P<jsname>[A-Za-z_]\w{0,80})[ \t]*(?:\|\||\?\?))[ \t]*(?!["'`]\[REDACTED)"""
    r"""(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|`[^`\n]{1,256}`)"""
    r"""|\$\{(?P<shname>[A-Za-z_]\w{0,80}):?-(?P<shvalue>[^}\s$]{1,256})\}"""
)
_ENV_CALL = re.compile(r"(?:getenv|get|fetch|env|getOrDefault|GetEnvironmentVariable)[ \t]*\Z")
# A Terraform (or Packer) variable whose block names a secret and whose default is the value:
# variable "datadog_api_key" { default = "X" }.
_HCL_VARIABLE = re.compile(
    r"""variable[ \t]+"(?P<name>[A-Za-z_][\w-]{0,80})"[ \t]*\{[^{}]{0,600}?(?<![\w-])default[ \t]*=[ \t]*"""
    r"""(?!"\[REDACTED)(?P<value>"[^"\n]{1,256}")"""
)
# A password given as a positional literal: requests' auth=("user", "X"), PHP's new PDO($dsn, 'user', 'X'),
# mysqli_connect('host', 'user', 'X', 'db'), pg_connect's and Java's getConnection(url, "user", "X").
_POSITIONAL_PASSWORD = re.compile(
    r"""[anmANM](?<![\w-][anmANM])(?:(?<=a)uth[ \t]*=[ \t]*\(|"""
    r"""(?i:(?<=n)ew[ \t]+PDO|(?<=m)ysqli_connect|(?<=n)ew[ \t]+mysqli|"""
    r"""(?<=m)ysqli_real_connect)"""
    r"""[ \t]*\([ \t]*(?:(?:"[^"\n]{0,256}"|'[^'\n]{0,256}'|\$?[\w.]{1,64})[ \t]*,[ \t]*)?)"""
    r"""[ \t]*(?:"[^"\n]{1,128}"|'[^'\n]{1,128}')[ \t]*,[ \t]*(?!["']\[REDACTED)""" + _QUOTED + r"[ \t]*[,)]"
)


# A command whose positional argument is a token: wandb login KEY, ngrok authtoken KEY, ngrok config
# add-authtoken KEY.
_TOKEN_COMMAND = re.compile(
    r"[wn](?<![\w-][wn])(?:(?<=w)andb[ \t]+login(?:[ \t]+--(?:relogin|verify))*|"
    r"(?<=n)grok[ \t]+(?:config[ \t]+add-)?authtoken)"
    r"[ \t]+"
    r"""(?!["']?\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"';|&]{1,256})"""
)
# A decoded secret printed by the command before it: "kubectl get secret ... | base64 -d", then the value alone
# on the next line.
# The pattern starts at "base64" after a pipe; the command's naming a secret is checked on its line apart.
_DECODE_COMMAND = re.compile(
    r"base64(?:(?<=\|base64)|(?<=\| base64))[ \t]+(?:-d|--decode|-D)[^\n]{0,40}\r?\n"
    r"[ \t]*(?!\[REDACTED)(?P<value>[^\s]{6,256})[ \t]*(?:\r?\n|\Z)"
)
_DECODED_SECRET = re.compile(r"(?i:secret|password|passwd|token|[_.-]key)")
# Python's urllib, when a URL's password holds a colon, takes what follows it for a port and says so, echoing the
# rest of the password before the "@host": "Port could not be cast to integer value as 'TAIL@db'".
_URL_PORT_ERROR = re.compile(r"Port could not be cast to integer value as '(?!\[REDACTED)(?P<value>[^'@\n]{1,256})@")
# Base64 of a JSON object (it starts "eyJ" or "ewo"/"ew0K" for a pretty-printed one) that holds credentials:
# Kubernetes' .dockerconfigjson, a service account key pasted encoded. A JWT has dots and is a rule of its own.
_B64_JSON = re.compile(r"(?:eyJ|ewo|ew0K)(?<![A-Za-z0-9+/_-]...)[A-Za-z0-9+/_-]{37,8192}={0,2}(?![A-Za-z0-9+/=_.-])")
_CREDENTIAL_KEY = re.compile(r'"(?:password|passwd|auth|token|access_token|secret|private_key|client_secret)"\s*:')


def _decoded_json_credentials(text: str) -> Iterator[tuple[int, int]]:
    for m in _B64_JSON.finditer(text):
        blob = m.group(0)
        try:
            decoded = base64.b64decode(
                blob + "=" * (-len(blob) % 4), altchars=b"-_" if "-" in blob or "_" in blob else None
            )
            decoded_text = decoded.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if _CREDENTIAL_KEY.search(decoded_text):
            yield m.span()


def _command_values(text: str) -> Iterator[tuple[int, int]]:
    lower = lower_of(text)
    for pattern, looks_secret, words in (
        (_TOKEN_COMMAND, looks_like_credential, ("wandb", "ngrok")),
        (_DECODE_COMMAND, looks_random, ("base64",)),
        (_URL_PORT_ERROR, lambda v: not v.isdigit(), ("port could not",)),
    ):
        if not any(w in lower for w in words):
            continue
        for m in pattern.finditer(text):
            if pattern is _DECODE_COMMAND and not _DECODED_SECRET.search(
                text, text.rfind("\n", 0, m.start()) + 1, m.start()
            ):
                continue
            start, end = _literal(m)
            value = text[start:end]
            if looks_secret(value) and not kept_value(value):
                yield start, end


def _value_by_name(name: str, value: str) -> bool:
    """A value a secret's name vouches for, though no operator joins them: random-looking after a strong name
    ("not-set" and "changeme" are words), a digit and a letter after a generic *_KEY."""
    strength = name_strength(name)
    if strength is None or kept_value(value) or is_expression(value):
        return False
    if strength == "weak":
        return len(value) >= 8 and has_digit_and_letter(value)
    return looks_random(value)


def _named_values(text: str) -> Iterator[tuple[int, int]]:
    for pattern in (_SET_COMMAND, _ENV_FALLBACK, _HCL_VARIABLE):
        for m in pattern.finditer(text):
            groups = m.groupdict()
            value_group = "shvalue" if groups.get("shvalue") else "value"
            name = groups.get("name") or groups.get("jsname") or groups.get("shname") or ""
            if (
                pattern is _ENV_FALLBACK
                and groups.get("q")
                and not _ENV_CALL.search(text, max(0, m.start() - 40), m.start())
            ):
                continue  # a call that reads no variable
            start, end = m.span(value_group)
            if text[start] in "\"'`":
                start, end = start + 1, end - 1
            if _value_by_name(name, text[start:end]):
                yield start, end


def _positional_passwords(text: str) -> Iterator[tuple[int, int]]:
    for m in _POSITIONAL_PASSWORD.finditer(text):
        start, end = _literal(m)
        value = text[start:end]
        if looks_generated(value) and not kept_value(value) and "://" not in value:
            yield start, end


def _literal(m: re.Match) -> tuple[int, int]:
    start, end = m.span("value")
    if m.string[start] in "\"'":
        return start + 1, end - 1
    if end - start > 2 and m.string[start] == "`" and m.string.find("`", start + 1, end) != -1:
        return start + 1, m.string.find("`", start + 1, end)  # prose quotes a value in backticks: is `X`.
    return start, end


def _sql_passwords(text: str) -> Iterator[tuple[int, int]]:
    for m in _SQL_PASSWORD.finditer(text):
        start, end = _literal(m)
        value = text[start:end]
        if looks_generated(value) and not kept_value(value):
            yield start, end


def _header_directives(text: str) -> Iterator[re.Match]:
    """The directive at the start of each line that holds one (directives start their line; each is spelled
    with "eader")."""
    line_end = -1
    while (at := text.find("eader", line_end + 1)) != -1:
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        line_end = len(text) if line_end == -1 else line_end
        if m := _HEADER_DIRECTIVE.match(text, line_start, line_end):
            yield m


def _header_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _header_directives(text):
        strength = name_strength(m.group("name"))
        if strength is None:
            continue
        start, end = _literal(m)
        value = text[start:end]
        if kept_value(value) or is_expression(value):
            continue  # nginx's $http_x_api_key, a variable
        if looks_random(value) and (strength != "weak" or has_digit_and_letter(value)):
            yield start, end


def _secure_strings(text: str) -> Iterator[tuple[int, int]]:
    for m in _SECURE_STRING.finditer(text):
        start, end = _literal(m)
        if not kept_value(text[start:end]):
            yield start, end


def _auth_blobs(text: str) -> Iterator[tuple[int, int]]:
    for m in _AUTH_BLOB.finditer(text):
        if decodes_to_credentials(m.group("value")):
            yield m.span("value")


def _cookie_jar_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _COOKIE_JAR_LINE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not _COOKIE_DOMAIN.fullmatch(text, line_start, m.start()):
            continue
        value = m.group("value").rstrip()
        if len(value) >= 12 and has_digit_and_letter(value) and not kept_value(value):
            yield m.start("value"), m.start("value") + len(value)


def _prose_colon_value(value: str) -> bool:
    """Random-looking and not a count or a version: "token usage for the run: 12,345" is not a token."""
    return len(value) >= 8 and looks_random(value) and not value.replace(",", "").replace(".", "").isdigit()


class _LastVerdict:
    """``looks_secret(value)`` and neither kept nor code, remembered for the last value judged: text that repeats
    one sentence judges its value once."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.verdict = False

    def __call__(self, looks_secret, value: str) -> bool:
        key = (looks_secret, value)
        if key != self.key:
            verdict = looks_secret(value) and not kept_value(value) and not is_expression(value)
            self.key, self.verdict = key, bool(verdict)
        return self.verdict


def _prose_values(text: str) -> Iterator[tuple[int, int]]:
    judged = _LastVerdict()
    # "The password is X" needs a value that looks random ("the password is wrong" stays); in "login is admin / X"
    # the layout vouches for the value, so a passphrase of words joined by hyphens goes too.
    patterns = ((_PROSE_SECRET, looks_random), (_LOGIN_PAIR, looks_generated), (_PROSE_COLON, _prose_colon_value))
    for pattern, looks_secret in patterns:
        for m in pattern.finditer(text):
            reach = max(0, m.start() - _PROSE_NAME_REACH)
            if pattern is _PROSE_SECRET and not _PROSE_NAME.search(text, reach, m.start() + 1):
                continue  # "it is", "this was": no secret named before the verb
            start, end = _literal(m)
            if text[m.start("value")] not in "\"'":
                while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
                    end -= 1  # the sentence's full stop: "her password is Kestrel!44#Lantern."
            value = text[start:end]
            if judged(looks_secret, value):
                yield start, end


# The same secret named once for two places in one sentence: "the API key for the sandbox is <your-token> and
# prod is X", "the password for staging is X, and for prod it is Y".
_TWO_VALUES = re.compile(
    r"[pPaAtTsS](?<![\w-][pPaAtTsS])(?i:(?<=p)ass(?:word|phrase|code)|(?<=a)pi[ _-]?key|(?<=t)oken|(?<=s)ecret)"
    r"(?![\w-])(?:[ \t]+[^\s:=/\\()<>\[\]{}|]{1,30}){0,5}?[ \t]+(?:is|was|ist|war|es|era|é|est)[ \t]+"
    r"(?P<first>[^\s,]{1,256}?)[ \t]*,?[ \t]+(?:and|und|y|e|et)[ \t]+(?:[^\s:=/\\()<>\[\]{}|]{1,20}[ \t]+){1,3}"
    r"(?:is|ist|es|é|est)[ \t]+"
    r"""(?!["'`]?\[REDACTED)(?P<value>"[^"\n]{1,256}"|'[^'\n]{1,256}'|`[^`\n]{1,256}`|[^\s"'`]{1,256})"""
)


def _second_values(text: str) -> Iterator[tuple[int, int]]:
    """Both values of a sentence that names a secret for two places ("... for A is X and B is Y")."""
    judged = _LastVerdict()
    for m in _TWO_VALUES.finditer(text):
        looks_secret = looks_random if m.group(0).lower().startswith("pass") else looks_like_credential
        for group in ("first", "value"):
            start, end = m.span(group)
            if text[start] in "\"'`" and end - start > 2:
                start, end = start + 1, end - 1
            else:
                while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
                    end -= 1
            value = text[start:end]
            if judged(looks_secret, value):
                yield start, end


def _prose_named_values(text: str) -> Iterator[tuple[int, int]]:
    judged = _LastVerdict()
    for m in _PROSE_NAMED.finditer(text):
        start, end = m.span("value")
        if text[start] in "\"'„“«「`":
            start, end = start + 1, end - 1
        else:
            while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
                end -= 1  # the sentence's full stop
        value = text[start:end]
        if judged(looks_random, value):
            yield start, end


def _credential_call_values(text: str) -> Iterator[tuple[int, int]]:
    for m in _CREDENTIAL_CALL.finditer(text):
        start, end = _literal(m)
        value = text[start:end]
        if kept_value(value) or value.startswith("/") or "://" in value:
            continue  # a path or an address, not a password
        if looks_generated(value) or _APP_PASSWORD.fullmatch(value):
            yield start, end


# Each finder with the lower-case words one of which its matches contain: a finder whose words are all absent
# is not run. Patterns that start with a choice of words start with a set of first letters instead (the word
# dispatched on it by a lookbehind), so the regex engine skips to the next such letter.
_FINDERS = (
    (_sql_passwords, ("password", "identified")),
    (_header_values, ("header",)),
    (_secure_strings, ("securestring",)),
    (_auth_blobs, ("auth",)),
    (_cookie_jar_values, ("\ttrue\t", "\tfalse\t")),
    (
        _credential_call_values,
        ("login", "log_in", "signin", "sign_in", "authenticate", "connection", "auth", "credential"),
    ),
    (_client_call_values, ("client", "minio", "oauth")),
    (
        _named_values,
        (
            "setx",
            "set -",
            "setenv",
            "getenv",
            "get(",
            "fetch",
            "env(",
            "getordefault",
            "variable",
            "${",
            "process.env",
        ),
    ),
    (_positional_passwords, ("auth", "pdo", "mysqli")),
    (_command_values, ("wandb", "ngrok", "base64", "port could not")),
    (_decoded_json_credentials, ("eyj", "ewo", "ew0k")),
    (_prose_values, ("pass", "key", "token", "secret", "login", "cred")),
    (_second_values, ("pass", "key", "token", "secret")),
    (_prose_named_values, ("pass", "kennwort", "contrase", "senha", "パスワード", "暗証番号")),
)
GATE = tuple(sorted({word for _, words in _FINDERS for word in words}))


def find_statement_secrets(text: str) -> Iterator[tuple[int, int]]:
    lower = lower_of(text)
    spans = [span for finder, words in _FINDERS if any(w in lower for w in words) for span in finder(text)]
    yield from sorted(spans)
