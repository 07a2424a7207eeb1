"""The scrubber: removes secrets and PII from text before anything is stored.

Every rule is one linear-time regular expression (each pattern that has no literal prefix starts with
a negative lookbehind on its own character class, so a run of candidate characters is scanned once,
not once per position) plus, where a shape alone is ambiguous, a small validator that decides from the
match and its neighbourhood. The whole text is always scrubbed; nothing is cut.

Secrets become ``[REDACTED:<kind>]``; PII becomes ``[EMAIL]``, ``[IP]``, ``[PHONE]`` and home folders
keep their shape (``/home/[USER]/...``). Placeholders never match any rule, so scrubbing is idempotent.

>>> scrub("mail me at ada@corp.io").text
'mail me at [EMAIL]'
>>> describe({"home_path": 2, "openai_key": 1})
'2 paths · 1 secret'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
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
    return PII_PLACEHOLDERS.get(kind) or f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Scrubbed:
    text: str
    removed: dict[str, int] = field(default_factory=dict, hash=False)


# A replacer gets the match and returns the replacement, or None to leave the match as it is.
Replacer = Callable[[re.Match], "str | None"]


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern
    replace: Replacer


TOKEN_CHARS = "A-Za-z0-9_-"
NOT_AFTER_TOKEN = f"(?<![{TOKEN_CHARS}])"
NOT_BEFORE_TOKEN = f"(?![{TOKEN_CHARS}])"


def _has_digit_or_upper(s: str) -> bool:
    return any(c.isdigit() or c.isupper() for c in s)


def _has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _whole(kind: str, check: Callable[[str], bool] | None = None) -> Replacer:
    """Replace the whole match (optionally only when ``check`` accepts it)."""
    def replace(m: re.Match) -> str | None:
        return placeholder(kind) if check is None or check(m.group(0)) else None
    return replace


def _group(kind: str, group: str, check: Callable[[re.Match], bool] | None = None) -> Replacer:
    """Replace only the named group, keeping the rest of the match (a key name, a scheme, quotes)."""
    def replace(m: re.Match) -> str | None:
        if check is not None and not check(m):
            return None
        start, end = m.span(group)
        whole = m.group(0)
        base = m.start()
        return whole[: start - base] + placeholder(kind) + whole[end - base:]
    return replace


# --- secrets of a known format -------------------------------------------------------------------------

_PEM_LABEL = r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_BEGIN = re.compile(_PEM_LABEL)
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A truncated block (no END line): the BEGIN line plus the base64 / header lines that follow it.
# Every repetition starts with a newline, so the loop is unambiguous.
_PEM_BODY = re.compile(r"(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]{1,40}:[^\n]{0,200})[ \t]*)*")


def _scrub_private_keys(text: str) -> tuple[str, int]:
    """PEM private keys, whole block. Done by hand so that many BEGINs without an END stay linear."""
    out, pos, found = [], 0, 0
    end_free_from = None  # once no END exists after some offset, don't look for one again
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = None if end_free_from is not None else _PEM_END.search(text, begin.end())
        if end is None:
            end_free_from = begin.end()
            stop = _PEM_BODY.match(text, begin.end()).end()
        else:
            stop = end.end()
        out.append(text[pos:begin.start()])
        out.append(placeholder("private_key"))
        found += 1
        pos = stop
    out.append(text[pos:])
    return "".join(out), found


def _aws_secret_in_context(m: re.Match) -> bool:
    value = m.group(0)
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return False
    before = m.string[max(0, m.start() - 80): m.start()].lower()
    return "aws" in before or "secret" in before or "akia" in before or "[redacted:aws_access_key]" in before


def _bearer_token(m: re.Match) -> bool:
    token = m.group("token")
    return len(token) >= 16 and (any(c.isdigit() for c in token) or (token.lower() != token and token.upper() != token))


_TEMPLATE_VALUES = {"none", "null", "nil", "true", "false", "undefined", "str", "string", "int", "bytes", "optional",
                    "secretstr", "required", "changeme?", "..."}


def _url_password(m: re.Match) -> bool:
    password = m.group("password")
    return not (password[0] in "$<{%*" or set(password) <= set("*x.") or password.lower() in _TEMPLATE_VALUES)


SECRET_RULES: tuple[Rule, ...] = (
    Rule("anthropic_key", re.compile(NOT_AFTER_TOKEN + r"sk-ant-[A-Za-z0-9_-]{20,}"), _whole("anthropic_key")),
    Rule("openai_key",
         re.compile(NOT_AFTER_TOKEN + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
         _whole("openai_key", _has_digit_or_upper)),
    Rule("hf_token", re.compile(NOT_AFTER_TOKEN + r"hf_[A-Za-z0-9]{30,}" + NOT_BEFORE_TOKEN),
         _whole("hf_token", _has_digit_or_upper)),
    Rule("github_token",
         re.compile(NOT_AFTER_TOKEN + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})"
                    + NOT_BEFORE_TOKEN),
         _whole("github_token", _has_digit_or_upper)),
    Rule("aws_access_key",
         re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
         _whole("aws_access_key")),
    Rule("slack_token",
         re.compile(NOT_AFTER_TOKEN + r"(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})"),
         _whole("slack_token", lambda s: any(c.isdigit() for c in s))),
    Rule("slack_token",
         re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[A-Za-z0-9_/-]{8,})"),
         _group("slack_token", "path")),
    Rule("stripe_key", re.compile(NOT_AFTER_TOKEN + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}" + NOT_BEFORE_TOKEN),
         _whole("stripe_key", _has_digit_or_upper)),
    Rule("google_api_key", re.compile(NOT_AFTER_TOKEN + r"AIza[A-Za-z0-9_-]{35}" + NOT_BEFORE_TOKEN),
         _whole("google_api_key")),
    Rule("telegram_bot_token", re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + NOT_BEFORE_TOKEN),
         _whole("telegram_bot_token")),
    Rule("jwt",
         re.compile(NOT_AFTER_TOKEN + r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
         _whole("jwt")),
    Rule("bearer", re.compile(r"(?i:\bbearer)[ \t]+(?P<token>[A-Za-z0-9._~+/-]+=*)"), _group("bearer", "token", _bearer_token)),
    Rule("url_password",
         re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@\[\]]{1,128}:"
                    r"(?!\[REDACTED)(?P<password>[^\s/@]{1,256})@"),
         _group("url_password", "password", _url_password)),
    Rule("aws_secret_key", re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
         lambda m: placeholder("aws_secret_key") if _aws_secret_in_context(m) else None),
)


# --- KEY=value assignments -----------------------------------------------------------------------------

_STRONG_NAME = re.compile(
    r"(?i)(?:\w*_)?(?:api_?key|apikey|secret|secret_?key|client_?secret|token|access_?token|auth_?token|"
    r"refresh_?token|bot_?token|password|passwd|pwd|passphrase|private_?key|access_?key|secret_?access_?key|"
    r"credentials?)"
)
_UPPER_KEY_NAME = re.compile(r"[A-Z][A-Z0-9_]*_KEY")
_LOWER_KEY_NAME = re.compile(r"(?i)\w*_key")
_EXPRESSION = re.compile(r"[A-Za-z_][\w]*(?:\.[\w]+)+|[A-Za-z_][\w.]*[(\[]")

_ASSIGNMENT = re.compile(
    r"(?<![\w.-])(?P<q>[\"']?)(?P<name>[A-Za-z_][A-Za-z0-9_]{0,80})(?P=q)[ \t]*(?::|=|:=)[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,512})\"|'(?P<sq>[^'\n]{1,512})'|(?P<bare>[^\s\"'`,;]{1,512}))"
)


def _placeholder_like(value: str) -> bool:
    low = value.lower()
    return (
        value[0] in "$%<{[*#"
        or low in _TEMPLATE_VALUES
        or len(set(value)) == 1
        or low.startswith(("your", "process.env", "os.environ", "os.getenv", "getenv", "env("))
    )


def _env_value(m: re.Match) -> str | None:
    """Which group holds a secret value, or None when this assignment is not one."""
    name = m.group("name")
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    value = m.group(group)
    if _placeholder_like(value):
        return None
    strong = _STRONG_NAME.fullmatch(name) is not None or _UPPER_KEY_NAME.fullmatch(name) is not None
    if not strong:
        if _LOWER_KEY_NAME.fullmatch(name) is None:
            return None
        return group if len(value) >= 16 and _has_digit_and_letter(value) and " " not in value else None
    if group == "bare":
        if _EXPRESSION.match(value):
            return None  # code: tokenizer.eos_token, os.environ[...], get_token()
        if name.islower() and re.fullmatch(r"[a-z_]+", value):
            return None  # code: token = response
        if value.isdigit() and "pass" not in name.lower() and "pwd" not in name.lower():
            return None  # MAX_TOKEN=4096
    return group


def _replace_env(m: re.Match) -> str | None:
    group = _env_value(m)
    return None if group is None else _group("env_secret", group)(m)


ENV_RULE = Rule("env_secret", _ASSIGNMENT, _replace_env)


# --- PII -----------------------------------------------------------------------------------------------

_FILE_SUFFIXES = {"png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "js", "ts", "tsx", "jsx", "css", "json",
                  "md", "txt", "html", "py", "rs", "go", "lock", "yaml", "yml", "toml"}


def _email(m: re.Match) -> str | None:
    local, domain = m.group(0).rsplit("@", 1)
    if local.lower() == "git" or domain.rsplit(".", 1)[1].lower() in _FILE_SUFFIXES:
        return None  # git@github.com:org/repo, icon@2x.png
    return placeholder("email")


_DOC_NETS = tuple(ipaddress.ip_network(n) for n in
                  ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "127.0.0.0/8"))
_VERSION_CONTEXT = re.compile(r"(?i)(?:version|ver|release|build|rev|v|==|>=|<=|~=|!=|\^|~)[ \t]*[:=]?[ \t]*$")


def _ip(m: re.Match) -> str | None:
    candidate = m.group(0)
    try:
        address = ipaddress.ip_address(candidate.split("%", 1)[0])
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified or any(address in net for net in _DOC_NETS
                                                             if net.version == address.version):
        return None
    if address.version == 4:
        if candidate.startswith("255.") or _VERSION_CONTEXT.search(m.string, max(0, m.start() - 24), m.start()):
            return None
    else:
        groups = [g for g in candidate.split(":") if g]
        if len(groups) < 2 or max(len(g) for g in groups) < 3 or not any(c.isdigit() for c in candidate):
            return None  # a[1::2], dead::beef, std::map
    return placeholder("ip")


def _phone(m: re.Match) -> str | None:
    digits = sum(c.isdigit() for c in m.group(0))
    return placeholder("phone") if 8 <= digits <= 15 else None


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HEX = "[0-9A-Fa-f]"

PII_RULES: tuple[Rule, ...] = (
    Rule("email",
         re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9][A-Za-z0-9-]{0,62}"
                    r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"),
         _email),
    Rule("home_path",
         re.compile(r"(?<![\w.~-])(?:/home/|/Users/|[A-Za-z]:(?:\\{1,2}|/)Users(?:\\{1,2}|/))"
                    r"(?P<user>(?!(?:Shared|Public|Default|All Users)(?![\w.-]))[A-Za-z0-9._-]{1,64})(?![A-Za-z0-9._-])"),
         lambda m: None if m.group("user") in (".", "..") else
         m.group(0)[: m.start("user") - m.start()] + USER_PLACEHOLDER),
    Rule("ip", re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.[0-9])"), _ip),
    Rule("ip", re.compile(rf"(?<![\w:.])(?:{_HEX}{{0,4}}:){{2,7}}{_HEX}{{0,4}}(?:%[A-Za-z0-9]{{1,15}})?(?![\w:])"), _ip),
    Rule("phone",
         re.compile(r"(?<![\w+])\+[0-9]{1,3}(?:[ .-]?\([0-9]{1,4}\))?(?:[ .-][0-9]{1,8}){1,5}(?![\w]|[.-][0-9])"),
         _phone),
    Rule("phone", re.compile(r"(?<![\w+])\+[0-9]{8,15}(?![\w]|[.-][0-9])"), _phone),
    Rule("phone",
         re.compile(r"(?<![\w+.-])(?:1[ .-])?(?:\([0-9]{3}\)[ ]?|[0-9]{3}[.-])[0-9]{3}[.-][0-9]{4}(?![\w]|[.-][0-9])"),
         _phone),
)

RULES: tuple[Rule, ...] = SECRET_RULES + (ENV_RULE,) + PII_RULES


# --- public API ----------------------------------------------------------------------------------------

def _apply(text: str, rules: tuple[Rule, ...], with_private_keys: bool) -> Scrubbed:
    removed: dict[str, int] = {}
    if with_private_keys and "-----BEGIN" in text:
        text, found = _scrub_private_keys(text)
        if found:
            removed["private_key"] = found
    for rule in rules:
        hits = 0

        def substitute(m: re.Match, rule: Rule = rule) -> str:
            nonlocal hits
            replacement = rule.replace(m)
            if replacement is None:
                return m.group(0)
            hits += 1
            return replacement

        text = rule.pattern.sub(substitute, text)
        if hits:
            removed[rule.kind] = removed.get(rule.kind, 0) + hits
    return Scrubbed(text, removed)


def scrub(text: str) -> Scrubbed:
    """The text with every secret and PII match replaced by a typed placeholder, and counts per kind."""
    if not text:
        return Scrubbed(text or "", {})
    return _apply(text, RULES, with_private_keys=True)


def find_leaks(text: str) -> dict[str, int]:
    """Secrets of a known format still present in ``text`` (what the audit stage fails on)."""
    if not text:
        return {}
    rules = tuple(r for r in SECRET_RULES if r.kind in LEAK_KINDS)
    return _apply(text, rules, with_private_keys=True).removed


def merge_counts(*counts: dict[str, int] | None) -> dict[str, int]:
    merged: dict[str, int] = {}
    for c in counts:
        for kind, n in (c or {}).items():
            if n:
                merged[kind] = merged.get(kind, 0) + n
    return merged


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


_GROUPS = (("email", "email", "emails"), ("ip", "IP", "IPs"), ("phone", "phone", "phones"),
           ("home_path", "path", "paths"))


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
