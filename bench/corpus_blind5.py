# ruff: noqa: E501
"""Blind corpus v5: developer pastes with secrets and personal data, written without reading the scrubber.

Every secret, token, card, IBAN, SSN, phone, e-mail, name and user path is assembled at run time from the
seeded ``random.Random`` passed to each generator, so the source holds no literal realistic secret. The
only literal "secrets" are documented fakes (AKIAIOSFODNN7EXAMPLE, the Stripe test cards), and those are
things the scrubber must keep.

Each generator returns a ``Paste`` with ``must_go`` (kind, exact substring that must be removed) and
``must_stay`` (exact substrings a developer needs kept, chosen to be near-misses of secrets).
"""

from __future__ import annotations

import base64
import json
import random
import string
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Paste:
    shape: str  # which generator made it
    text: str  # the paste as a user would send it to an assistant
    must_go: list[tuple[str, str]] = field(default_factory=list)  # (kind, exact substring that must be removed)
    must_stay: list[str] = field(default_factory=list)  # exact substrings that must survive


KINDS = (
    "password",
    "api_key",
    "token",
    "private_key",
    "connection_string_password",
    "email",
    "phone",
    "card",
    "iban",
    "ssn",
    "home_path_user",
    "person_name",
)


class _B:
    """Collects must_go / must_stay while a generator writes its text; returns the value for inlining."""

    def __init__(self) -> None:
        self.go: list[tuple[str, str]] = []
        self.stay: list[str] = []

    def g(self, kind: str, value: str) -> str:
        assert kind in KINDS, kind
        if (kind, value) not in self.go:
            self.go.append((kind, value))
        return value

    def s(self, value: str) -> str:
        if value not in self.stay:
            self.stay.append(value)
        return value


SHAPES: dict[str, Callable[[random.Random], Paste]] = {}


def _shape(name: str):
    def deco(fn: Callable[[random.Random, _B], str]) -> Callable[[random.Random], Paste]:
        def make(r: random.Random) -> Paste:
            b = _B()
            text = fn(r, b)
            return Paste(shape=name, text=text, must_go=b.go, must_stay=b.stay)

        make.__name__ = f"make_{name}"
        SHAPES[name] = make
        return make

    return deco


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    r = random.Random(seed)
    makers = list(SHAPES.values())
    return [makers[i % len(makers)](r) for i in range(n)]


# --------------------------------------------------------------------------------------------------
# random building blocks
# --------------------------------------------------------------------------------------------------
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIG = string.digits
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
B32 = UPPER + "234567"


def rs(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        # random bodies that look like secrets: mixed classes when the alphabet allows it
        has_digits = any(c.isdigit() for c in alphabet)
        if (
            n < 8
            or alphabet in (HEX, DIG)
            or not has_digits
            or (any(c.isdigit() for c in s) and any(c.isalpha() for c in s))
        ):
            return s


def hexs(r: random.Random, n: int) -> str:
    return rs(r, n, HEX)


def digits(r: random.Random, n: int) -> str:
    return str(r.randint(1, 9)) + "".join(r.choice(DIG) for _ in range(n - 1))


def b64bytes(r: random.Random, n: int, urlsafe: bool = False) -> str:
    raw = bytes(r.getrandbits(8) for _ in range(n))
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def b64u_nopad(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# ---- things that must stay (near-misses) ----
def uuid4(r: random.Random) -> str:
    h = hexs(r, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


def sha40(r: random.Random) -> str:
    return hexs(r, 40)


def digest(r: random.Random) -> str:
    return "sha256:" + hexs(r, 64)


def integrity(r: random.Random) -> str:
    return "sha512-" + b64bytes(r, 64)


def ver(r: random.Random) -> str:
    return f"{r.randint(0, 6)}.{r.randint(0, 40)}.{r.randint(0, 25)}"


def ts(r: random.Random) -> str:
    return f"{r.randint(2024, 2026)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"


def ts_ms(r: random.Random) -> str:
    return f"{r.randint(2024, 2026)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d}"


def ip_priv(r: random.Random) -> str:
    return r.choice(
        [
            f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
            f"192.168.{r.randint(0, 255)}.{r.randint(2, 254)}",
            f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
        ]
    )


def ip_pub(r: random.Random) -> str:
    return f"{r.choice([34, 35, 52, 54, 18, 3, 104, 151, 185])}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"


PLACEHOLDERS = [
    "<your-token>",
    "<YOUR_API_KEY>",
    "xxxx",
    "xxxxxxxxxxxxxxxx",
    "changeme",
    "${DB_PASSWORD}",
    "${{ secrets.DEPLOY_TOKEN }}",
    "{{ vault_db_password }}",
    "REPLACE_ME",
    "********",
    "$(cat /run/secrets/db_password)",
    "<password>",
    "your-api-key-here",
    "sk_test_placeholder",
    "%DB_PASS%",
]

AWS_DOC_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TEST_CARDS = [
    "4242 4242 4242 4242",
    "4242424242424242",
    "4000 0000 0000 0002",
    "5555 5555 5555 4444",
    "4000000000009995",
]

DB_HOSTS = [
    "db-prod-01.internal.acme.io",
    "pg-main.c9akciq32.eu-central-1.rds.amazonaws.com",
    "mysql-replica.svc.cluster.local",
    "orders-db.postgres.database.azure.com",
    "10.20.3.14",
    "cluster0.x7pqa.mongodb.net",
    "redis-cache.k8s.local",
    "analytics.cxk2m1.us-east-1.redshift.amazonaws.com",
]
PUBLIC_HOSTS = [
    "api.github.com",
    "registry.npmjs.org",
    "pypi.org",
    "ghcr.io",
    "hooks.slack.com",
    "api.stripe.com",
    "api.openai.com",
    "storage.googleapis.com",
    "smtp.sendgrid.net",
    "gitlab.com",
    "huggingface.co",
    "login.microsoftonline.com",
]
PKGS = [
    "requests",
    "fastapi",
    "sqlalchemy",
    "boto3",
    "express",
    "axios",
    "lodash",
    "next",
    "django",
    "pydantic",
    "tokio",
    "serde",
    "gin",
    "spring-boot-starter-web",
    "rails",
    "laravel/framework",
]
FUNCS = [
    "get_secret_value",
    "verify_password",
    "load_credentials",
    "refresh_access_token",
    "hash_password",
    "rotate_api_key",
    "getTokenFromEnv",
    "resolvePassword",
    "parse_dsn",
    "TokenProvider.fetch",
]
ERRCODES = [
    "ECONNREFUSED",
    "ERR_SSL_PROTOCOL_ERROR",
    "SQLSTATE 28P01",
    "ORA-01017",
    "HTTP 401",
    "InvalidClientTokenId",
    "AccessDenied",
    "ETIMEDOUT",
    "error code 1045",
    "ENOTFOUND",
    "x509: certificate signed by unknown authority",
    "403 Forbidden",
]

# ---- people ----
PEOPLE = {
    "pt": (
        ["Ana", "João", "Beatriz", "Rafael", "Mariana", "Thiago", "Larissa"],
        ["Souza", "Pereira", "Almeida", "Costa", "Oliveira", "Carvalho", "Ribeiro"],
    ),
    "de": (
        ["Lukas", "Jana", "Felix", "Katrin", "Tobias", "Anja", "Matthias"],
        ["Becker", "Hoffmann", "Schröder", "Vogel", "Krüger", "Weber", "Neumann"],
    ),
    "fr": (
        ["Camille", "Léa", "Julien", "Émilie", "Hugo", "Mathieu", "Chloé"],
        ["Dubois", "Lefèvre", "Moreau", "Garnier", "Fontaine", "Rousseau", "Girard"],
    ),
    "es": (
        ["Diego", "Lucía", "Javier", "Carmen", "Pablo", "Marta", "Álvaro"],
        ["Fernández", "Morales", "Ruiz", "Navarro", "Ortega", "Jiménez", "Castillo"],
    ),
    "ja": (
        ["Yuki", "Hiroshi", "Aiko", "Kenji", "Mei", "Takumi", "Sakura"],
        ["Tanaka", "Sato", "Yamamoto", "Watanabe", "Kobayashi", "Nakamura", "Ito"],
    ),
    "en": (
        [
            "Grace",
            "Marcus",
            "Olivia",
            "Ethan",
            "Priya",
            "Wei",
            "Kwame",
            "Fatima",
            "Tomasz",
            "Ingrid",
            "Rahul",
            "Nadia",
            "Omar",
            "Chinedu",
            "Sven",
            "Linh",
            "Declan",
            "Shauna",
        ],
        [
            "Whitfield",
            "Brennan",
            "Hartley",
            "Caldwell",
            "Raman",
            "Zhang",
            "Mensah",
            "Haddad",
            "Kowalski",
            "Lindqvist",
            "Mehta",
            "Petrova",
            "Farouk",
            "Okafor",
            "Andersen",
            "Nguyen",
            "O'Sullivan",
            "McAllister",
        ],
    ),
}
KANJI_NAMES = (
    ["田中", "佐藤", "鈴木", "高橋", "伊藤", "渡辺", "山本"],
    ["太郎", "花子", "一郎", "美咲", "健太", "陽菜", "翔太"],
)


def person(r: random.Random, culture: str | None = None) -> tuple[str, str]:
    culture = culture or r.choice(list(PEOPLE))
    firsts, lasts = PEOPLE[culture]
    return r.choice(firsts), r.choice(lasts)


def ascii_fold(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if c.isascii() and (c.isalnum() or c in ".-_")).lower()


def username(r: random.Random, first: str, last: str) -> str:
    f, la = ascii_fold(first), ascii_fold(last)
    return r.choice(
        [f"{f[0]}{la}", f"{f}.{la}", f"{f}{la[0]}", f"{f}_{la}", f"{f}{la}{r.randint(1, 99)}", f"{la}{f[0]}"]
    )


PERSONAL_DOMAINS = [
    "gmail.com",
    "outlook.com",
    "yahoo.com",
    "hotmail.com",
    "protonmail.com",
    "icloud.com",
    "web.de",
    "gmx.de",
    "orange.fr",
    "free.fr",
    "hotmail.es",
    "yahoo.co.jp",
    "uol.com.br",
    "bol.com.br",
    "fastmail.com",
]
WORK_DOMAINS = [
    "northwind-logistics.com",
    "acme-robotics.io",
    "brightpath.de",
    "kestrel-health.co.uk",
    "lumenpay.fr",
    "tierra-verde.es",
    "hikari-systems.jp",
    "cobalt-fintech.com.br",
    "quantiq.ai",
    "harborline.com",
]


def email(r: random.Random, first: str, last: str, work: bool | None = None) -> str:
    f, la = ascii_fold(first), ascii_fold(last)
    local = r.choice(
        [
            f"{f}.{la}",
            f"{f[0]}{la}",
            f"{f}{la[0]}",
            f"{f}_{la}{r.randint(1, 99)}",
            f"{la}.{f}",
            f"{f}.{la}+{r.choice(['github', 'dev', 'billing'])}",
        ]
    )
    if work is None:
        work = r.random() < 0.5
    return f"{local}@{r.choice(WORK_DOMAINS if work else PERSONAL_DOMAINS)}"


# ---- phones in national formats ----
def phone(r: random.Random, country: str | None = None) -> str:
    c = country or r.choice(["us", "uk", "de", "fr", "es", "jp", "br", "in", "nl", "it", "pt"])
    d = lambda n: "".join(r.choice(DIG) for _ in range(n))  # noqa: E731
    if c == "us":
        area = r.choice(["212", "415", "312", "617", "206", "512", "303", "404", "646", "718", "305", "917"])
        ex = f"{r.randint(2, 9)}{r.choice('0123456789')}{r.choice('0123456789')}"
        if ex == "555":
            ex = "556"
        num = d(4)
        return r.choice(
            [
                f"({area}) {ex}-{num}",
                f"+1 {area}-{ex}-{num}",
                f"{area}.{ex}.{num}",
                f"+1 ({area}) {ex} {num}",
                f"{area}-{ex}-{num}",
            ]
        )
    if c == "uk":
        return r.choice(
            [
                f"+44 7{d(3)} {d(6)}",
                f"07{d(3)} {d(6)}",
                f"+44 (0)20 {r.randint(3, 8)}{d(3)} {d(4)}",
                f"0161 {r.randint(2, 9)}{d(2)} {d(4)}",
            ]
        )
    if c == "de":
        return r.choice(
            [
                f"+49 15{r.randint(1, 9)} {d(8)}",
                f"01{r.choice(['51', '60', '70', '76'])} {d(4)} {d(4)}",
                f"+49 (0)30 {d(8)}",
                f"089/{d(7)}",
                f"+49 40 {d(3)} {d(4)}",
            ]
        )
    if c == "fr":
        p = [d(2) for _ in range(4)]
        return r.choice(
            [
                f"+33 {r.choice('67')} {' '.join(p)}",
                f"0{r.choice('67')} {' '.join(p)}",
                f"01.{'.'.join(p)}",
                f"+33 (0)1 {' '.join(p)}",
            ]
        )
    if c == "es":
        return r.choice(
            [f"+34 6{d(2)} {d(3)} {d(3)}", f"6{d(2)} {d(2)} {d(2)} {d(2)}", f"+34 91 {d(3)} {d(2)} {d(2)}"]
        )
    if c == "jp":
        return r.choice(
            [
                f"090-{d(4)}-{d(4)}",
                f"080-{d(4)}-{d(4)}",
                f"+81 90-{d(4)}-{d(4)}",
                f"03-{d(4)}-{d(4)}",
                f"06-{d(4)}-{d(4)}",
            ]
        )
    if c == "br":
        return r.choice(
            [f"+55 11 9{d(4)}-{d(4)}", f"(11) 9{d(4)}-{d(4)}", f"+55 (21) 9{d(4)}-{d(4)}", f"(31) 3{d(3)}-{d(4)}"]
        )
    if c == "in":
        return r.choice([f"+91 9{d(4)} {d(5)}", f"+91-9{d(9)}", f"09{d(4)} {d(5)}"])
    if c == "nl":
        return r.choice([f"+31 6 {d(8)}", f"06-{d(8)}", f"+31 20 {d(3)} {d(4)}"])
    if c == "it":
        return r.choice([f"+39 3{d(2)} {d(3)} {d(4)}", f"3{d(2)} {d(7)}", f"+39 02 {d(4)} {d(4)}"])
    return r.choice([f"+351 9{r.choice('1236')}{d(1)} {d(3)} {d(3)}", f"9{r.choice('1236')}{d(1)} {d(3)} {d(3)}"])


# ---- cards (Luhn-valid) ----
def _luhn_check(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        n = int(ch)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return str((10 - total % 10) % 10)


def luhn_ok(num: str) -> bool:
    ds = [int(c) for c in num if c.isdigit()]
    total = 0
    for i, n in enumerate(reversed(ds)):
        if i % 2 == 1:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def card(r: random.Random, brand: str | None = None, fmt: str | None = None) -> str:
    brand = brand or r.choice(["visa", "visa", "mc", "mc2", "amex", "disc"])
    while True:
        if brand == "visa":
            prefix, length = "4" + r.choice(["147", "539", "916", "024", "485", "716", "263", "001"]), 16
        elif brand == "mc":
            prefix, length = str(r.randint(51, 55)), 16
        elif brand == "mc2":
            prefix, length = str(r.randint(2221, 2720)), 16
        elif brand == "amex":
            prefix, length = r.choice(["34", "37"]), 15
        else:
            prefix, length = "6011", 16
        body = prefix + "".join(r.choice(DIG) for _ in range(length - 1 - len(prefix)))
        num = body + _luhn_check(body)
        if num not in {c.replace(" ", "") for c in TEST_CARDS} and len(set(num[4:])) > 3:
            break
    fmt = fmt or r.choice(["space", "space", "dash", "plain"])
    if fmt == "plain":
        return num
    sep = " " if fmt == "space" else "-"
    if length == 15:
        return sep.join([num[:4], num[4:10], num[10:]])
    return sep.join(num[i : i + 4] for i in range(0, 16, 4))


# ---- IBANs (mod-97 valid) ----
_IBAN_SPEC = {
    "DE": [("n", 18)],
    "FR": [("n", 10), ("c", 11), ("n", 2)],
    "ES": [("n", 20)],
    "GB": [("bank", 4), ("n", 14)],
    "NL": [("bank", 4), ("n", 10)],
    "IT": [("a", 1), ("n", 10), ("c", 12)],
    "PT": [("n", 21)],
    "BE": [("n", 12)],
    "AT": [("n", 16)],
    "CH": [("n", 5), ("c", 12)],
}
_BANKS = {"GB": ["NWBK", "BARC", "HBUK", "LOYD", "MIDL"], "NL": ["ABNA", "INGB", "RABO", "TRIO", "SNSB"]}


def iban(r: random.Random, cc: str | None = None, spaced: bool | None = None) -> str:
    cc = cc or r.choice(list(_IBAN_SPEC))
    bban = ""
    for kind, n in _IBAN_SPEC[cc]:
        if kind == "n":
            bban += "".join(r.choice(DIG) for _ in range(n))
        elif kind == "c":
            bban += "".join(r.choice(UPPER + DIG) for _ in range(n))
        elif kind == "a":
            bban += "".join(r.choice(UPPER) for _ in range(n))
        else:
            bban += r.choice(_BANKS[cc])
    rearr = bban + cc + "00"
    numeric = "".join(str(int(ch, 36)) for ch in rearr)
    check = 98 - int(numeric) % 97
    ib = f"{cc}{check:02d}{bban}"
    if spaced is None:
        spaced = r.random() < 0.6
    return " ".join(ib[i : i + 4] for i in range(0, len(ib), 4)) if spaced else ib


def iban_ok(s: str) -> bool:
    s = s.replace(" ", "")
    rearr = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in rearr)) % 97 == 1


# ---- US SSNs (valid ranges) ----
def ssn(r: random.Random, fmt: str = "dash") -> str:
    while True:
        a = r.randint(1, 899)
        if a != 666:
            break
    g, s = r.randint(1, 99), r.randint(1, 9999)
    if fmt == "plain":
        return f"{a:03d}{g:02d}{s:04d}"
    if fmt == "space":
        return f"{a:03d} {g:02d} {s:04d}"
    return f"{a:03d}-{g:02d}-{s:04d}"


# ---- passwords ----
WORDS = [
    "falcon",
    "harbor",
    "maple",
    "orbit",
    "velvet",
    "cactus",
    "tundra",
    "ember",
    "quartz",
    "lagoon",
    "nimbus",
    "saffron",
    "granite",
    "pepper",
    "walrus",
    "meadow",
]


def pw(r: random.Random, safe: str = "!#%^*-_+.?~@&") -> str:
    """A password; `safe` is the punctuation the surrounding syntax tolerates."""
    style = r.random()
    p = r.choice(safe) if safe else ""
    if style < 0.3:
        w = r.choice(WORDS)
        return f"{w.capitalize()}{r.randint(1990, 2026)}{p}"
    if style < 0.5:
        ws = r.sample(WORDS, 3)
        return f"{ws[0]}-{ws[1]}-{ws[2]}-{r.randint(10, 99)}"
    n = r.randint(12, 28)
    alphabet = ALNUM + safe
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s) and (not safe or any(c in safe for c in s)):
            return s


def pw_url(r: random.Random) -> str:
    """A password as it sits in a URL userinfo (unreserved chars plus percent-escapes)."""
    s = pw(r, "-_.~!*")
    if r.random() < 0.35:
        i = r.randint(1, len(s) - 1)
        s = s[:i] + r.choice(["%40", "%23", "%21", "%2F", "%3A", "%24"]) + s[i:]
    return s


# ---- provider tokens (public formats, random bodies) ----
def t_ghp(r):
    return r.choice(["ghp_", "ghp_", "gho_", "ghu_", "ghs_"]) + rs(r, 36)


def t_ghpat(r):
    return "github_pat_11" + rs(r, 20, UPPER + DIG) + "_" + rs(r, 59)


def t_glpat(r):
    return "glpat-" + rs(r, 20, B64URL)


def t_xoxb(r):
    return f"xoxb-{digits(r, 12)}-{digits(r, 13)}-{rs(r, 24)}"


def t_xoxp(r):
    return f"xoxp-{digits(r, 12)}-{digits(r, 12)}-{digits(r, 13)}-{hexs(r, 32)}"


def t_xapp(r):
    return f"xapp-1-A{rs(r, 10, UPPER + DIG)}-{digits(r, 13)}-{hexs(r, 64)}"


def slack_hook_path(r):
    return f"T{rs(r, 9, UPPER + DIG)}/B{rs(r, 10, UPPER + DIG)}/{rs(r, 24)}"


def t_sk_live(r):
    return r.choice(["sk_live_", "sk_live_", "rk_live_"]) + rs(r, r.choice([24, 99]))


def t_whsec(r):
    return "whsec_" + rs(r, 32)


def t_openai(r):
    return r.choice(["sk-proj-", "sk-proj-", "sk-svcacct-"]) + rs(r, 74, B64URL) + "T3BlbkFJ" + rs(r, 74, B64URL)


def t_anthropic(r):
    return "sk-ant-api03-" + rs(r, 93, B64URL) + "AA"


def t_akia(r):
    return r.choice(["AKIA", "AKIA", "ASIA"]) + rs(r, 16, B32)


def t_aws_secret(r):
    return rs(r, 40, ALNUM + "+/")


def t_aws_session(r):
    return "IQoJb3JpZ2luX2Vj" + rs(r, r.randint(300, 420), B64) + "=="


def t_aiza(r):
    return "AIza" + rs(r, 35, B64URL)


def t_ya29(r):
    return "ya29." + rs(r, r.randint(140, 200), B64URL)


def t_gocspx(r):
    return "GOCSPX-" + rs(r, 28, B64URL)


def t_sendgrid(r):
    return "SG." + rs(r, 22, B64URL) + "." + rs(r, 43, B64URL)


def t_twilio_sk(r):
    return "SK" + hexs(r, 32)


def t_npm(r):
    return "npm_" + rs(r, 36)


def t_pypi(r):
    return "pypi-AgEIcHlwaS5vcmc" + rs(r, r.randint(150, 190), B64URL)


def t_hf(r):
    return "hf_" + rs(r, 34, string.ascii_letters)


def t_shopify(r):
    return r.choice(["shpat_", "shpca_", "shppa_"]) + hexs(r, 32)


def t_dop(r):
    return "dop_v1_" + hexs(r, 64)


def t_dapi(r):
    return "dapi" + hexs(r, 32) + r.choice(["", "-2", "-3"])


def t_vault(r):
    return "hvs." + rs(r, 91, B64URL)


def t_docker_pat(r):
    return "dckr_pat_" + rs(r, 27, B64URL)


def t_mailgun(r):
    return "key-" + hexs(r, 32)


def t_telegram(r):
    return f"{r.randint(10**8, 10**10)}:AA{rs(r, 33, B64URL)}"


def t_linear(r):
    return "lin_api_" + rs(r, 40)


def t_supabase(r):
    return "sbp_" + hexs(r, 40)


def t_doppler(r):
    return "dp.st.prd." + rs(r, 43)


def t_atlassian(r):
    return "ATATT3xFfGF0" + rs(r, 170, B64URL) + "=" + hexs(r, 8).upper()


def t_azure_key(r):
    return b64bytes(r, 64)


def t_glrt(r):
    return "glrt-" + rs(r, 20, B64URL)


def jwt(r: random.Random, long: bool = False) -> str:
    header = {"alg": r.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    if header["alg"] != "HS256":
        header["kid"] = rs(r, 16)
    iat = r.randint(1_700_000_000, 1_790_000_000)
    payload = {
        "sub": r.choice([str(r.randint(10**5, 10**9)), uuid4(r)]),
        "iat": iat,
        "exp": iat + r.choice([900, 3600, 86400]),
    }
    if long:
        payload |= {
            "scope": "openid profile email offline_access",
            "aud": "https://api.internal",
            "roles": ["admin", "billing:write"],
            "jti": uuid4(r),
            "azp": rs(r, 32),
        }
    sig_len = 32 if header["alg"] == "HS256" else (64 if header["alg"] == "ES256" else 256)
    return ".".join(
        [
            b64u_nopad(json.dumps(header, separators=(",", ":")).encode()),
            b64u_nopad(json.dumps(payload, separators=(",", ":")).encode()),
            b64u_nopad(bytes(r.getrandbits(8) for _ in range(sig_len))),
        ]
    )


def api_token_generic(r: random.Random) -> str:
    return rs(r, r.choice([32, 40, 48, 64]), r.choice([ALNUM, HEX, B64URL]))


# a pool of (kind, maker, env name, human label) used where any provider key fits
PROVIDERS = [
    ("token", t_ghp, "GITHUB_TOKEN", "GitHub"),
    ("token", t_ghpat, "GH_PAT", "GitHub fine-grained"),
    ("token", t_glpat, "GITLAB_TOKEN", "GitLab"),
    ("token", t_xoxb, "SLACK_BOT_TOKEN", "Slack"),
    ("api_key", t_sk_live, "STRIPE_SECRET_KEY", "Stripe"),
    ("api_key", t_openai, "OPENAI_API_KEY", "OpenAI"),
    ("api_key", t_anthropic, "ANTHROPIC_API_KEY", "Anthropic"),
    ("api_key", t_aiza, "GOOGLE_MAPS_API_KEY", "Google Maps"),
    ("api_key", t_sendgrid, "SENDGRID_API_KEY", "SendGrid"),
    ("api_key", t_twilio_sk, "TWILIO_API_KEY", "Twilio"),
    ("token", t_npm, "NPM_TOKEN", "npm"),
    ("token", t_pypi, "PYPI_TOKEN", "PyPI"),
    ("token", t_hf, "HF_TOKEN", "Hugging Face"),
    ("token", t_shopify, "SHOPIFY_ACCESS_TOKEN", "Shopify"),
    ("token", t_dop, "DIGITALOCEAN_TOKEN", "DigitalOcean"),
    ("token", t_dapi, "DATABRICKS_TOKEN", "Databricks"),
    ("token", t_vault, "VAULT_TOKEN", "Vault"),
    ("token", t_docker_pat, "DOCKERHUB_TOKEN", "Docker Hub"),
    ("api_key", t_mailgun, "MAILGUN_API_KEY", "Mailgun"),
    ("token", t_telegram, "TELEGRAM_BOT_TOKEN", "Telegram"),
    ("api_key", t_linear, "LINEAR_API_KEY", "Linear"),
    ("token", t_supabase, "SUPABASE_ACCESS_TOKEN", "Supabase"),
    ("token", t_doppler, "DOPPLER_TOKEN", "Doppler"),
    ("token", t_atlassian, "JIRA_API_TOKEN", "Jira"),
]


def provider(r: random.Random):
    return r.choice(PROVIDERS)


# ---- private keys ----
def _wrap(s: str, n: int = 64) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)]


def pem_key(r: random.Random, kind: str | None = None) -> tuple[str, str]:
    """Returns (pem text, one body line that must go)."""
    kind = kind or r.choice(["rsa", "pkcs8", "ec", "openssh"])
    rnd = lambda n: bytes(r.getrandbits(8) for _ in range(n))  # noqa: E731
    if kind == "rsa":
        raw, label = bytes.fromhex("308204a40201000282010100") + rnd(1180), "RSA PRIVATE KEY"
    elif kind == "pkcs8":
        raw, label = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7") + rnd(1190), "PRIVATE KEY"
    elif kind == "ec":
        raw = (
            bytes.fromhex("30770201010420")
            + rnd(32)
            + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
            + b"\x04"
            + rnd(64)
        )
        label = "EC PRIVATE KEY"
    else:
        raw = (
            b"openssh-key-v1\x00"
            + bytes.fromhex("000000046e6f6e65000000046e6f6e650000000000000001000000330000000b7373682d65643235353139")
            + rnd(300)
        )
        label = "OPENSSH PRIVATE KEY"
    body = _wrap(base64.b64encode(raw).decode(), 70 if kind == "openssh" else 64)
    pick = body[len(body) // 2] if len(body) > 2 else body[-1]
    text = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"
    return text, pick


def ssh_pub(r: random.Random) -> str:
    return "AAAAC3NzaC1lZDI1NTE5AAAAI" + rs(r, 43, B64)


# ---- home paths ----
def home(r: random.Random, user: str, os_: str | None = None) -> str:
    os_ = os_ or r.choice(["linux", "mac", "win", "wsl"])
    return {
        "linux": f"/home/{user}",
        "mac": f"/Users/{user}",
        "win": f"C:\\Users\\{user}",
        "wsl": f"/mnt/c/Users/{user}",
    }[os_]


WINHOME = "C:\\Users\\"


def hostname(r: random.Random) -> str:
    return r.choice(
        [
            "devbox",
            "ip-10-0-1-23",
            "build-agent-07",
            "MacBook-Pro",
            "thinkpad-x1",
            "ws-ubuntu",
            "DESKTOP-4F7K2Q1",
            "bastion-eu1",
        ]
    )


# --------------------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------------------
@_shape("env_dotenv")
def _env_dotenv(r, b):
    host = r.choice(DB_HOSTS[:4])
    port = r.choice(["5432", "6543", "5433"])
    k1, m1, n1, _ = provider(r)
    lines = [
        "# .env.production (copied from the server, sorry for the noise)",
        "NODE_ENV=production",
        f"APP_VERSION={b.s(ver(r))}",
        f"PORT={r.choice(['3000', '8080', '4000'])}",
    ]
    q = r.choice(['"', "'", ""])
    lines.append(
        f"DATABASE_URL={q}postgres://app_rw:{b.g('connection_string_password', pw_url(r))}@{b.s(host)}:{port}/app_prod{q}"
    )
    lines.append(f"{n1}={q}{b.g(k1, m1(r))}{q}")
    sep = r.choice(["=", " = ", "="])
    lines.append(f"SESSION_SECRET{sep}{b.g('password', pw(r))}")
    if r.random() < 0.7:
        lines.append(f"SMTP_PASSWORD={b.s(r.choice(['changeme', '${SMTP_PASSWORD}', '<password>']))}")
    if r.random() < 0.6:
        lines.append(f"AWS_ACCESS_KEY_ID={b.s(AWS_DOC_KEY)}  # docs example, real one is in vault")
    lines.append(f"SENTRY_RELEASE={b.s(sha40(r))}")
    if r.random() < 0.5:
        lines.append(
            f"REDIS_URL=redis://default:{b.g('connection_string_password', pw_url(r))}@{b.s('redis-cache.k8s.local')}:6379/0"
        )
    lines.append(f"FEATURE_FLAGS_ENV_ID={b.s(uuid4(r))}")
    head = lines[:2]
    rest = lines[2:]
    r.shuffle(rest)
    intro = r.choice(
        [
            "why does my app still say password authentication failed? here's my env:",
            "prod is down, env below",
            "can you check this .env for syntax errors?",
        ]
    )
    return intro + "\n\n" + "\n".join(head + rest)


@_shape("env_export_shell")
def _env_export_shell(r, b):
    akid = t_akia(r)
    sec = t_aws_secret(r)
    prof = r.choice(["default", "prod-admin", "staging"])
    out = [
        "# ~/.bashrc snippet",
        f"export AWS_PROFILE={prof}",
        f"export AWS_ACCESS_KEY_ID={b.g('api_key', akid)}",
        f"export AWS_SECRET_ACCESS_KEY={b.g('api_key', sec)}",
        f"export AWS_DEFAULT_REGION={b.s(r.choice(['eu-central-1', 'us-east-1', 'ap-northeast-1']))}",
        f"# example from the docs: {b.s(AWS_DOC_KEY)} / {b.s(AWS_DOC_SECRET)}",
    ]
    if r.random() < 0.6:
        out.append(f'export AWS_SESSION_TOKEN="{b.g("token", t_aws_session(r))}"')
    k, m, n, _ = provider(r)
    out.append(f"export {n}='{b.g(k, m(r))}'")
    out.append(f"export PGPASSWORD={b.g('password', pw(r, '!#%^*-_+.?~@'))}")
    out.append(f'export PATH="$HOME/.local/bin:{b.s("/usr/local/go/bin")}:$PATH"')
    out.append(f"export KUBECONFIG={b.s('~/.kube/config-eks')}")
    return (
        "aws cli keeps saying "
        + b.s("InvalidClientTokenId")
        + " even though I exported everything:\n\n```bash\n"
        + "\n".join(out)
        + "\n```"
    )


@_shape("env_docker_compose")
def _env_compose(r, b):
    pgpw = pw(r, "!#%^*-_+.?~@")
    img = f"postgres:{r.choice(['15.6', '16.2', '16.4-alpine'])}"
    form = r.choice(["list", "map"])
    mq = pw(r, "-_.")
    if form == "list":
        env = f"""      - POSTGRES_USER=app
      - POSTGRES_PASSWORD={b.g("password", pgpw)}
      - POSTGRES_DB=app"""
        env2 = f"""      - RABBITMQ_DEFAULT_PASS={b.g("password", mq)}
      - RABBITMQ_DEFAULT_USER=guest"""
    else:
        env = f"""      POSTGRES_USER: app
      POSTGRES_PASSWORD: "{b.g("password", pgpw)}"
      POSTGRES_DB: app"""
        env2 = f"""      RABBITMQ_DEFAULT_PASS: '{b.g("password", mq)}'
      RABBITMQ_DEFAULT_USER: guest"""
    api_pw = pw_url(r)
    return f"""docker compose up fails with `{b.s('FATAL:  password authentication failed for user "app"')}`

```yaml
services:
  db:
    image: {b.s(img)}
    ports:
      - "{b.s("5432:5432")}"
    environment:
{env}
  mq:
    image: rabbitmq:3.13-management
    environment:
{env2}
  api:
    image: ghcr.io/acme/api@{b.s(digest(r))}
    environment:
      DATABASE_URL: postgresql://app:{b.g("connection_string_password", api_pw)}@db:5432/app
      JWT_SECRET: {b.s("${JWT_SECRET:?set me}")}
    depends_on: [db, mq]
```"""


@_shape("env_powershell_cmd")
def _env_ps(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "win")
    k, m, n, _ = provider(r)
    p1 = pw(r, "!#%^*-_+.?~@")
    tok = m(r)
    lines = [
        f'PS {b.g("home_path_user", hp)}\\source\\repos\\Billing> $env:{n} = "{b.g(k, tok)}"',
        f'PS {hp}\\source\\repos\\Billing> $env:ConnectionStrings__Default = "Server=tcp:{b.s("sql-billing.database.windows.net")},1433;Database=billing;User ID=billing_app;Password={b.g("connection_string_password", pw(r, "!#%^*-_+.?~@"))};Encrypt=True;"',
        f"PS {hp}\\source\\repos\\Billing> dotnet run --project src\\Billing.Api",
        f"{b.s('Unhandled exception. System.Data.SqlClient.SqlException (0x80131904)')}: Login failed for user 'billing_app'.",
        "",
        "and the old cmd script:",
        f"C:\\> set DB_PASS={b.g('password', p1)}",
        f"C:\\> set API_KEY={b.s('%API_KEY%')}",
        f"C:\\> setx NUGET_FEED_PAT {b.g('token', rs(r, 52, LOWER + DIG))}",
    ]
    return "\n".join(lines)


@_shape("env_systemd_fish")
def _env_systemd(r, b):
    k, m, n, _ = provider(r)
    svc = r.choice(["worker", "ingest", "notifier"])
    s = f"""# /etc/systemd/system/{svc}.service
[Unit]
Description={svc} service
After=network-online.target

[Service]
User=svc-{svc}
WorkingDirectory={b.s(f"/opt/{svc}/current")}
Environment="{n}={b.g(k, m(r))}"
Environment=DB_PASSWORD={b.g("password", pw(r, "!#%^*-_+.?~@"))}
EnvironmentFile=-{b.s(f"/etc/{svc}/env")}
ExecStart=/opt/{svc}/current/bin/{svc} --listen {b.s("0.0.0.0:9102")}
Restart=on-failure
"""
    fish = f"""
# and in my fish config
set -gx MAILGUN_API_KEY {b.g("api_key", t_mailgun(r))}
set -gx HOMEBREW_GITHUB_API_TOKEN {b.g("token", t_ghp(r))}
set -gx EDITOR nvim
"""
    return f"`systemctl status {svc}` shows it crash-looping with {b.s('status=203/EXEC')}. unit file:\n\n" + s + fish


@_shape("ci_github_actions")
def _ci_gha(r, b):
    t = lambda: ts(r).replace("Z", "." + digits(r, 7) + "Z")  # noqa: E731
    sha = sha40(r)
    tok = t_ghp(r)
    npm = t_npm(r)
    run_id = digits(r, 10)
    lines = [
        f"{t()} Current runner version: '{b.s('2.' + str(r.randint(310, 321)) + '.0')}'",
        f"{t()} ##[group]Run actions/checkout@{b.s('v4')}",
        f"{t()} with:",
        f"{t()}   ref: {b.s(sha)}",
        f"{t()}   token: ***",
        f"{t()} ##[endgroup]",
        f"{t()} ##[group]Run npm publish",
        f"{t()} npm publish --access public",
        f"{t()} shell: /usr/bin/bash -e {{0}}",
        f"{t()} env:",
        f"{t()}   NODE_AUTH_TOKEN: ***",
        f"{t()} ##[endgroup]",
        f"{t()} npm notice Publishing to https://registry.npmjs.org/ with tag latest",
        f"{t()} npm ERR! code {b.s('E403')}",
        f"{t()} + curl -sf -H 'Authorization: token {b.g('token', tok)}' https://api.github.com/repos/acme/web/statuses/{sha}",
        f"{t()} + echo //registry.npmjs.org/:_authToken={b.g('token', npm)} >> .npmrc",
        f"{t()} Run ID: {b.s(run_id)}",
        f"{t()} Cleaning up orphan processes",
    ]
    if r.random() < 0.6:
        lines.insert(12, f"{t()} debug: DEPLOY_PASSWORD={b.g('password', pw(r))}  (why is this not masked??)")
    return "our publish workflow leaked stuff into the log, which lines do I need to rotate?\n\n" + "\n".join(lines)


@_shape("ci_gitlab")
def _ci_gitlab(r, b):
    glpat = t_glpat(r)
    proj = r.choice(["platform/api", "data/etl", "mobile/app"])
    reg_pw = pw(r, "-_.")
    job = digits(r, 10)
    text = f"""Running with gitlab-runner {b.s("16." + str(r.randint(5, 11)) + ".1")} (a{hexs(r, 7)})
  on docker-autoscaler {b.s("r-" + hexs(r, 8))}, system ID: s_{hexs(r, 12)}
Preparing the "docker" executor
Using docker image {b.s(digest(r))} for {b.s("registry.gitlab.com/" + proj + "/ci:latest")} ...
Getting source from Git repository
$ git remote set-url origin https://oauth2:{b.g("token", glpat)}@gitlab.com/{proj}.git
Fetching changes with git depth set to 20...
Checking out {b.s(hexs(r, 8))} as detached HEAD (ref is main)...
Executing "step_script" stage of the job script
$ echo "$CI_REGISTRY_PASSWORD" | docker login -u gitlab-ci-token --password-stdin $CI_REGISTRY
$ docker login -u deploy-bot -p {b.g("password", reg_pw)} {b.s("registry.example.org:5000")}
WARNING! Using --password via the CLI is insecure. Use --password-stdin.
$ export KUBE_TOKEN={b.g("token", jwt(r, long=r.random() < 0.5))}
$ kubectl --server=https://{b.s(ip_priv(r))}:6443 --token=$KUBE_TOKEN rollout status deploy/api
error: deployment "api" exceeded its progress deadline
Cleaning up project directory and file based variables
ERROR: Job failed: exit code 1
Job #{b.s(job)}"""
    return "pipeline log:\n" + text


@_shape("ci_jenkins")
def _ci_jenkins(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "linux")
    build = r.randint(100, 4000)
    text = f"""Started by user {first} {last}
Running as SYSTEM
[Pipeline] node
Running on agent-{r.randint(1, 9)} in {b.s("/var/lib/jenkins/workspace/payments-deploy")}
[Pipeline] withCredentials
Masking supported pattern matches of $NEXUS_PASS
[Pipeline] sh
+ mvn -B -s settings.xml deploy -Dnexus.user=ci -Dnexus.password={b.g("password", pw(r, "!#%^*-_+.?~@"))}
[INFO] Uploading to nexus: https://{b.s("nexus.corp.example.com")}/repository/maven-releases/com/acme/payments/{b.s(ver(r))}/payments.jar
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-deploy-plugin:{b.s("3.1.1")}:deploy: status code: 401, reason phrase: Unauthorized
+ cp {b.g("home_path_user", hp)}/.m2/settings.xml .
+ curl -u ci-bot:{b.g("password", pw(r, "!#%^*-_+.?~"))} https://{b.s("jenkins.corp.example.com:8443")}/job/payments-deploy/{build}/consoleText
+ sonar-scanner -Dsonar.login={b.g("token", "squ_" + hexs(r, 40))}
[Pipeline] End of Pipeline
Finished: FAILURE"""
    return (
        f"Jenkins build #{build} console output (build started by {b.g('person_name', first + ' ' + last)}):\n\n"
        + text
    )


@_shape("terraform")
def _terraform(r, b):
    akid, sec = t_akia(r), t_aws_secret(r)
    dbpw = pw(r, "!#%^*-_+.?~")
    acct = digits(r, 12)
    form = r.random()
    tf = f"""provider "aws" {{
  region     = "{b.s("eu-west-1")}"
  access_key = "{b.g("api_key", akid)}"
  secret_key = "{b.g("api_key", sec)}"
}}

resource "aws_db_instance" "main" {{
  identifier        = "orders-prod"
  engine_version    = "{b.s("16.3")}"
  instance_class    = "db.r6g.large"
  username          = "orders_admin"
  password          = "{b.g("password", dbpw)}"
  kms_key_id        = "{b.s("arn:aws:kms:eu-west-1:" + acct + ":key/" + uuid4(r))}"
  skip_final_snapshot = false
}}

variable "datadog_api_key" {{
  default = "{b.g("api_key", hexs(r, 32))}"
}}

variable "cloudflare_token" {{
  type      = string
  sensitive = true
  default   = "{b.s("REPLACE_ME")}"
}}"""
    plan = f"""
$ terraform plan
aws_db_instance.main: Refreshing state... [id={b.s("db-" + rs(r, 26, UPPER + DIG))}]
  # aws_db_instance.main will be updated in-place
  ~ resource "aws_db_instance" "main" {{
      ~ password = (sensitive value)
        id       = "orders-prod"
    }}
Plan: 0 to add, 1 to change, 0 to destroy."""
    if form < 0.5:
        tf += f"""

# terraform.tfvars
github_token = "{b.g("token", t_ghpat(r))}"
"""
    return "terraform keeps wanting to change the password every plan, why?\n\n```hcl\n" + tf + "\n```\n" + plan


@_shape("helm_values")
def _helm(r, b):
    pgpw = pw(r, "!#%^*-_+.?~")
    redispw = pw(r, "-_.")
    admin = pw(r, "!#%^*-_+.?~@")
    vals = f"""# values-prod.yaml
image:
  repository: {b.s("ghcr.io/acme/storefront")}
  tag: "{b.s(ver(r))}"
  digest: {b.s(digest(r))}
postgresql:
  auth:
    username: storefront
    password: "{b.g("password", pgpw)}"
    postgresPassword: {b.g("password", pw(r, "-_."))}
    existingSecret: ""
redis:
  auth:
    password: >-
      {b.g("password", redispw)}
grafana:
  adminPassword: '{b.g("password", admin)}'
ingress:
  hosts:
    - host: {b.s("shop.example.org")}
  tls:
    - secretName: shop-tls
smtp:
  password: {b.s("{{ .Values.global.smtpPassword }}")}
"""
    cmd = f"""$ helm upgrade --install storefront ./chart -f values-prod.yaml \\
    --set stripe.secretKey={b.g("api_key", t_sk_live(r))} \\
    --set-string image.tag={ver(r)} --namespace shop
Error: UPGRADE FAILED: {b.s("context deadline exceeded")}"""
    return vals + "\n" + cmd


@_shape("ansible")
def _ansible(r, b):
    hosts = [ip_priv(r) for _ in range(3)]
    become = pw(r, "!#%^*-_+.?~@")
    inv = f"""# inventory/prod.ini
[web]
web1 ansible_host={b.s(hosts[0])} ansible_user=deploy ansible_password={b.g("password", pw(r, "!#%^*-_+.?~@"))}
web2 ansible_host={b.s(hosts[1])} ansible_user=deploy ansible_ssh_private_key_file={b.s("~/.ssh/deploy_ed25519")}

[db]
db1 ansible_host={hosts[2]}

[all:vars]
ansible_become_password={b.g("password", become)}
db_password={b.s("{{ vault_db_password }}")}
"""
    play = f"""
# roles/app/tasks/main.yml
- name: write app config
  template:
    src: app.conf.j2
    dest: {b.s("/etc/app/app.conf")}
    mode: "0600"
  vars:
    sendgrid_key: "{b.g("api_key", t_sendgrid(r))}"
- name: add apt key
  apt_key:
    url: https://{b.s("packages.example.com/gpg.key")}
"""
    out = f"""
fatal: [web1]: FAILED! => {{"changed": false, "msg": "{b.s("Missing sudo password")}"}}"""
    return "ansible-playbook -i inventory/prod.ini site.yml\n" + inv + play + out


@_shape("kubectl")
def _kubectl(r, b):
    pw1 = pw(r, "!#%^*-_+.?~@")
    b64pw = base64.b64encode(pw1.encode()).decode()
    api = t_openai(r) if r.random() < 0.5 else t_anthropic(r)
    b64api = base64.b64encode(api.encode()).decode()
    ns = r.choice(["prod", "payments", "default"])
    rv = str(r.randint(100000, 999999))
    text = f"""$ kubectl get secret app-secrets -n {ns} -o yaml
apiVersion: v1
data:
  DB_PASSWORD: {b.g("password", b64pw)}
  LLM_API_KEY: {b.g("api_key", b64api)}
  DB_HOST: {base64.b64encode(b"db.prod.svc").decode()}
kind: Secret
metadata:
  creationTimestamp: "{b.s(ts(r))}"
  name: app-secrets
  namespace: {ns}
  resourceVersion: "{b.s(rv)}"
  uid: {b.s(uuid4(r))}
type: Opaque

$ kubectl get secret app-secrets -n {ns} -o jsonpath='{{.data.DB_PASSWORD}}' | base64 -d
{b.g("password", pw1)}

$ kubectl create secret docker-registry regcred --docker-server={b.s("ghcr.io")} --docker-username=ci-bot --docker-password={b.g("token", t_ghp(r))} -n {ns}
secret/regcred created
$ kubectl get pods -n {ns}
NAME                   READY   STATUS             RESTARTS   AGE
api-{hexs(r, 10)}-{rs(r, 5, LOWER + DIG)}   0/1     {b.s("CrashLoopBackOff")}   7          12m"""
    return "the pod can't connect to the db, here's the secret, is the password right?\n\n" + text


@_shape("docker_cli")
def _docker(r, b):
    rootpw = pw(r, "!#%^*-_+.?~@")
    cid = hexs(r, 64)
    text = f"""$ docker run -d --name mysql8 -p {b.s("3306:3306")} -e MYSQL_ROOT_PASSWORD='{b.g("password", rootpw)}' mysql:{b.s("8.0.36")}
{cid}
$ docker inspect mysql8 --format '{{{{json .Config.Env}}}}'
["MYSQL_ROOT_PASSWORD={rootpw}","PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","GOSU_VERSION=1.17","MYSQL_MAJOR=8.0","MYSQL_VERSION={b.s("8.0.36-1.el8")}"]
$ docker ps
CONTAINER ID   IMAGE          COMMAND                  CREATED         STATUS                          PORTS     NAMES
{b.s(cid[:12])}   mysql:8.0.36   "docker-entrypoint.s…"   8 seconds ago   Exited (1) 2 seconds ago                  mysql8
$ docker logs mysql8 | tail -2
{ts(r)} 0 [ERROR] [MY-010119] [Server] Aborting
$ echo {b.g("token", t_docker_pat(r))} | docker login -u acmebuild --password-stdin
Login Succeeded
$ docker pull {b.s("redis@" + digest(r))}"""
    return text


@_shape("aws_cli")
def _aws_cli(r, b):
    acct = digits(r, 12)
    first, last = person(r)
    user = username(r, first, last)
    akid, sec = t_akia(r), t_aws_secret(r)
    form = r.random()
    if form < 0.5:
        out = f"""$ aws iam create-access-key --user-name {user}
{{
    "AccessKey": {{
        "UserName": "{user}",
        "AccessKeyId": "{b.g("api_key", akid)}",
        "Status": "Active",
        "SecretAccessKey": "{b.g("api_key", sec)}",
        "CreateDate": "{b.s(ts(r))}"
    }}
}}"""
    else:
        hp = home(r, user, r.choice(["linux", "mac"]))
        out = f"""$ cat {b.g("home_path_user", hp)}/.aws/credentials
[default]
aws_access_key_id = {b.g("api_key", akid)}
aws_secret_access_key = {b.g("api_key", sec)}

[sandbox]
aws_access_key_id = {b.s(AWS_DOC_KEY)}
aws_secret_access_key = {b.s(AWS_DOC_SECRET)}"""
    out += f"""
$ aws sts get-caller-identity
{{
    "UserId": "{b.s("AIDA" + rs(r, 17, B32))}",
    "Account": "{acct}",
    "Arn": "{b.s(f"arn:aws:iam::{acct}:user/ci-deployer")}"
}}
$ aws secretsmanager get-secret-value --secret-id prod/orders/db --query SecretString --output text
{{"username":"orders","password":"{b.g("password", pw(r, "!#%^*-_+.?~@"))}","host":"{b.s("orders.cluster-" + rs(r, 12, LOWER + DIG) + ".eu-west-1.rds.amazonaws.com")}","port":5432}}
$ aws s3 ls s3://acme-artifacts/releases/ --region eu-west-1
An error occurred ({b.s("AccessDenied")}) when calling the ListObjectsV2 operation: Access Denied"""
    return out


@_shape("gcloud")
def _gcloud(r, b):
    proj = r.choice(["acme-prod-318204", "data-platform-77", "ml-sandbox-4412"])
    key, line = pem_key(r, "pkcs8")
    client_id = digits(r, 21)
    sa = {
        "type": "service_account",
        "project_id": proj,
        "private_key_id": hexs(r, 40),
        "private_key": key + "\n",
        "client_email": f"deployer@{proj}.iam.gserviceaccount.com",
        "client_id": client_id,
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    b.g("private_key", line)
    b.s(client_id)
    b.s("https://oauth2.googleapis.com/token")
    js = json.dumps(sa, indent=2)
    tok = t_ya29(r)
    cmds = f"""$ gcloud auth print-access-token
{b.g("token", tok)}
$ curl -H "Authorization: Bearer {tok}" https://{b.s("storage.googleapis.com")}/storage/v1/b/{proj}-exports/o
$ gcloud config list
[core]
account = deployer@{proj}.iam.gserviceaccount.com
project = {b.s(proj)}
$ gcloud services api-keys get-key-string {b.s("projects/" + digits(r, 12) + "/locations/global/keys/" + uuid4(r))}
keyString: {b.g("api_key", t_aiza(r))}"""
    return "sa-key.json I'm using with GOOGLE_APPLICATION_CREDENTIALS:\n```json\n" + js + "\n```\n" + cmds


@_shape("azure_cli")
def _azure(r, b):
    app_id, tenant = uuid4(r), uuid4(r)
    secret = rs(r, 3, ALNUM) + "8Q~" + rs(r, 34, ALNUM + "_-.~")
    acct = r.choice(["acmeprodstore", "datalake01", "mediaassets"])
    key = t_azure_key(r)
    sig = rs(r, 43, ALNUM + "+/") + "="
    sig_q = sig.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    return f"""$ az ad sp create-for-rbac --name gh-deployer --role contributor --scopes /subscriptions/{b.s(uuid4(r))}
{{
  "appId": "{b.s(app_id)}",
  "displayName": "gh-deployer",
  "password": "{b.g("password", secret)}",
  "tenant": "{b.s(tenant)}"
}}
$ az storage account show-connection-string -n {acct} -o tsv
DefaultEndpointsProtocol=https;EndpointSuffix={b.s("core.windows.net")};AccountName={acct};AccountKey={b.g("connection_string_password", key)}
$ az storage blob generate-sas ... --full-uri
"https://{acct}.blob.core.windows.net/exports/report.csv?se={b.s("2025-12-31T23%3A59%3A00Z")}&sp=r&sv=2022-11-02&sr=b&sig={b.g("token", sig_q)}"
$ az login --service-principal -u {app_id} -p {b.g("password", rs(r, 3, ALNUM) + "8Q~" + rs(r, 34, ALNUM + "_-.~"))} --tenant {tenant}
{b.s("AADSTS7000215")}: Invalid client secret provided."""


@_shape("sdk_python")
def _sdk_py(r, b):
    first, last = person(r)
    user = username(r, first, last)
    k, m, n, label = provider(r)
    tok = m(r)
    pgpw = pw(r, "!#%^*-_+.?~@")
    return f"""```python
import os
import boto3
import psycopg
import requests

# TODO move to env before merging
{n.lower()} = "{b.g(k, tok)}"
s3 = boto3.client(
    "s3",
    aws_access_key_id="{b.g("api_key", t_akia(r))}",
    aws_secret_access_key='{b.g("api_key", t_aws_secret(r))}',
    region_name="{b.s("ap-southeast-2")}",
)
conn = psycopg.connect(host="{b.s(r.choice(DB_HOSTS[:3]))}", port={b.s("5432")}, dbname="reports", user="reporter", password="{b.g("password", pgpw)}")
resp = requests.get("https://{b.s("api.internal.example.com")}/v2/items", auth=("svc-reports", "{b.g("password", pw(r, "!#%^*-_+.?~@"))}"), timeout=10)
fallback = os.getenv("API_TOKEN", "{b.s("<your-token>")}")

def {b.s(r.choice(FUNCS[:6]))}(item_id: str) -> dict:
    ...
```

Traceback (most recent call last):
  File "{b.g("home_path_user", home(r, user, "linux"))}/work/reports/{b.s("export_job.py")}", line {r.randint(10, 80)}, in <module>
    resp.raise_for_status()
requests.exceptions.HTTPError: {b.s("401 Client Error: Unauthorized")} for url: https://api.internal.example.com/v2/items"""


@_shape("sdk_js")
def _sdk_js(r, b):
    mongopw = pw_url(r)
    cluster = f"cluster0.{rs(r, 5, LOWER + DIG)}.mongodb.net"
    q = r.choice(["'", '"', "`"])
    return f"""// src/lib/clients.ts
import Stripe from "stripe";
import {{ Pool }} from "pg";
import mongoose from "mongoose";

export const stripe = new Stripe({q}{b.g("api_key", t_sk_live(r))}{q}, {{ apiVersion: "{b.s("2024-06-20")}" }});

export const pool = new Pool({{
  host: "{b.s(r.choice(DB_HOSTS[:3]))}",
  port: 5432,
  user: "web",
  password: {q}{b.g("password", pw(r, "!#%^*-_+.?~@"))}{q},
}});

await mongoose.connect("mongodb+srv://admin:{b.g("connection_string_password", mongopw)}@{b.s(cluster)}/shop?retryWrites=true&w=majority");

const openai = new OpenAI({{ apiKey: process.env.OPENAI_API_KEY ?? {q}{b.g("api_key", t_openai(r))}{q} }});
const headers = {{ "x-api-key": {q}{b.s("your-api-key-here")}{q}, "X-Request-Id": "{b.s(uuid4(r))}" }};

// MongoServerError: bad auth : Authentication failed. code: {b.s("8000")}, codeName: '{b.s("AtlasError")}'"""


@_shape("sdk_go")
def _sdk_go(r, b):
    dbpw = pw(r, "!#%^*-_+.?~@")
    return f"""package main

import (
	"database/sql"
	"github.com/google/go-github/{b.s("v62")}/github"
	_ "github.com/lib/pq"
)

const dsn = "host={b.s(r.choice(DB_HOSTS[:3]))} port=5432 user=ledger password={b.g("connection_string_password", dbpw)} dbname=ledger sslmode=require"

func {b.s("newGitHubClient")}() *github.Client {{
	return github.NewClient(nil).WithAuthToken("{b.g("token", t_ghp(r))}")
}}

func main() {{
	db, err := sql.Open("postgres", dsn)
	if err != nil {{
		panic(err)
	}}
	redisURL := "redis://:{b.g("connection_string_password", pw_url(r))}@{b.s("10.0.12.7:6379")}/2"
	_ = redisURL
	_ = db.Ping()
}}

// panic: pq: password authentication failed for user "ledger" ({b.s("SQLSTATE 28P01")})
// goroutine 1 [running]:
// main.main()
// 	{b.s("/app/cmd/ledger/main.go:24")} +0x1c5"""


@_shape("sdk_java")
def _sdk_java(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, r.choice(["mac", "linux"]))
    dbpw = pw(r, "!#%^*-_+.?~@")
    props = f"""# src/main/resources/application-prod.properties
spring.datasource.url=jdbc:mysql://{b.s("mysql-prod.internal:3306")}/inventory?useSSL=true
spring.datasource.username=inventory
spring.datasource.password={b.g("password", dbpw)}
spring.mail.password={b.g("password", pw(r, "-_."))}
spring.jpa.hibernate.ddl-auto=validate
app.jwt.secret={b.g("password", b64bytes(r, 48))}
management.server.port={b.s("8081")}
"""
    code = f"""
Connection c = DriverManager.getConnection("jdbc:postgresql://{b.s("pg.internal:5432")}/audit", "auditor", "{b.g("password", pw(r, "!#%^*-_+.?~@"))}");

Exception in thread "main" java.sql.SQLException: Access denied for user 'inventory'@'{b.s(ip_priv(r))}' (using password: YES)
	at com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:130)
	at com.acme.inventory.{b.s("DataSourceConfig.dataSource")}(DataSourceConfig.java:42)
	at {b.g("home_path_user", hp)}/IdeaProjects/inventory/target/classes (file)"""
    return props + code


@_shape("sdk_csharp")
def _sdk_cs(r, b):
    first, last = person(r)
    user = username(r, first, last)
    sqlpw = pw(r, "!#%^*-_+.?~@")
    appsettings = {
        "Logging": {"LogLevel": {"Default": "Information"}},
        "ConnectionStrings": {
            "Default": f"Server={DB_HOSTS[3]};Database=orders;User Id=orders_app@orders-db;Password={sqlpw};Ssl Mode=Require;"
        },
        "SendGrid": {"ApiKey": t_sendgrid(r)},
        "Jwt": {"Issuer": "https://auth.example.com", "Key": "changeme"},
    }
    b.g("connection_string_password", sqlpw)
    b.g("api_key", appsettings["SendGrid"]["ApiKey"])
    b.s("changeme")
    b.s("https://auth.example.com")
    js = json.dumps(appsettings, indent=2)
    trace = f"""
Npgsql.PostgresException (0x80004005): {b.s('28P01: password authentication failed for user "orders_app"')}
   at Npgsql.Internal.NpgsqlConnector.ReadMessageLong(...)
   at Orders.Api.Program.Main(String[] args) in {b.g("home_path_user", WINHOME + user)}\\source\\repos\\Orders\\Orders.Api\\{b.s("Program.cs")}:line {r.randint(10, 90)}"""
    code = f"""
var client = new SendGridClient("{appsettings["SendGrid"]["ApiKey"]}");
var blob = new BlobServiceClient("DefaultEndpointsProtocol=https;AccountName=ordersdocs;AccountKey={b.g("connection_string_password", t_azure_key(r))};EndpointSuffix=core.windows.net");"""
    return "appsettings.Production.json:\n" + js + "\n" + code + "\n" + trace


@_shape("sdk_ruby")
def _sdk_ruby(r, b):
    dbpw = pw(r, "!#%^*-_+.?~@")
    return f"""# config/database.yml
production:
  adapter: postgresql
  host: {b.s(r.choice(DB_HOSTS[:3]))}
  database: shop_production
  username: shop
  password: <%= ENV.fetch("DATABASE_PASSWORD") {{ "{b.g("password", dbpw)}" }} %>
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>

# config/initializers/stripe.rb
Stripe.api_key = '{b.g("api_key", t_sk_live(r))}'
Stripe.api_version = '{b.s("2023-10-16")}'

# config/initializers/shopify.rb
ShopifyAPI::Context.setup(api_key: "{b.s("<YOUR_API_KEY>")}", api_secret_key: "{b.g("api_key", "shpss_" + hexs(r, 32))}", host_name: "{b.s("shop.example.org")}")
session = ShopifyAPI::Auth::Session.new(shop: "acme.myshopify.com", access_token: "{b.g("token", t_shopify(r))}")

$ bin/rails c -e production
/usr/local/bundle/gems/{b.s("activerecord-7.1.3")}/lib/active_record/connection_adapters/postgresql_adapter.rb:58:in `rescue in new_client': connection to server failed: FATAL:  password authentication failed (ActiveRecord::DatabaseConnectionError)"""


@_shape("sdk_php")
def _sdk_php(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "mac")
    dbpw = pw(r, "!#%^*-_+.?~@")
    return f"""<?php
// config.php
$pdo = new PDO('mysql:host={b.s("127.0.0.1")};port=3306;dbname=wp_shop', 'wp_user', '{b.g("password", dbpw)}');
$config = [
    'mailgun' => [
        'domain' => '{b.s("mg.example.com")}',
        'secret' => '{b.g("api_key", t_mailgun(r))}',
    ],
    'pusher' => ['app_id' => '{b.s(digits(r, 7))}', 'secret' => '{b.g("api_key", hexs(r, 20))}'],
    'recaptcha_site_key' => '{b.s("6Le" + "IxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI")}',
];
define('AUTH_SALT', '{b.s("put your unique phrase here")}');
define('DB_PASSWORD', '{dbpw}');

Fatal error: Uncaught PDOException: SQLSTATE[HY000] [1045] Access denied for user 'wp_user'@'localhost' (using password: YES) in {b.g("home_path_user", hp)}/Sites/shop/{b.s("config.php")}:3
Stack trace:
#0 {hp}/Sites/shop/config.php(3): PDO->__construct('mysql:host=127....', 'wp_user', Object(SensitiveParameterValue))
#1 {{main}}"""


@_shape("sdk_rust")
def _sdk_rust(r, b):
    dbpw = pw_url(r)
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, r.choice(["linux", "mac"]))
    return f"""```toml
# Config.toml
[database]
url = "postgres://indexer:{b.g("connection_string_password", dbpw)}@{b.s("pg-indexer.internal:5432")}/chain"

[rpc]
endpoint = "https://eth-mainnet.g.alchemy.com/v2/{b.g("api_key", rs(r, 32, B64URL))}"
```

```rust
let client = reqwest::Client::new();
let res = client
    .get("https://{b.s("api.github.com")}/repos/acme/indexer/releases")
    .bearer_auth("{b.g("token", t_ghpat(r))}")
    .header("User-Agent", "indexer/{b.s(ver(r))}")
    .send()
    .await?;
```

error[E0277]: the `?` operator can only be used in an async function that returns `Result`
  --> {b.g("home_path_user", hp)}/code/indexer/{b.s("src/main.rs:41:15")}
   |
41 |     .await?;
   |           ^ cannot use the `?` operator
error: could not compile `indexer` (bin "indexer") due to 1 previous error; see {b.s("rustc --explain E0277")}"""


@_shape("trace_linux_python")
def _trace_linux(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "linux")
    pyv = r.choice(["3.11", "3.12", "3.10"])
    venv = r.choice([".venv", "venv", ".virtualenvs/etl"])
    return f"""Traceback (most recent call last):
  File "{b.g("home_path_user", hp)}/projects/etl/{b.s("pipeline/run.py")}", line {r.randint(10, 300)}, in <module>
    main()
  File "{hp}/projects/etl/pipeline/run.py", line {r.randint(10, 300)}, in main
    engine = create_engine(settings.DATABASE_URL)
  File "{hp}/{venv}/lib/python{pyv}/site-packages/{b.s("sqlalchemy/engine/create.py")}", line 602, in create_engine
    (cargs_tup, cparams) = dialect.create_connect_args(u)
  File "/usr/lib/python{pyv}/{b.s("urllib/parse.py")}", line 180, in port
    raise ValueError(message) from None
ValueError: Port could not be cast to integer value as '{b.g("connection_string_password", "x" + pw(r, "!*-_."))}@db'

DATABASE_URL in my settings is postgresql://etl:{b.s("${DB_PASSWORD}")}@{b.s("db.internal")}:5432/etl — I've got a ':' in the real password, how do I escape it?"""


@_shape("trace_macos_node")
def _trace_mac(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "mac")
    return f"""node:internal/modules/cjs/loader:{b.s("1228")}
  throw err;
  ^

Error: Cannot find module '{b.g("home_path_user", hp)}/dev/checkout-web/node_modules/{b.s("@prisma/client/runtime/library.js")}'
Require stack:
- {hp}/dev/checkout-web/src/db.ts
- {hp}/dev/checkout-web/src/server.ts
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Object.<anonymous> ({hp}/dev/checkout-web/src/db.ts:3:1) {{
  code: '{b.s("MODULE_NOT_FOUND")}',
  requireStack: [ ... ]
}}

Node.js {b.s("v20." + str(r.randint(5, 18)) + "." + str(r.randint(0, 3)))}
{user}@{hostname(r)} checkout-web % cat ~/.zshrc | grep -i key
export OPENAI_API_KEY={b.g("api_key", t_openai(r))}
export ANTHROPIC_API_KEY="{b.g("api_key", t_anthropic(r))}\""""


@_shape("trace_windows")
def _trace_win(r, b):
    first, last = person(r)
    user = username(r, first, last) if r.random() < 0.7 else f"{first} {last}".replace("'", "")
    hp = f"C:\\Users\\{user}"
    onedrive = r.random() < 0.4
    base = f"{hp}\\OneDrive - Acme Corp\\Documents" if onedrive else f"{hp}\\Documents"
    return f"""Exception in thread "main" java.io.FileNotFoundException: {b.g("home_path_user", hp)}\\.gradle\\{b.s("gradle.properties")} (The system cannot find the file specified)
	at java.base/java.io.FileInputStream.open0(Native Method)
	at com.acme.build.{b.s("CredentialLoader.load")}(CredentialLoader.java:57)

Also from PowerShell:
Import-Module : File {base}\\WindowsPowerShell\\Modules\\AcmeTools\\AcmeTools.psm1 cannot be loaded because running scripts is disabled on this system.
At line:1 char:1
    + FullyQualifiedErrorId : {b.s("UnauthorizedAccess")}

gradle.properties on my other machine has:
systemProp.gradle.wrapperPassword={b.g("password", pw(r, "!#%^*-_+.?~@"))}
mavenCentralPassword={b.g("password", pw(r, "!#%^*-_+.?~@"))}
signing.keyId={b.s(hexs(r, 8).upper())}"""


@_shape("trace_wsl")
def _trace_wsl(r, b):
    first, last = person(r)
    user = username(r, first, last)
    wuser = username(r, first, last)
    host = hostname(r)
    return f"""{user}@{host}:~/src/api$ npm run dev
> api@{b.s(ver(r))} dev
> tsx watch src/index.ts

Error: EACCES: permission denied, open '{b.g("home_path_user", "/mnt/c/Users/" + wuser)}/AppData/Roaming/npm-cache/_cacache/{b.s("index-v5")}/3f/2a'
    at Object.openSync (node:fs:{b.s("573")}:18)
  errno: -13,
  code: '{b.s("EACCES")}',

{user}@{host}:~/src/api$ explorer.exe .
opened {b.g("home_path_user", chr(92) * 2 + "wsl.localhost" + chr(92) + "Ubuntu-22.04" + chr(92) + "home" + chr(92) + user)}\\src\\api
{user}@{host}:~/src/api$ ls {b.g("home_path_user", "/home/" + user)}/src/api/.env*
/home/{user}/src/api/.env  /home/{user}/src/api/.env.example"""


@_shape("shell_session")
def _shell(r, b):
    first, last = person(r)
    user = username(r, first, last)
    host = hostname(r)
    mypw = pw(r, "!#%^*-_+.?~")
    pgpw = pw_url(r)
    curlpw = pw(r, "!#%^*-_+.?~")
    prompt = f"{user}@{host}:~/deploy$"
    lines = [
        f"{prompt} mysql -h {b.s('10.0.4.21')} -P 3306 -u root -p{b.g('password', mypw)} shop",
        "mysql: [Warning] Using a password on the command line interface can be insecure.",
        f"ERROR {b.s('1045 (28000)')}: Access denied for user 'root'@'{ip_priv(r)}' (using password: YES)",
        f"{prompt} psql \"postgresql://admin:{b.g('connection_string_password', pgpw)}@{b.s('pg-main.internal')}:5432/shop?sslmode=require\" -c '\\dt'",
        f'psql: error: connection to server at "pg-main.internal" ({b.s(ip_priv(r))}), port 5432 failed: FATAL:  no pg_hba.conf entry',
        f"{prompt} curl -u admin:'{b.g('password', curlpw)}' https://{b.s('grafana.internal.example.com')}/api/health",
        '{"commit":"'
        + b.s(hexs(r, 10))
        + '","database":"ok","version":"'
        + b.s("10." + str(r.randint(0, 4)) + ".1")
        + '"}',
        f"{prompt} sshpass -p '{b.g('password', pw(r, '!#%^*-_+.?~'))}' ssh deploy@{ip_priv(r)} 'sudo systemctl restart app'",
        f"{prompt} echo $SHELL",
        "/bin/bash",
    ]
    if r.random() < 0.5:
        lines.append(
            f"{prompt} openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{b.g('password', pw(r, '-_.'))}"
        )
    return "\n".join(lines)


@_shape("http_dump")
def _http_dump(r, b):
    tok = jwt(r, long=r.random() < 0.6)
    sess = b64bytes(r, 32, urlsafe=True).rstrip("=")
    csrf = rs(r, 32)
    reqid = uuid4(r)
    etag = hexs(r, 32)
    first, last = person(r)
    em = email(r, first, last)
    return f"""POST /api/v1/accounts/me/email HTTP/1.1
Host: {b.s("app.example.com")}
User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36
Accept: application/json
Authorization: Bearer {b.g("token", tok)}
Cookie: _ga=GA1.1.{digits(r, 9)}.{digits(r, 10)}; session_id={b.g("token", sess)}; csrftoken={b.g("token", csrf)}
X-Request-ID: {b.s(reqid)}
Content-Type: application/json
Content-Length: {r.randint(40, 90)}

{{"email": "{b.g("email", em)}", "notify": true}}

HTTP/1.1 {b.s("422 Unprocessable Entity")}
Date: Tue, 04 Mar 2025 10:{r.randint(10, 59)}:{r.randint(10, 59)} GMT
ETag: W/"{b.s(etag)}"
Set-Cookie: session_id={b.g("token", b64bytes(r, 32, urlsafe=True).rstrip("="))}; Path=/; HttpOnly; Secure; SameSite=Lax
Strict-Transport-Security: max-age=31536000
traceparent: {b.s("00-" + hexs(r, 32) + "-" + hexs(r, 16) + "-01")}

{{"error":"{b.s("email_already_in_use")}","request_id":"{reqid}"}}"""


@_shape("sql_session")
def _sql(r, b):
    rows = []
    for _ in range(r.randint(2, 3)):
        first, last = person(r, r.choice(["en", "es", "de"]))
        rows.append((first, last, email(r, first, last), phone(r, "us"), ssn(r)))
    newpw = pw(r, "!#%^*-_+.?~@")
    out = [
        f'-- connect: psql "host={b.s("warehouse.internal")} port=5432 dbname=crm user=analyst password={b.g("connection_string_password", pw(r, "!#%^*-_+.?~@"))}"',
        f"CREATE ROLE etl_loader WITH LOGIN PASSWORD '{b.g('password', newpw)}';",
        f"ALTER USER 'report'@'%' IDENTIFIED BY '{b.g('password', pw(r, '!#%^*-_+.?~@'))}';",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {b.s('crm_v2')} TO etl_loader;",
        "",
        "crm=> SELECT id, full_name, email, phone, ssn, created_at FROM customers WHERE created_at > now() - interval '1 day';",
        " id  |     full_name      |          email           |      phone      |     ssn     |         created_at",
        "-----+--------------------+--------------------------+-----------------+-------------+----------------------------",
    ]
    for _i, (f, la, em, ph, sn) in enumerate(rows):
        out.append(
            f" {r.randint(1000, 9999)} | {f} {la} | {b.g('email', em)} | {b.g('phone', ph)} | {b.g('ssn', sn)} | {b.s(ts_ms(r))}+00"
        )
    out.append(f"({len(rows)} rows)")
    out.append(
        f"crm=> SELECT pg_size_pretty(pg_total_relation_size('customers'));  -- {b.s('pg_total_relation_size')}"
    )
    out.append(f"-- seed user for tests: {b.s('qa-bot@example.com')}")
    return "\n".join(out)


@_shape("json_config")
def _json_cfg(r, b):
    first, last = person(r)
    smtp_pw = pw(r, "!#%^*-_+.?~@")
    cfg = {
        "service": "notifier",
        "version": ver(r),
        "listen": {"host": "0.0.0.0", "port": 8443},
        "smtp": {"host": "smtp.sendgrid.net", "port": 587, "username": "apikey", "password": t_sendgrid(r)},
        "db": {"dsn": f"mysql://notifier:{pw_url(r)}@tcp(mysql.internal:3306)/notify", "maxOpenConns": 20},
        "slack": {"botToken": t_xoxb(r), "signingSecret": hexs(r, 32), "channel": "#alerts"},
        "admin": {"email": email(r, first, last), "password": smtp_pw},
        "placeholders": {"pagerdutyKey": "xxxxxxxxxxxxxxxx", "webhookSecret": "${WEBHOOK_SECRET}"},
        "buildSha": sha40(r),
    }
    b.s(cfg["version"])
    b.s("smtp.sendgrid.net")
    b.g("api_key", cfg["smtp"]["password"])
    b.g("connection_string_password", cfg["db"]["dsn"].split(":", 2)[2].rsplit("@", 1)[0])
    b.g("token", cfg["slack"]["botToken"])
    b.g("token", cfg["slack"]["signingSecret"])
    b.g("email", cfg["admin"]["email"])
    b.g("password", smtp_pw)
    b.s("xxxxxxxxxxxxxxxx")
    b.s("${WEBHOOK_SECRET}")
    b.s(cfg["buildSha"])
    b.s("mysql.internal:3306")
    return (
        "config.json (notifier won't start: "
        + b.s("json: cannot unmarshal string into Go struct field")
        + "):\n"
        + json.dumps(cfg, indent=r.choice([2, 4]))
    )


@_shape("yaml_config")
def _yaml_cfg(r, b):
    redis_pw = pw_url(r)
    amqp_pw = pw_url(r)
    return f"""# config/production.yaml
server:
  port: {b.s("8080")}
  public_url: {b.s("https://status.example.org")}
database:
  url: "postgresql+asyncpg://svc:{b.g("connection_string_password", pw_url(r))}@{b.s(r.choice(DB_HOSTS[:3]))}:5432/status"
  pool_size: 10
cache:
  url: rediss://:{b.g("connection_string_password", redis_pw)}@{b.s("master.cache-prod.abc123.euw1.cache.amazonaws.com")}:6379/0
queue:
  broker: amqp://status:{b.g("connection_string_password", amqp_pw)}@rabbit.internal:5672/%2F
auth:
  oidc_client_id: {b.s(uuid4(r))}
  oidc_client_secret:
    {b.g("password", rs(r, 40, ALNUM + "~_.-"))}
  api_token: "{b.s("<your-token>")}"
integrations:
  github:
    app_id: {b.s(digits(r, 6))}
    webhook_secret: {b.g("password", hexs(r, 40))}
    token: {b.g("token", t_ghp(r))}
  openai_api_key: {b.g("api_key", t_openai(r))}
logging:
  level: debug  # set to info before release {b.s(ver(r))}"""


@_shape("email_thread")
def _email(r, b):
    c1 = r.choice(list(PEOPLE))
    f1, l1 = person(r, c1)
    f2, l2 = person(r)
    e1, e2 = email(r, f1, l1, work=True), email(r, f2, l2, work=True)
    ph1 = phone(r)
    ph2 = phone(r)
    vpn_pw = pw(r, "!#%^*-_+.?~@")
    return f"""From: {f2} {l2} <{b.g("email", e2)}>
Sent: {b.s(ts(r))}
To: IT Helpdesk <{b.s("helpdesk@example.com")}>
Subject: RE: VPN access for new contractor (ticket {b.s("INC-" + digits(r, 6))})

Hi team,

Following up on this — {b.g("person_name", f1 + " " + l1)} starts Monday and still can't log in. Temporary password we set was {b.g("password", vpn_pw)} but the portal at {b.s("https://vpn.example.com")} says {b.s("AUTH_FAILED_0x17")}.
You can reach {f1} directly on {b.g("phone", ph1)}.

Thanks,
{b.g("person_name", f2 + " " + l2)}
Platform Engineering
M: {b.g("phone", ph2)}
{e2}

-----Original Message-----
From: {f1} {l1} <{b.g("email", e1)}>
Subject: VPN access

Hello, my laptop serial is {b.s("C02" + rs(r, 9, UPPER + DIG))} and client version {b.s(ver(r))}. Thanks!"""


@_shape("support_ticket")
def _ticket(r, b):
    f, la = person(r)
    cust = f"{f} {la}"
    em = email(r, f, la, work=False)
    ph = phone(r)
    cc = card(r)
    last4 = cc.replace(" ", "").replace("-", "")[-4:]
    agent_f, agent_l = person(r, "en")
    tid = digits(r, 6)
    order = "ORD-" + rs(r, 10, UPPER + DIG)
    extra = ""
    if r.random() < 0.5:
        extra = f"\nCustomer also pasted their SSN for verification: {b.g('ssn', ssn(r))} (please purge)."
    return f"""Ticket #{b.s(tid)} — Double charge on order {b.s(order)}
Priority: High   Status: Open   Created: {b.s(ts(r))}
Requester: {cust} <{b.g("email", em)}>

Customer message:
"Hi, I was charged twice for my order. My card is {b.g("card", cc)} exp {r.randint(1, 12):02d}/{r.randint(26, 31)}. Please call me at {b.g("phone", ph)}. — {b.g("person_name", cust)}"{extra}

Internal note ({agent_f}): Stripe shows two charges {b.s("ch_" + rs(r, 24))} and {b.s("ch_" + rs(r, 24))}, card ending {last4}. Refund one via dashboard. Repro in test mode with {b.s(r.choice(TEST_CARDS[:3]))} works fine. Escalating to {b.g("person_name", agent_f + " " + agent_l)} in billing.
Error from refund API: {b.s("charge_already_refunded")}"""


@_shape("csv_customers")
def _csv(r, b):
    head = r.choice(
        [
            "id,name,email,phone,card_number,iban,ssn,signup_date",
            "customer_id;full_name;e_mail;tel;cc;iban;ssn;created",
        ]
    )
    sep = "," if "," in head else ";"
    rows = [head]
    for _i in range(r.randint(3, 4)):
        f, la = person(r)
        em = email(r, f, la)
        ph = phone(r)
        cc = card(r, fmt=r.choice(["plain", "space"]))
        ib = iban(r, spaced=False)
        sn = ssn(r)
        b.g("email", em)
        b.g("phone", ph)
        b.g("card", cc)
        b.g("iban", ib)
        b.g("ssn", sn)
        name = f"{f} {la}"
        if "'" in name or sep == ",":
            name = f'"{name}"'
        rows.append(sep.join([str(r.randint(10000, 99999)), name, em, ph, cc, ib, sn, b.s(ts(r)[:10])]))
    rows.append(
        sep.join(
            ["99999", '"Test User"', b.s("test.user@example.com"), "", b.s("4242424242424242"), "", "", "2024-01-01"]
        )
    )
    return (
        "pandas chokes on this export (ParserError: Error tokenizing data. C error: Expected 8 fields), first rows:\n\n"
        + "\n".join(rows)
    )


@_shape("git_config")
def _git(r, b):
    f, la = person(r)
    em = email(r, f, la)
    org = r.choice(["acme", "northwind", "kestrel-health"])
    sha = sha40(r)
    tok = r.choice([t_ghp, t_ghpat])(r)
    gl = t_glpat(r)
    text = f"""$ cat .git/config
[core]
	repositoryformatversion = 0
	bare = false
[remote "origin"]
	url = https://{r.choice(["x-access-token", "oauth2", "ci-bot"])}:{b.g("token", tok)}@github.com/{org}/platform.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "mirror"]
	url = https://gitlab-ci-token:{b.g("token", gl)}@gitlab.com/{org}/platform-mirror.git
[remote "upstream"]
	url = {b.s("git@github.com:" + org + "/platform.git")}
[user]
	name = {f} {la}
	email = {b.g("email", em)}
$ git log -1 --format='%H %an <%ae> %s'
{b.s(sha)} {f} {la} <{em}> fix: retry on {b.s("ECONNRESET")}
$ git push origin main
remote: Permission to {org}/platform.git denied to ci-bot.
fatal: unable to access 'https://github.com/{org}/platform.git/': The requested URL returned error: {b.s("403")}"""
    if r.random() < 0.5:
        text += f"\n$ git config --global credential.helper store && cat ~/.git-credentials\nhttps://{ascii_fold(f)}:{b.g('token', t_ghp(r))}@github.com"
    return text


@_shape("ssh_pem_keys")
def _keys(r, b):
    kind = r.choice(["rsa", "openssh", "ec", "pkcs8"])
    key, line = pem_key(r, kind)
    b.g("private_key", line)
    b.g("private_key", key.splitlines()[1])
    first, last = person(r)
    user = username(r, first, last)
    fp = "SHA256:" + b64bytes(r, 32).rstrip("=")
    pub = ssh_pub(r)
    name = "id_ed25519" if kind == "openssh" else ("id_rsa" if kind == "rsa" else "server.key")
    hp = home(r, user, r.choice(["linux", "mac"]))
    return f"""ssh keeps asking for a passphrase, is my key broken?

$ ssh -vT git@github.com
debug1: Offering public key: {b.g("home_path_user", hp)}/.ssh/{name} ED25519 {b.s(fp)}
debug1: Server accepts key: {hp}/.ssh/{name}
Load key "{hp}/.ssh/{name}": {b.s("error in libcrypto")}

$ cat ~/.ssh/{name}
{key}

$ cat ~/.ssh/{name}.pub
ssh-ed25519 {b.s(pub)} {user}@{hostname(r)}"""


@_shape("putty_ppk")
def _ppk(r, b):
    pub_lines = _wrap("AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rs(r, 342, B64), 64)
    priv_lines = _wrap("AAABAF" + rs(r, 1100, B64) + "==", 64)
    pick = priv_lines[len(priv_lines) // 2]
    b.g("private_key", pick)
    mac = hexs(r, 64)
    first, last = person(r)
    user = username(r, first, last)
    ver_ = r.choice(["2", "3"])
    return (
        f"""WinSCP says "{b.s("Server refused our key")}". Here's the .ppk I converted with puttygen {b.s("0.81")}:

PuTTY-User-Key-File-{ver_}: ssh-rsa
Encryption: none
Comment: rsa-key-{ts(r)[:10].replace("-", "")}
Public-Lines: {len(pub_lines)}
"""
        + "\n".join(pub_lines)
        + f"""
Private-Lines: {len(priv_lines)}
"""
        + "\n".join(priv_lines)
        + f"""
Private-MAC: {mac}

saved to {b.g("home_path_user", WINHOME + user)}\\Documents\\keys\\{b.s("bastion.ppk")}"""
    )


@_shape("netrc_pgpass_mycnf")
def _dotfiles(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, r.choice(["linux", "mac"]))
    hk = uuid4(r)
    pg_pw = pw(r, "!#%^*-_+.?~@")
    my_pw = pw(r, "!#%^*-_+.?~@")
    return f"""$ ls -la {b.g("home_path_user", hp)}
-rw------- 1 {user} staff  212 .netrc
-rw-r--r-- 1 {user} staff   88 .pgpass
-rw-r--r-- 1 {user} staff   64 .my.cnf
$ cat ~/.netrc
machine api.heroku.com
  login {b.g("email", email(r, first, last))}
  password {b.g("api_key", hk)}
machine {b.s("git.heroku.com")}
  login {user}
  password {hk}
machine artifactory.internal.example.com login ci password {b.g("password", pw(r, "!#%^*-_+.?~@"))}
$ cat ~/.pgpass
{b.s("db-prod-01.internal.acme.io:5432")}:analytics:{user}:{b.g("password", pg_pw)}
localhost:5432:*:postgres:{b.s("changeme")}
$ cat ~/.my.cnf
[client]
user=admin
password="{b.g("password", my_pw)}"
host={b.s("mysql-primary.internal")}
$ psql -h db-prod-01.internal.acme.io analytics
WARNING: password file "{hp}/.pgpass" has group or world access; permissions should be u=rw ({b.s("0600")}) or less"""


@_shape("copy_as_curl")
def _curl(r, b):
    f, la = person(r)
    em = email(r, f, la)
    lpw = pw(r, "!#%^*-_+.?~@")
    sess = rs(r, 64, HEX)
    xsrf = b64bytes(r, 40, urlsafe=True)
    style = r.choice(["bash", "cmd"])
    body = json.dumps({"email": b.g("email", em), "password": b.g("password", lpw), "remember": True})
    symfony = "Symfony\\\\Component\\\\HttpKernel\\\\Exception\\\\HttpException"
    if style == "bash":
        return f"""copied from Chrome devtools (Copy as cURL), the login works in the browser but not from curl:

curl 'https://{b.s("portal.example.com")}/api/auth/login' \\
  -H 'accept: application/json, text/plain, */*' \\
  -H 'accept-language: en-US,en;q=0.9' \\
  -H 'content-type: application/json' \\
  -H 'cookie: XSRF-TOKEN={b.g("token", xsrf)}; laravel_session={b.g("token", sess)}' \\
  -H 'origin: https://portal.example.com' \\
  -H 'x-xsrf-token: {xsrf}' \\
  -H 'sec-ch-ua-platform: "macOS"' \\
  --data-raw '{body}' \\
  --compressed

response: {{"message":"{b.s("CSRF token mismatch.")}","exception":"{b.s(symfony)}"}}"""
    body_cmd = body.replace('"', '\\"')
    return f"""Copy as cURL (cmd):

curl "https://{b.s("portal.example.com")}/api/auth/login" ^
  -H "authorization: Basic {b.g("token", base64.b64encode((em + ":" + lpw).encode()).decode())}" ^
  -H "cookie: sid={b.g("token", sess)}" ^
  -H "content-type: application/json" ^
  --data-raw "{body_cmd}" ^
  --compressed

-> HTTP {b.s("419")}"""


@_shape("postman_export")
def _postman(r, b):
    tok = jwt(r, long=True)
    key = api_token_generic(r)
    basic_pw = pw(r, "!#%^*-_+.?~@")
    coll = {
        "info": {
            "_postman_id": uuid4(r),
            "name": "Partner API",
            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
        },
        "auth": {"type": "bearer", "bearer": [{"key": "token", "value": tok, "type": "string"}]},
        "item": [
            {
                "name": "List invoices",
                "request": {
                    "method": "GET",
                    "header": [{"key": "X-Api-Key", "value": key}, {"key": "X-Tenant", "value": "{{tenantId}}"}],
                    "url": {"raw": "{{baseUrl}}/v3/invoices?status=open&limit=50", "host": ["{{baseUrl}}"]},
                },
            },
            {
                "name": "Legacy login",
                "request": {
                    "method": "POST",
                    "auth": {
                        "type": "basic",
                        "basic": [{"key": "username", "value": "partner-ops"}, {"key": "password", "value": basic_pw}],
                    },
                    "url": {"raw": "https://legacy.partner.example.net/login"},
                },
            },
        ],
        "variable": [
            {"key": "baseUrl", "value": "https://api.partner.example.net"},
            {"key": "tenantId", "value": uuid4(r)},
        ],
    }
    b.g("token", tok)
    b.g("api_key", key)
    b.g("password", basic_pw)
    b.s(coll["info"]["_postman_id"])
    b.s("{{baseUrl}}/v3/invoices?status=open&limit=50")
    b.s(coll["variable"][1]["value"])
    return "exported Postman collection, the invoices call returns 401:\n" + json.dumps(coll, indent=2)


@_shape("slack_bots")
def _slack(r, b):
    hook = slack_hook_path(r)
    bot = t_xoxb(r)
    app = t_xapp(r)
    sign = hexs(r, 32)
    ch = "C0" + rs(r, 9, UPPER + DIG)
    user_tok = t_xoxp(r)
    return f"""my slack bot can't post (error: {b.s("not_in_channel")}). setup:

SLACK_WEBHOOK_URL=https://{b.s("hooks.slack.com")}/services/{b.g("token", hook)}
SLACK_BOT_TOKEN={b.g("token", bot)}
SLACK_APP_TOKEN={b.g("token", app)}
SLACK_SIGNING_SECRET={b.g("token", sign)}
SLACK_CHANNEL_ID={b.s(ch)}

$ curl -X POST -H 'Authorization: Bearer {bot}' -H 'Content-type: application/json; charset=utf-8' \\
    --data '{{"channel":"{ch}","text":"deploy {b.s(ver(r))} done"}}' https://slack.com/api/chat.postMessage
{{"ok":false,"error":"not_in_channel","warning":"missing_charset"}}
$ curl 'https://slack.com/api/users.list?token={b.g("token", user_tok)}&limit=2'
{{"ok":true,"members":[{{"id":"{b.s("U0" + rs(r, 9, UPPER + DIG))}","name":"deploybot","is_bot":true}}]}}"""


@_shape("payment_log")
def _payments(r, b):
    lines = []
    for _ in range(r.randint(2, 3)):
        cc = card(r, fmt="plain")
        lines.append(
            f"{ts_ms(r)} INFO  [charge-worker-{r.randint(1, 8)}] {b.s('pi_' + rs(r, 24))} amount=4999 currency=eur pan={b.g('card', cc)} exp=0{r.randint(1, 9)}/2{r.randint(6, 9)} result={b.s('card_declined')} decline_code=insufficient_funds"
        )
    ib = iban(r, r.choice(["DE", "FR", "NL", "ES", "IT"]))
    f, la = person(r, r.choice(["de", "fr", "es"]))
    lines.append(
        f"{ts_ms(r)} INFO  [payouts] SEPA payout {b.s('po_' + rs(r, 24))} to {b.g('iban', ib)} (holder: {f} {la}) status=pending"
    )
    lines.append(f"{ts_ms(r)} DEBUG [webhooks] verifying signature with secret {b.g('token', t_whsec(r))}")
    lines.append(
        f"{ts_ms(r)} DEBUG [charge-worker-2] test charge with {b.s(r.choice(TEST_CARDS))} succeeded idempotency_key={b.s(uuid4(r))}"
    )
    lines.append(
        f"{ts_ms(r)} ERROR [charge-worker-3] Stripe API error {b.s('resource_missing')}: No such customer: '{b.s('cus_' + rs(r, 14))}'; request-id={b.s('req_' + rs(r, 14))}"
    )
    return (
        "we log full card numbers?! found this in the payments service logs:\n\n"
        + "\n".join(lines)
        + f"\n\nI told {b.g('person_name', f + ' ' + la)} to stop the payouts until we fix it."
    )


@_shape("prose_german")
def _de(r, b):
    f, la = person(r, "de")
    f2, l2 = person(r, "de")
    ph = phone(r, "de")
    em = email(r, f, la)
    ib = iban(r, "DE")
    p = pw(r, "!#%^*-_+.?~@")
    return f"""Hallo zusammen,

mein Kollege {b.g("person_name", f + " " + la)} hat gestern das Passwort für die Staging-Datenbank auf „{b.g("password", p)}" geändert, seitdem schlägt der Job mit {b.s("FATAL: password authentication failed")} fehl. Er ist bis Freitag im Urlaub, erreichbar unter {b.g("phone", ph)} oder {b.g("email", em)}.
Die Rückerstattung für den Kunden {b.g("person_name", f2 + " " + l2)} bitte auf das Konto {b.g("iban", ib)} überweisen.
Der Host ist {b.s("staging-db.intern.example.de")}, Port {b.s("5433")}, Version {b.s(ver(r))}.

Viele Grüße"""


@_shape("prose_french")
def _fr(r, b):
    f, la = person(r, "fr")
    ph = phone(r, "fr")
    em = email(r, f, la)
    ib = iban(r, "FR")
    cc = card(r)
    tok = t_ghp(r) if r.random() < 0.5 else t_glpat(r)
    return f"""Bonjour,

Je m'appelle {b.g("person_name", f + " " + la)}, je travaille sur l'intégration du paiement. Voici mon numéro : {b.g("phone", ph)} et mon adresse : {b.g("email", em)}.
Pour le remboursement, mon RIB : {b.g("iban", ib)}. La carte utilisée était la {b.g("card", cc)}.
Le jeton d'accès que j'utilise est {b.g("token", tok)} — est-ce qu'il a les bons droits ? L'erreur est {b.s("HTTP 403")} sur {b.s("https://api.github.com/repos/acme/paiement")}.
(Pour les tests j'utilise {b.s("4242 4242 4242 4242")}.)

Cordialement"""


@_shape("prose_spanish")
def _es(r, b):
    f, la = person(r, "es")
    f2, l2 = person(r, "es")
    ph = phone(r, "es")
    em = email(r, f, la)
    ib = iban(r, "ES")
    p = pw(r, "!#%^*-_+.?~@")
    return f"""Hola equipo,

Soy {b.g("person_name", f + " " + la)}. El servidor {b.s("api-pagos.interno:8443")} sigue devolviendo {b.s("ECONNREFUSED")}. La contraseña del usuario admin es {b.g("password", p)} (la cambió {b.g("person_name", f2 + " " + l2)} ayer).
Mi móvil: {b.g("phone", ph)}, correo: {b.g("email", em)}.
Para la factura, la cuenta es {b.g("iban", ib)}.
Versión desplegada: {b.s(ver(r))}, commit {b.s(sha40(r))}.

Gracias"""


@_shape("prose_japanese")
def _ja(r, b):
    sei, mei = r.choice(KANJI_NAMES[0]), r.choice(KANJI_NAMES[1])
    kanji = sei + r.choice(["", " ", "　"]) + mei
    fr, lr = person(r, "ja")
    ph = phone(r, "jp")
    em = email(r, fr, lr)
    p = pw(r, "!#%^*-_+.?~@")
    key = r.choice([t_openai, t_anthropic, t_aiza])(r)
    return f"""お疲れ様です。{b.g("person_name", kanji)}です。
本番DBのパスワードは「{b.g("password", p)}」に変更しました。接続先は {b.s("prod-db.internal.example.jp")}:{b.s("5432")} です。
APIキーは {b.g("api_key", key)} を使ってください（{b.s(".env.example")} には {b.s("your-api-key-here")} のままで）。
何かあれば携帯 {b.g("phone", ph)} か {b.g("email", em)} までご連絡ください。
担当: {b.g("person_name", fr + " " + lr)}
エラー: {b.s("ERR_SSL_PROTOCOL_ERROR")}"""


@_shape("prose_portuguese")
def _pt(r, b):
    f, la = person(r, "pt")
    ph = phone(r, "br" if r.random() < 0.7 else "pt")
    em = email(r, f, la)
    cc = card(r)
    p = pw(r, "!#%^*-_+.?~@")
    ib = iban(r, "PT")
    return f"""Oi pessoal, aqui é {b.g("person_name", f + " " + la)}.
O deploy da versão {b.s(ver(r))} falhou com {b.s("ETIMEDOUT")} no host {b.s("10.10.0.5")}.
A senha do Grafana é {b.g("password", p)} e o cartão corporativo para a AWS é {b.g("card", cc)}.
Pagamento do fornecedor em Portugal: IBAN {b.g("iban", ib)}.
Qualquer coisa me chama no WhatsApp {b.g("phone", ph)} ou no e-mail {b.g("email", em)}.
Valeu!"""


@_shape("hr_onboarding")
def _hr(r, b):
    f, la = person(r, r.choice(["en", "es"]))
    em = email(r, f, la, work=False)
    ph = phone(r, "us")
    sn = ssn(r, r.choice(["dash", "dash", "space", "plain"]))
    mgr_f, mgr_l = person(r, "en")
    return f"""Can you turn this into a JSON payload for the BambooHR API? ({b.s("POST /api/gateway.php/acme/v1/employees")})

New hire: {b.g("person_name", f + " " + la)}
Start date: {b.s(ts(r)[:10])}
Personal email: {b.g("email", em)}
Mobile: {b.g("phone", ph)}
SSN: {b.g("ssn", sn)}
Direct deposit: routing {b.s("021000021")} / account {digits(r, 10)}
Manager: {b.g("person_name", mgr_f + " " + mgr_l)}
Employee ID: {b.s("E-" + digits(r, 5))}
Laptop request: {b.s("JIRA-" + digits(r, 4))}

The API key for the sandbox is {b.s("<your-token>")} and prod is {b.g("api_key", hexs(r, 40))}."""


@_shape("registry_auth")
def _registry(r, b):
    npm = t_npm(r)
    pypi = t_pypi(r)
    nexus_pw = pw_url(r)
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, r.choice(["linux", "mac", "wsl"]))
    return f"""npm publish gives {b.s("E401")} and twine gives 403. my config files:

# {b.g("home_path_user", hp)}/.npmrc
//registry.npmjs.org/:_authToken={b.g("token", npm)}
@acme:registry=https://{b.s("npm.pkg.github.com")}
//npm.pkg.github.com/:_authToken={b.g("token", t_ghp(r))}
always-auth=true

# ~/.pypirc
[pypi]
  username = __token__
  password = {b.g("token", pypi)}

# pip.conf
[global]
index-url = https://ci:{b.g("connection_string_password", nexus_pw)}@{b.s("nexus.example.com")}/repository/pypi/simple

# package-lock.json excerpt
"node_modules/{b.s("lodash")}": {{
  "version": "{b.s("4.17.21")}",
  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",
  "integrity": "{b.s(integrity(r))}"
}}

$ twine upload -u __token__ -p {b.g("token", t_pypi(r))} dist/*
HTTPError: 403 Forbidden from https://upload.pypi.org/legacy/"""


@_shape("ml_hub")
def _ml(r, b):
    hf = t_hf(r)
    wandb = hexs(r, 40)
    rev = sha40(r)
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, "linux")
    return f"""$ huggingface-cli login --token {b.g("token", hf)}
Token is valid (permission: write).
Your token has been saved to {b.g("home_path_user", hp)}/.cache/huggingface/token
$ wandb login {b.g("api_key", wandb)}
wandb: Appending key for api.wandb.ai to your netrc file: {hp}/.netrc
$ python train.py --model meta-llama/Llama-3.1-8B --revision {b.s(rev)}
  File "{hp}/miniconda3/envs/ft/lib/python3.11/site-packages/{b.s("huggingface_hub/utils/_http.py")}", line 406, in hf_raise_for_status
huggingface_hub.errors.GatedRepoError: {b.s("401 Client Error")}. (Request ID: {b.s("Root=1-" + hexs(r, 8) + "-" + hexs(r, 24))})
Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/{rev}/config.json.

also tried: HF_TOKEN="{b.g("token", t_hf(r))}" python train.py  -> same
cuda {b.s("12.4")}, torch {b.s("2.4.1")}, transformers {b.s("4.44.2")}"""


@_shape("vendor_tokens_misc")
def _vendors(r, b):
    picks = r.sample(
        [
            ("DIGITALOCEAN_ACCESS_TOKEN", "token", t_dop),
            ("DATABRICKS_TOKEN", "token", t_dapi),
            ("SHOPIFY_ADMIN_TOKEN", "token", t_shopify),
            ("TWILIO_API_KEY", "api_key", t_twilio_sk),
            ("TWILIO_AUTH_TOKEN", "token", lambda rr: hexs(rr, 32)),
            ("LINEAR_API_KEY", "api_key", t_linear),
            ("SUPABASE_ACCESS_TOKEN", "token", t_supabase),
            ("DOPPLER_TOKEN", "token", t_doppler),
            ("TELEGRAM_BOT_TOKEN", "token", t_telegram),
            ("VAULT_TOKEN", "token", t_vault),
            ("GITLAB_RUNNER_TOKEN", "token", t_glrt),
            ("ATLASSIAN_API_TOKEN", "token", t_atlassian),
        ],
        4,
    )
    sep = r.choice(["=", ": ", " => "])
    body = []
    for name, kind, mk in picks:
        v = mk(r)
        key = name if sep == "=" else name.lower().replace("_", r.choice(["_", "-"]))
        q = "" if sep == "=" else '"'
        body.append(f"{key}{sep}{q}{b.g(kind, v)}{q}")
    body.append(f"DATABRICKS_HOST{sep}{b.s('https://adb-' + digits(r, 16) + '.7.azuredatabricks.net')}")
    body.append(f"TWILIO_ACCOUNT_SID_PLACEHOLDER{sep}{b.s('ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')}")
    return (
        f"secrets we need to move into Vault (mount {b.s('kv/v2')}), can you write the vault kv put commands?\n\n"
        + "\n".join(body)
    )


@_shape("oauth_token_response")
def _oauth(r, b):
    at = jwt(r, long=True)
    rt = rs(r, r.choice([43, 64, 86]), B64URL)
    idt = jwt(r)
    cs = t_gocspx(r) if r.random() < 0.5 else rs(r, 40, ALNUM)
    cid = digits(r, 12) + "-" + rs(r, 32, LOWER + DIG) + ".apps.googleusercontent.com"
    return f"""$ curl -s https://{b.s("oauth2.googleapis.com")}/token -d grant_type=authorization_code -d code={b.g("token", "4/0A" + rs(r, 60, B64URL))} -d client_id={b.s(cid)} -d client_secret={b.g("password", cs)} -d redirect_uri={b.s("http://localhost:8085/callback")}
{{
  "access_token": "{b.g("token", at)}",
  "expires_in": 3599,
  "refresh_token": "{b.g("token", rt)}",
  "scope": "{b.s("https://www.googleapis.com/auth/drive.readonly")}",
  "token_type": "Bearer",
  "id_token": "{b.g("token", idt)}"
}}
then the next call gives {b.s("invalid_grant")} after an hour, why is the refresh failing?"""


@_shape("query_string_keys")
def _qs(r, b):
    owm = hexs(r, 32)
    gmaps = t_aiza(r)
    sas = rs(r, 43, ALNUM) + "%3D"
    at = rs(r, 40, ALNUM)
    return f"""these are the URLs from our nginx access log that return 401:

{b.s(ip_pub(r))} - - [{r.randint(10, 28)}/Mar/2025:10:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /data/2.5/weather?q=Berlin&units=metric&appid={b.g("api_key", owm)} HTTP/1.1" 401 107 "-" "python-requests/{b.s("2.32.3")}"
{ip_pub(r)} - - [{r.randint(10, 28)}/Mar/2025:10:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /maps/api/geocode/json?address=Alexanderplatz&key={b.g("api_key", gmaps)} HTTP/1.1" 200 2211 "-" "okhttp/4.12.0"
{ip_pub(r)} - - [{r.randint(10, 28)}/Mar/2025:10:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /exports/daily.csv?sv=2021-08-06&se=2025-04-01T00%3A00%3A00Z&sr=b&sp=r&sig={b.g("token", sas)} HTTP/1.1" 403 0 "-" "curl/8.5.0"
{ip_pub(r)} - - [{r.randint(10, 28)}/Mar/2025:10:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /api/v1/me?access_token={b.g("token", at)}&fields=id,name HTTP/1.1" 401 51 "-" "Mozilla/5.0"
{ip_pub(r)} - - [{r.randint(10, 28)}/Mar/2025:10:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /healthz?probe={b.s(uuid4(r))} HTTP/1.1" 200 2 "-" "kube-probe/{b.s("1.29")}"
upstream: {b.s("http://127.0.0.1:8000")}"""


@_shape("heroku_credentials")
def _heroku(r, b):
    user = "u" + rs(r, 13, LOWER + DIG)
    pgpw = "p" + hexs(r, 63)
    host = f"c{rs(r, 6, LOWER + DIG)}.cluster-czrs8kj4isg7.us-east-1.rds.amazonaws.com"
    db = "d" + rs(r, 13, LOWER + DIG)
    return f"""$ heroku pg:credentials:url DATABASE -a acme-api
Connection information for default credential.
Connection info string:
   "dbname={db} host={b.s(host)} port={b.s("5432")} user={user} password={b.g("connection_string_password", pgpw)} sslmode=require"
Connection URL:
   postgres://{user}:{pgpw}@{host}:5432/{db}

$ heroku config -a acme-api
=== acme-api Config Vars
DATABASE_URL:        postgres://{user}:{pgpw}@{host}:5432/{db}
REDIS_TLS_URL:       rediss://:{b.g("connection_string_password", "p" + hexs(r, 63))}@ec2-{ip_pub(r).replace(".", "-")}.compute-1.amazonaws.com:{b.s("12980")}
HEROKU_APP_ID:       {b.s(uuid4(r))}
SENDGRID_API_KEY:    {b.g("api_key", t_sendgrid(r))}
WEB_CONCURRENCY:     2
STACK:               {b.s("heroku-24")}"""


@_shape("prose_chat_credentials")
def _chat(r, b):
    f, la = person(r, "en")
    f2, l2 = person(r)
    p1 = pw(r, "!#%^*-_+.?~@$")
    k, m, n, label = provider(r)
    tok = m(r)
    em = email(r, f2, l2, work=True)
    style = r.random()
    nxt = "\n" if style < 0.5 else " "
    return f"""ok so {b.g("person_name", f + " " + la)} gave me the creds for the staging box, the root password is{nxt}{b.g("password", p1)}
and our {label} key is {b.g(k, tok)} (I know, I know, I'll rotate it after).
{b.g("person_name", f2 + " " + l2)} ({b.g("email", em)}) says the config key should be {b.s(n)} not {b.s(n.lower().replace("_", "-"))}.
The error we get is {b.s(r.choice(ERRCODES))} from {b.s(r.choice(PUBLIC_HOSTS))}. What am I doing wrong? The docs example uses {b.s(r.choice(PLACEHOLDERS))}."""


@_shape("dotnet_user_secrets")
def _user_secrets(r, b):
    first, last = person(r)
    user = username(r, first, last)
    guid = uuid4(r)
    sec = {
        "ConnectionStrings:Redis": f"{DB_HOSTS[6]}:6380,password={pw(r, '!#%^*-_+.?~@')},ssl=True,abortConnect=False",
        "Auth0:ClientSecret": rs(r, 64, B64URL),
        "Twilio:AuthToken": hexs(r, 32),
        "Twilio:AccountSid": "AC" + hexs(r, 32),
    }
    redis_pw = sec["ConnectionStrings:Redis"].split("password=")[1].split(",")[0]
    b.g("connection_string_password", redis_pw)
    b.g("password", sec["Auth0:ClientSecret"])
    b.g("token", sec["Twilio:AuthToken"])
    b.s(guid)
    b.s("abortConnect=False")
    path = f"{b.g('home_path_user', WINHOME + user)}\\AppData\\Roaming\\Microsoft\\UserSecrets\\{guid}\\secrets.json"
    return (
        f"""dotnet user-secrets list works locally but CI can't find them ({b.s("UserSecretsId")} = {guid}). File at {path}:

"""
        + json.dumps(sec, indent=2)
        + f"""

StackExchange.Redis.RedisConnectionException: {b.s("It was not possible to connect to the redis server(s)")}. Error connecting right now. To allow this multiplexer to continue retrying until it's able to connect, use abortConnect=false."""
    )


@_shape("k8s_manifest_inline")
def _k8s_manifest(r, b):
    pgpw = pw(r, "-_.~")
    tok = t_ghp(r) if r.random() < 0.5 else t_glpat(r)
    enc = base64.b64encode(f'{{"auths":{{"ghcr.io":{{"username":"ci","password":"{tok}"}}}}}}'.encode()).decode()
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  labels:
    app.kubernetes.io/version: "{b.s(ver(r))}"
spec:
  template:
    spec:
      containers:
        - name: worker
          image: ghcr.io/acme/worker@{b.s(digest(r))}
          env:
            - name: DATABASE_URL
              value: postgresql://worker:{b.g("connection_string_password", pgpw)}@{b.s("postgres.db.svc.cluster.local")}:5432/jobs
            - name: GH_TOKEN
              value: "{b.g("token", tok)}"
            - name: API_KEY
              valueFrom:
                secretKeyRef:
                  name: {b.s("worker-secrets")}
                  key: {b.s("api-key")}
---
apiVersion: v1
kind: Secret
metadata:
  name: ghcr-pull
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: {b.g("token", enc)}
# kubectl apply -f worker.yaml -> {b.s("ImagePullBackOff")}"""


@_shape("jupyter_notebook_cell")
def _notebook(r, b):
    first, last = person(r)
    user = username(r, first, last)
    hp = home(r, user, r.choice(["mac", "linux", "win"]))
    hp_json = hp.replace("\\", "\\\\")
    key = r.choice([t_openai, t_anthropic, t_hf])(r)
    kind = "token" if key.startswith("hf_") else "api_key"
    snow_pw = pw(r, "!#%^*-_+.?~@")
    acct = rs(r, 7, UPPER) + "-" + rs(r, 7, UPPER + DIG)
    cell = {
        "cell_type": "code",
        "execution_count": r.randint(3, 40),
        "metadata": {},
        "outputs": [
            {
                "name": "stderr",
                "output_type": "stream",
                "text": [
                    f"{hp}/analysis/.venv/lib/python3.12/site-packages/snowflake/connector/connection.py:{r.randint(100, 900)}: UserWarning: Bad owner or permissions\n"
                ],
            }
        ],
        "source": [
            "import snowflake.connector, os\n",
            f'os.environ["API_KEY"] = "{key}"\n',
            f'conn = snowflake.connector.connect(user="ANALYST", password="{snow_pw}", account="{acct}", warehouse="{"COMPUTE_WH"}")\n',
        ],
    }
    b.g(kind, key)
    b.g("password", snow_pw)
    b.g("home_path_user", hp_json)
    b.s("COMPUTE_WH")
    b.s("snowflake/connector/connection.py")
    return "this cell from my notebook (.ipynb json) hangs:\n" + json.dumps(cell, indent=1, ensure_ascii=False)


@_shape("ticket_with_bank_details")
def _invoice(r, b):
    f, la = person(r, r.choice(["de", "fr", "es", "pt", "en"]))
    ib = iban(r)
    ib2 = iban(r)
    em = email(r, f, la, work=True)
    ph = phone(r)
    inv = "INV-" + digits(r, 6)
    return f"""Jira {b.s("FIN-" + digits(r, 4))}: vendor payment failed

Reporter: {b.g("person_name", f + " " + la)}
Description:
The payout batch {b.s("batch_" + hexs(r, 12))} rejected invoice {b.s(inv)} with {b.s("AC01 IncorrectAccountNumber")}.
Vendor says the right account is {b.g("iban", ib)} (old one on file was {b.g("iban", ib2)}).
Contact: {b.g("email", em)}, {b.g("phone", ph)}.
BIC: {b.s(r.choice(["DEUTDEFFXXX", "BNPAFRPPXXX", "INGBNL2A", "CAIXESBBXXX"]))}
Sandbox IBAN that passes validation: {b.s("DE89370400440532013000")} — docs example."""


def pem_cert(r: random.Random) -> tuple[str, str]:
    raw = bytes.fromhex("3082036f30820257a0030201020214") + bytes(r.getrandbits(8) for _ in range(860))
    body = _wrap(base64.b64encode(raw).decode(), 64)
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(body) + "\n-----END CERTIFICATE-----", body[len(body) // 2]


@_shape("nginx_tls")
def _nginx_tls(r, b):
    cert, cert_line = pem_cert(r)
    key, key_line = pem_key(r, r.choice(["rsa", "pkcs8", "ec"]))
    b.s(cert_line)
    b.g("private_key", key_line)
    dom = r.choice(["shop.example.org", "api.example.com", "status.example.net"])
    return f"""nginx -t says {b.s("SSL_CTX_use_PrivateKey_file")} failed ({b.s("key values mismatch")}). Are these two a pair?

# {b.s("/etc/nginx/ssl/" + dom + ".crt")}
{cert}

# /etc/nginx/ssl/{dom}.key
{key}

server {{
    listen {b.s("443 ssl http2")};
    server_name {b.s(dom)};
    ssl_certificate     /etc/nginx/ssl/{dom}.crt;
    ssl_certificate_key /etc/nginx/ssl/{dom}.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    proxy_pass {b.s("http://127.0.0.1:3000")};
}}"""
