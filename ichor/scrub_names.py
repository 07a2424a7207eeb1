"""Names that hold a secret, and the values assigned to them in every syntax.

A name is read after normalising it: leading dashes dropped, "-" and "." read as "_", camelCase read with "_" at
each lower-to-upper step. ``name_strength`` says how surely a name holds a secret; ``assignment_value`` judges
the value given to it (placeholders, references and code stay); ``find_assignments`` finds ``NAME <op> VALUE``
in any syntax: ``=``, ``:``, ``:=``, ``=>``, ``<-``, quoted or not, nested in another value, as a subscript's key
(``os.environ["DB_PASSWORD"] = ...``) or with a type between (``let token: string = ...``).

>>> name_strength("DB_PASSWORD"), name_strength("rootPassword"), name_strength("SORT_KEY"), name_strength("user")
('strong', 'strong', 'weak', None)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from .scrub_values import (
    braced_value,
    has_digit_and_letter,
    is_placeholder,
    is_template,
    looks_generated,
    looks_passphrase,
    looks_random,
)

# Names are normalised first (leading dashes dropped, "-" and "." read as "_"), so --password, X-API-Key,
# db-password and spring.datasource.password are names like any other. A trailing qualifier (client-key-data,
# password_b64) does not change what the name holds, nor does "base" (Rails' and Phoenix' secret_key_base).
_NAME_QUALIFIER = r"(?:_(?:data|value|b64|base64|raw|plain|plaintext|str|enc|encoded|encrypted|hash|base))?"
_STRONG_NAME = re.compile(
    r"(?i)(?:\w*_)?(?:api_?key|apikey|secret|secret_?key|client_?secret|token|access_?token|auth_?token|"
    r"refresh_?token|bot_?token|api_?token|session_?token|password|passwd|pwd|pass|pw|passcode|passphrase|(?<=_)pat|"
    r"private_?key|access_?key|secret_?access_?key|signing_?key|encryption_?key|master_?key|credentials?)"
    + _NAME_QUALIFIER
)
_KEY_NAME = re.compile(r"(?i)\w*_key" + _NAME_QUALIFIER)
# A secret's name with "_id" after it names which key it is (GCP's private_key_id, secret_id, api_key_id): read like
# a generic *_KEY, so only a value that looks generated goes.
_ID_SUFFIX = re.compile(r"(?i)_id\Z")
# A key that finds or orders a record rather than unlocking anything: an idempotency, cache, sort, partition,
# primary, foreign or routing key holds an identifier, however random it looks.
_LOOKUP_KEY = re.compile(
    r"(?i)(?:\w*_)?(?:idempotency|cache|sort|partition|primary|foreign|routing|dedup|deduplication|lookup|row|"
    r"range|object|shard|composite|unique)_key"
)
# A key that is public by design: a CAPTCHA's site key (reCAPTCHA, hCaptcha, Turnstile), a publishable key, a public
# key. Its secret counterpart has a name of its own (secret_key, private_key).
_PUBLIC_KEY = re.compile(r"(?i)(?:\w*_)?(?:site|publishable|public|pub)_key")
# "pass" as "hand over" rather than "password": web servers' directives that pass a request on to a backend
# (nginx's proxy_pass, fastcgi_pass, uwsgi_pass, scgi_pass, grpc_pass, memcached_pass).
_FORWARDING_NAME = re.compile(r"(?i)(?:proxy|fastcgi|uwsgi|scgi|grpc|memcached)_pass")
# A key's id written as one: a GPG key id or fingerprint (8, 16 or 40 hex digits), a UUID (a KMS key's id).
_KEY_ID_VALUE = re.compile(
    r"(?:0x)?(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{16}|[0-9A-F]{40})|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
# Code where a value should be: attribute access (tokenizer.eos_token, self.v2) or a call or subscript. A dotted
# value whose parts are not identifiers (Summer.2024, a dotted token) is a value.
EXPRESSION = re.compile(
    r"[A-Za-z_][A-Za-z_]*[0-9]{0,4}(?:\.[A-Za-z_][A-Za-z_]*[0-9]{0,4})+(?![^)\]},:])|[A-Za-z_][\w.]*[(\[]"
)


def is_expression(value: str) -> bool:
    """Code where a value should be, unless it is shaped like a generated passphrase (maple.pepper.summer)."""
    if "." not in value and "(" not in value and "[" not in value:
        return False  # every expression has a dot, a call or a subscript: a cheap test before the regex
    return EXPRESSION.match(value) is not None and not looks_passphrase(value)


NAME_GATE = ("key", "secret", "token", "pass", "pwd", "pw", "credential", "pat")
# A URI's userinfo given apart from its URI holds "user:password": Confluent's basic.auth.user.info=KEY:SECRET.
USERINFO_GATE = ("userinfo", "user_info", "user.info", "user-info")
_USERINFO_NAME = re.compile(r"(?i)(?:\w*_)?user_?info")
NAME_GATE_RE = re.compile("|".join(NAME_GATE), re.IGNORECASE)
_REMOVED = ("[REDACTED", '"[REDACTED', "'[REDACTED")

# Where a secret's name can end and its operator follow: every name above ends in one of these words, then
# perhaps a qualifier, a closing quote and spaces. Only the operator is matched, never the value, so an operator
# inside another assignment's value (Groq(api_key="..."), //host/:_authToken=..., jdbc:...?password=..., a JSON
# connection string) is examined too. Operators after any other word are skipped by the regex engine, not here.
# The first letter is matched case by case and the word after it dispatched on it by a lookbehind: a pattern that
# starts with a set of letters lets the engine skip to the next such letter instead of trying every position.
_NAMED_OPERATOR = re.compile(
    r"[kKsStTpPcCiI](?i:(?<=k)ey|(?<=s)ecret|(?<=t)oken|(?<=p)(?:ass(?:word|wd|code|phrase)?|wd|w|at)|(?<=c)redentials?|"
    r"(?<=i)nfo)"
    + "(?i:"
    + _NAME_QUALIFIER.replace("_", "[_.-]", 1)
    + r"(?:[_.-]?id)?)"
    + r"\\?[\"']?\]?[ \t]{0,40}(?P<op>=>|:=|<-|=(?!=)|:(?!=))[ \t]*+(?!\\?[\"']?\[REDACTED)"  # not removed yet
)
# The name before the operator, matched on the reversed text (so it is an anchored match, not a search).
# A quoted name may be a path of sections joined by colons, the last one naming the value: ASP.NET's
# "Auth0:ClientSecret", "ConnectionStrings:Redis", "Twilio:AuthToken" in appsettings.json and user secrets.
# A subscript's key is a name too: os.environ["DB_PASSWORD"] = ..., config['password'] = ..., ENV["API_KEY"] = ...
_NAME_REVERSED = re.compile(
    r"[ \t]{0,40}(?P<sub>\])?(?P<q>[\"']?)\\?(?P<name>[A-Za-z0-9_.-]{0,80}[A-Za-z_]-{0,2})"
    r"(?:(?::[A-Za-z0-9_.-]{1,80}){1,4}(?=\\?[\"']))?(?P=q)\\?"
    r"(?(sub)\[|(?![\w.\[\]-]))"
)
# A type between a name and its value: let token: string = "...", const API_KEY: &str = "...". The "=" has a
# space before it, unlike base64 padding (db-password: c2VjcmV0=).
_TYPE_ANNOTATION = re.compile(r"[A-Za-z_&][\w<>\[\]., &|?']{0,60}?[ \t]+=(?![=>])[ \t]*")
# A YAML anchor or tag before a value.
# Tags and anchors are names (!!binary, !Ref, &db_pw), unlike a password that starts with "!" or "&" (!0UFtry...).
_YAML_DECORATION = re.compile(r"(?:(?:!!?[A-Za-z][A-Za-z_.:/-]{0,30}|&[A-Za-z_][\w-]{0,40})[ \t]+)+")
# Where a value ends. Values are not cut at any length: a session token can run past 1,000 characters.
_BARE_END = re.compile(r"[\s\"'`,;]")
# A YAML block scalar: "|" or ">" (with a chomping or indent indicator) ending the line, the value on the next,
# indented line.
_YAML_BLOCK = re.compile(r"[|>][+-]?[0-9]?[ \t]*\r?\n[ \t]+(?P<value>\S)")
_DQ_END = re.compile(r"[\"\n]")
_SQ_END = re.compile(r"['\n]")
_BT_END = re.compile(r"[`\n]")
# A YAML key with nothing after its colon and a plain scalar on the next, deeper-indented line (a long secret
# wrapped under its key). A nested mapping ("key: value") or a list ("- item") there is not a value.
_YAML_NEXT_LINE = re.compile(r"[ \t]*\r?\n(?P<indent>[ \t]{1,40})(?![-?] |#)(?P<value>[^\s\"'][^\n]{0,1000})")
_YAML_KEY = re.compile(r"[^\s:]{1,200}:(?:\s|$)")
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


def find_assignments(text: str) -> Iterator[tuple[int, int]]:
    reversed_text = None
    ends = {
        "bare": _NextMatch(text, _BARE_END),
        '"': _NextMatch(text, _DQ_END),
        "'": _NextMatch(text, _SQ_END),
        "`": _NextMatch(text, _BT_END),  # a JavaScript template literal
    }
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
        strength = name_strength(raw_name)
        if strength is None:
            continue
        operator = m.group("op")
        if operator == ":" and _part_of_identifier(text, size - name.end(), start, op_start):
            continue
        if (
            operator == ":"
            and text[size - name.end() - 1 : size - name.end()] == "$"
            and _GRAPHQL_TYPE.match(text, start)
        ):
            continue  # a GraphQL variable's type: mutation Login($password: String!)
        first = text[start] if start < size else ""
        if first == "\\" and text.startswith(('\\"', "\\'"), start):
            start, first = start + 1, text[start + 1]  # JSON inside a JSON string: \"TOKEN\": \"VALUE\"
        if operator == ":" and first not in "\"'" and (annotation := _TYPE_ANNOTATION.match(text, start)):
            start, operator = annotation.end(), "="  # token: string = VALUE: the value is after the type
            first = text[start] if start < size else ""
        if first in "&!" and operator == ":" and (decoration := _YAML_DECORATION.match(text, start)):
            if decoration.group(0).startswith("!secret "):
                continue  # Home Assistant's "password: !secret db_password" names an entry of secrets.yaml
            start = decoration.end()  # password: &anchor VALUE, secret: !!binary VALUE
            if text.startswith(_REMOVED, start):
                continue  # the value is already a placeholder (the engine's second pass)
            first = text[start] if start < size else ""
        if operator == ":" and first in "|>" and (block := _YAML_BLOCK.match(text, start)):
            start, first = block.start("value"), block.group("value")[:1]  # PASSWORD: >-, then the value below
        elif operator == ":" and first in "\r\n" and (below := _YAML_NEXT_LINE.match(text, start)):
            line_start = text.rfind("\n", 0, op_start) + 1
            key_indent = len(text[line_start:op_start]) - len(text[line_start:op_start].lstrip(" \t"))
            if len(below.group("indent")) <= key_indent or _YAML_KEY.match(below.group("value")):
                continue
            start, first = below.start("value"), below.group("value")[:1]  # secret:, then the value below
        if first == "[" and (literals := _STRING_LIST.match(text, start)):
            spans = list(_list_secrets(literals, strength))
            if spans:
                taken_until = literals.end()
                yield from spans
            continue
        quote = first if first and first in "\"'`" else None
        if quote and text.startswith(quote * 3, start):
            start += 2  # a triple-quoted string: """VALUE"""; the value is taken from its third quote
        end = ends[quote](start + 1) if quote else _bare_end(text, start, ends["bare"])
        if quote and text[end - 1] == "\\":
            end -= 1  # the escaped closing quote
        in_run = in_run + 1 if end == run_end else 1
        run_end = end
        if in_run > _MAX_NESTED:
            continue
        span = assignment_value(text, raw_name, strength, operator, start + (1 if quote else 0), end, quote)
        if span is not None:
            taken_until = span[1]
            yield span


# A list of string literals given to a secret's name: TWILIO_API_KEY = ["SK...", "X"], tokens: ['X', 'Y'].
_LITERAL = r"""(?:"[^"\n]{1,256}"|'[^'\n]{1,256}')"""
_STRING_LIST = re.compile(r"\[[ \t]*(?:" + _LITERAL + r"[ \t]*,[ \t]*){0,15}" + _LITERAL + r"[ \t]*,?[ \t]*\]")
_LIST_LITERAL = re.compile(_LITERAL)


def _list_secrets(literals: re.Match, strength: str) -> Iterator[tuple[int, int]]:
    """The elements of a secret-named list that look generated (a generic *_KEY's only with a digit and a letter)."""
    for m in _LIST_LITERAL.finditer(literals.string, literals.start(), literals.end()):
        start, end = m.start() + 1, m.end() - 1
        value = m.string[start:end]
        if is_template(value) or is_placeholder(value) or not looks_generated(value) or " " in value:
            continue
        if strength != "weak" or has_digit_and_letter(value):
            yield start, end


_GRAPHQL_TYPE = re.compile(r"\[?[A-Z][A-Za-z0-9_]{0,60}!?\]?!?(?=[\s,)=])")
# A bare value with a name in angle brackets runs past the brackets' spaces: <random 64 hex chars>, sk-<your key>.
_ANGLE = re.compile(r"<[^<>\n]{1,60}>")


def _bare_end(text: str, start: int, next_end: _NextMatch) -> int:
    end = next_end(start)
    opening = text.find("<", start, end)
    if opening == -1 or text.find(">", opening, end) != -1 or not (angle := _ANGLE.match(text, opening)):
        return end
    after = _BARE_END.search(text, angle.end())
    return after.start() if after else len(text)


def _part_of_identifier(text: str, name_start: int, value_start: int, op_start: int) -> bool:
    """A "name:" that is a segment of something else: a URL's user (https://gitlab-ci-token:$TOKEN@host, which
    the URL rule judges) or a segment of a colon-separated identifier (arn:aws:...:secret:prod/db)."""
    if text.startswith("://", max(0, name_start - 3), name_start):
        return True
    return name_start > 0 and text[name_start - 1] == ":" and value_start == op_start + 1


@functools.lru_cache(maxsize=4096)
def _normal_name(name: str) -> str:
    return name.lstrip("-").replace("-", "_").replace(".", "_")


# camelCase names are read with "_" at each lower-to-upper step: rootPassword, dbPass, adminToken, clientKey.
_CAMEL_STEP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A secret word glued to the word before it: PGPASSWORD, MYSQLPWD, requirepass, storepass.
_GLUED_NAME = re.compile(r"(?i)[a-z]{2,}(?:password|passwd|pass|pwd|secret|token)" + _NAME_QUALIFIER)
_NOT_GLUED = {"bypass", "compass", "encompass", "trespass", "surpass", "overpass", "underpass"}


@functools.lru_cache(maxsize=4096)
def name_strength(raw_name: str) -> str | None:
    """How surely a name holds a secret: "strong" (DB_PASSWORD, rootPassword, PGPASSWORD), "glued" for a secret
    word glued on in lower case (requirepass: only a value that looks generated), "weak" for a generic *_KEY,
    "userinfo" for a name that holds "user:password", else None."""
    name = _CAMEL_STEP.sub("_", _normal_name(raw_name))
    if _USERINFO_NAME.fullmatch(name):
        return "userinfo"
    if (suffix := _ID_SUFFIX.search(name)) and suffix.start() > 0:
        return "weak" if name_strength(name[: suffix.start()]) in ("strong", "weak", "glued") else None
    if _FORWARDING_NAME.fullmatch(name):
        return None
    if _STRONG_NAME.fullmatch(name):
        return "strong"
    if _KEY_NAME.fullmatch(name):
        return None if _LOOKUP_KEY.fullmatch(name) or _PUBLIC_KEY.fullmatch(name) else "weak"
    if _GLUED_NAME.fullmatch(name) and name.lower() not in _NOT_GLUED:
        return "strong" if name.isupper() else "glued"
    return None


def assignment_value(
    text: str, raw_name: str, strength: str, operator: str, start: int, end: int, quote: str | None
) -> tuple[int, int] | None:
    """The span of the value when ``name <operator> value`` assigns a secret (``strength`` of its name), else None."""
    if quote is None:
        while end > start and text[end - 1] in ")]},:":
            end -= 1  # a call's or literal's closing bracket: password=None)
    value = text[start:end]
    # The verdict is a function of the value and the name alone, kept for the last one judged: text that repeats
    # one assignment (password: password: ..., pass = pass = ...) pays for one verdict, distinct values for theirs.
    global _LAST_VERDICT
    key = (value, raw_name, strength, operator, quote)
    last_key, offset = _LAST_VERDICT
    if key != last_key:
        span = _value_span(value, raw_name, strength, operator, quote, 0, len(value))
        offset = None if span is None else span[0]
        _LAST_VERDICT = (key, offset)
    return None if offset is None else (start + offset, end)


_LAST_VERDICT: tuple[tuple | None, int | None] = (None, None)


def _value_span(
    value: str, raw_name: str, strength: str, operator: str, quote: str | None, start: int, end: int
) -> tuple[int, int] | None:
    if not value or value.startswith("[REDACTED") or (quote is None and _bracketed_code(value)):
        return None  # already removed, or code: (a * b), [x], {...}
    if quote is None and is_expression(value):
        return None  # code: tokenizer.eos_token, os.environ[...], get_token()
    if strength == "userinfo":
        return _userinfo_password(value, start, end)
    if is_template(value) or is_placeholder(value):
        return None
    if strength == "weak":
        # A generic *_KEY (SORT_KEY, WANDB_RUN_ID_KEY, cache_key): only a value that looks generated. A key's id
        # (signing.keyId=D96FE59F, kms_key_id = <uuid>) written as an id names the key without opening anything.
        if _KEY_ID_VALUE.fullmatch(value) and _ID_SUFFIX.search(_CAMEL_STEP.sub("_", _normal_name(raw_name))):
            return None
        ok = len(value) >= 8 and has_digit_and_letter(value) and " " not in value
        return (start, end) if ok else None
    if (strength == "glued" or (quote is None and operator == ":")) and not looks_generated(value):
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


def _userinfo_password(value: str, start: int, end: int) -> tuple[int, int] | None:
    """The password of a "user:password" value; the user stays, as in a URL."""
    colon = value.find(":")
    secret = value[colon + 1 :]
    if colon < 1 or not secret or is_template(secret) or is_placeholder(secret) or not looks_generated(secret):
        return None
    return start + colon + 1, end


_CLOSING = {"(": ")", "[": "]", "{": "}"}


def _bracketed_code(value: str) -> bool:
    """A value that starts with a bracket is code ((a * b), [x], {...}, {x}.format()) unless more material follows
    its closing bracket ({efnLOpaMxx}#58 is a password that starts with a brace) or it never closes and what
    follows looks random."""
    if value[0] not in _CLOSING or braced_value(value):
        return False
    close = value.find(_CLOSING[value[0]])
    if close == -1:
        # A bracket never closed: code opens a block or a call there (token={, password=(a), but a long random
        # run after it is a password that starts with a bracket: --password={nSOzmJDNuzdLrqVJ%.
        return len(value) < 8 or not looks_random(value[1:])
    return close == len(value) - 1 or value[close + 1] in ".([{"


_IDENTIFIER = re.compile(r"[A-Za-z_]+")
_DIGITS_NAME = re.compile(r"(?i)pass|pwd|pw$|pin")  # names whose value may be all digits: a PIN, a passcode
