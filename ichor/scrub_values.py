"""What a candidate secret value is: a placeholder or template that must stay, or something worth removing.

Shared by the scrubber's own finders (ichor/scrub.py) and the catalogue rows (ichor/scrub_catalogue.py), so a
placeholder is kept whichever rule would have matched it.

>>> is_placeholder("sk-...your key...") and is_placeholder("AKIAIOSFODNN7EXAMPLE") and is_placeholder("ghp_XXXXXXXX")
True
>>> is_template("${DB_PASSWORD}") and not is_template("$ecretPa55")
True
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

# Marks of a value written to be replaced (looked for in its lower case): documentation keys (AWS's ...EXAMPLE),
# runs of X or *, ellipses and "your ... here". Counting sequences (abcdefghij…, 1234567890…) are not marks: test
# and demo keys are written that way and are still shaped like real ones, so they go.
_PLACEHOLDER_MARKS = (
    "xxxx",
    "***",
    "...",
    "\u2026",
    "00000000",
    "example",
    "your_",
    "your-",
    "your ",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "replaceme",
    "replace_me",
    "replace-me",
    "redacted",
)
_MARK = re.compile("|".join(re.escape(m) for m in _PLACEHOLDER_MARKS))
# A name in angle brackets says what goes there (<your key>, <random 64 hex chars>, sk-<key>); digits or symbols
# outside the brackets are material, not a name's decoration (<Sequoia>1187 is a password), and brackets around
# symbols are not a name (a WordPress salt).
_ANGLE_NAME = re.compile(r"<[A-Za-z][\w .,:/-]{0,40}>")
_MATERIAL = re.compile(r"[0-9!#$%^&*+=~?]")
# A value that says where the real one goes: password_here, your-token-here (WordPress' wp-config-sample.php).
_HERE = ("_here", "-here", " here")
_SAMPLE_WORD = re.compile(r"(?:^|[_-])(?:dummy|fake|sample|foobar)(?:$|[_-])")
# A value that names what belongs there instead of being it: PASSWORD, YOUR_TOKEN, DB_PASS.
# Either of the two above, in one scan of the value.
_MARK_OR_SAMPLE = re.compile(f"{_MARK.pattern}|{_SAMPLE_WORD.pattern}")
_NAMING_VALUE = re.compile(r"[A-Z][A-Z_]{1,40}")
_WORD_VALUES = {
    "password",
    "passwd",
    "pass",
    "pwd",
    "pw",
    "secret",
    "token",
    "key",
    "apikey",
    "api_key",
    "changeit",
    "hunter2",
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
}

# A reference to a value held elsewhere: ${PW}, $PW, $(cmd), %PW%, %s, {{ pw }}, {pw}, <password>, [password].
# Shell and batch variables are one case (gitleaks' rule), so "$ecretPa55" is a password, not a variable.
_TEMPLATE = re.compile(
    r"\$\{[^{}]{1,80}\}|\$\([^()]{1,80}\)|\$(?:[A-Z_][A-Z0-9_]{0,60}|[a-z_][a-z0-9_]{0,60})|\$\d{1,2}|"
    r"%(?:[A-Z_][A-Z0-9_]{0,60}|[a-z_][a-z0-9_]{0,60})%|%(?:\([\w.]{1,40}\))?[-+# 0]?\d*[sdrfx]|"
    r"\{\{.{0,200}\}\}|\$\{\{.{0,200}\}\}|\{[\w.]{0,40}\}|<%.{0,200}%>|<[^<>]{1,60}>|\[[^\[\]]{1,60}\]|"
    r"\*+|#+|\.+|-+|_+|\?+"
)
_TEMPLATE_STARTS = ("${", "{{", "<%", "$(", "%(")
_TEMPLATE_FIRST = frozenset("$%{<[*#.-_?")  # every template above starts with one of these
# Code where a value should be: os.environ[...], process.env.X, getenv("X"), a call.
_CODE_STARTS = ("process.env", "os.environ", "os.getenv", "getenv", "env(", "env.", "environ", "secrets.", "vars.")


# Placeholders are typed by hand: a longer value is data, whatever it contains.
_LONGEST_PLACEHOLDER = 200


def shannon_entropy(value: str) -> float:
    """Bits per character, as gitleaks computes it for a rule's entropy limit."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def is_placeholder(value: str) -> bool:
    """A value written to be replaced, not a real secret."""
    if not value:
        return True
    if len(value) > _LONGEST_PLACEHOLDER:
        return len(set(value[:64])) == 1 and len(set(value)) == 1
    low = value.lower()
    if low in _WORD_VALUES or len(set(value)) == 1:
        return True
    if _NAMING_VALUE.fullmatch(value) and "_" in value or value in ("PASSWORD", "SECRET", "TOKEN", "KEY", "PASS"):
        return True
    return low.endswith(_HERE) or _angle_placeholder(value) or _MARK_OR_SAMPLE.search(low) is not None


def _angle_placeholder(value: str) -> bool:
    if "<" not in value:
        return False
    rest, names = _ANGLE_NAME.subn("", value)
    return names > 0 and _MATERIAL.search(rest) is None


def is_template(value: str) -> bool:
    """A reference to a value held elsewhere (a variable, a template, code), not a value."""
    if braced_value(value):
        return False
    if value[:1] in _TEMPLATE_FIRST and (_TEMPLATE.fullmatch(value) is not None or value.startswith(_TEMPLATE_STARTS)):
        return True
    if value.startswith("arn:") and _ARN.match(value):
        return True  # an AWS resource name (a KMS key's, a Secrets Manager secret's) says where, not what
    return value[:32].lower().startswith(_CODE_STARTS)  # short prefixes: lower-casing a long value costs its length


_ARN = re.compile(r"arn:aws[a-z-]{0,12}:[a-z0-9-]{1,40}:[a-z0-9-]{0,30}:[0-9]{0,12}:\S")


def kept_value(value: str) -> bool:
    """True when ``value`` must stay: a placeholder or a reference."""
    return is_placeholder(value) or is_template(value)


_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_SYMBOL = re.compile(r"[!@#$%^&*_\-+=/~.]")


def has_digit(value: str) -> bool:
    return _DIGIT.search(value) is not None


def has_digit_and_letter(value: str) -> bool:
    return has_digit(value) and _LETTER.search(value) is not None


def looks_generated(value: str) -> bool:
    """A digit or a symbol, or a word in braces no naming style makes: unlike an ordinary word or a type name."""
    return len(value) >= 6 and (has_digit(value) or _SYMBOL.search(value) is not None or braced_value(value))


_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_STRONG_SYMBOL = re.compile(r"[!@#$%^&*+=~?]")


def looks_random(value: str) -> bool:
    """Stricter than ``looks_generated``, for a value with no operator to vouch for it (a table cell, a line's
    second word, a call's argument): a digit, a symbol no path or name has, punctuation in a mixed-case word, or a
    passphrase. "kubernetes.io/tls", "not-set", "dev-secret-key" and "Passwort" are words."""
    if len(value) < 6:
        return False
    if has_digit(value) or _STRONG_SYMBOL.search(value) or looks_passphrase(value):
        return True
    return _SYMBOL.search(value) is not None and _UPPER.search(value) is not None and _LOWER.search(value) is not None


def looks_like_credential(token: str) -> bool:
    """Long enough, with a digit or mixed case: a token, not a word after "Bearer" or "Authorization:"."""
    return len(token) >= 16 and (has_digit(token) or (token.lower() != token and token.upper() != token))


def decodes_to_credentials(blob: str) -> bool:
    """Base64 of "user:password" (a Basic auth token, Docker's "auth"); prose and other data don't decode to that."""
    try:
        decoded = base64.b64decode(blob, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


# A generated passphrase: three or more lower-case words of four letters or more joined by one separator
# (maple.pepper.summer, tiger-falcon-orchid), as password managers and diceware make them. An attribute chain or a
# setting's key names what it holds (settings.database.password, kubernetes.io/tls, dev-secret-key): a part that
# names a secret, or a short part (self, db, io, env), makes it a name.
_PASSPHRASE = re.compile(r"[a-z]{4,12}(?P<sep>[.-])[a-z]{4,12}(?:(?P=sep)[a-z]{4,12}){1,6}")
_NAME_PART = re.compile(r"key|secret|token|pass|pwd|credential|auth|user|name|config|setting|option|param|environ")


def looks_passphrase(value: str) -> bool:
    return _PASSPHRASE.fullmatch(value) is not None and _NAME_PART.search(value) is None


# A word in braces is a template's field ({password}, {db_user}, {0}, {userName}) when it is shaped like a name;
# a mixed-case run that no naming style makes ({KsKeRZyjtbgUF}, {PgTeB1IGO3MITtVD}) is a value that starts with a
# brace.
_NAME_SHAPED = re.compile(
    r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*|[A-Z_][A-Z0-9_]*|[a-z]+(?:[A-Z][a-z0-9]+)+|(?:[A-Z][a-z0-9]+)+|\d*"
)
_BRACED_WORD = re.compile(r"\{?(?P<word>[A-Za-z0-9]{8,60})\}?")


def braced_value(value: str) -> bool:
    """``{word}`` or ``{word`` whose word no naming style makes: a value, not a template or a literal."""
    m = _BRACED_WORD.fullmatch(value)
    return m is not None and value[:1] == "{" and _NAME_SHAPED.fullmatch(m.group("word")) is None
