# ruff: noqa: E501
"""Blind corpus v6 for the scrubber bench.

Written without reading the scrubber, its tests or the earlier corpora. Every secret and every
piece of personal data here is assembled at run time from the seeded ``random.Random``; no
realistic secret is written literally in this file. Provider tokens follow the public formats
(prefix, alphabet, length), cards pass Luhn, IBANs carry valid mod-97 and national check digits,
SSNs are in the issued ranges and phone numbers are valid for their region.

``must_go`` lists (kind, exact substring) that must be gone after scrubbing; ``must_stay`` lists
near-misses a developer needs to keep (placeholders, hashes, versions, UUIDs, config keys,
documented fake keys, test cards, example.com addresses, public hostnames, timestamps, ...).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

try:  # used only to reject an unlucky random draw; the generators aim for valid values anyway
    import phonenumbers as _pn
except ImportError:  # pragma: no cover
    _pn = None
try:
    from stdnum import iban as _stdiban
except ImportError:  # pragma: no cover
    _stdiban = None


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]] = field(default_factory=list)
    must_stay: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- primitives

DIG = string.digits
UP = string.ascii_uppercase
LOW = string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
HEXL = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rs(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def hexs(r: random.Random, n: int) -> str:
    return rs(r, n, HEXL)


def digits(r: random.Random, n: int) -> str:
    return rs(r, n, DIG)


def uuid4(r: random.Random) -> str:
    h = hexs(r, 32)
    h = h[:12] + "4" + h[13:16] + r.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ts(r: random.Random, sep: str = "T", z: str = "Z") -> str:
    return f"20{r.randint(22, 26)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}{sep}{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}{z}"


def ver(r: random.Random) -> str:
    return f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 30)}"


def b64_of(r: random.Random, nbytes: int) -> str:
    return base64.b64encode(bytes(r.getrandbits(8) for _ in range(nbytes))).decode()


class B:
    """Collects must_go / must_stay while a paste is being written."""

    def __init__(self) -> None:
        self.go: list[tuple[str, str]] = []
        self.stay: list[str] = []

    def g(self, kind: str, s: str) -> str:
        if (kind, s) not in self.go:
            self.go.append((kind, s))
        return s

    def s(self, s: str) -> str:
        if s not in self.stay:
            self.stay.append(s)
        return s

    def paste(self, shape: str, text: str) -> Paste:
        return Paste(shape, text, list(self.go), list(self.stay))


# --------------------------------------------------------------------------- people

FIRST = [
    "Maria",
    "James",
    "Aisha",
    "Lukas",
    "Sofia",
    "Kenji",
    "Chloe",
    "Mateo",
    "Priya",
    "Oliver",
    "Ingrid",
    "Rafael",
    "Yuki",
    "Hannah",
    "Tomasz",
    "Amelie",
    "Diego",
    "Fatima",
    "Noah",
    "Elena",
    "Jonas",
    "Camille",
    "Arjun",
    "Lucia",
    "Henrik",
    "Beatriz",
    "Sven",
    "Marta",
    "Theo",
    "Naomi",
]
LAST = [
    "Garcia",
    "Schmidt",
    "Okafor",
    "Tanaka",
    "Dubois",
    "Silva",
    "Kowalski",
    "Johansson",
    "Rossi",
    "Fernandes",
    "Novak",
    "Moreau",
    "Hughes",
    "Yamamoto",
    "Becker",
    "Lopez",
    "Patel",
    "Lindqvist",
    "Costa",
    "Meyer",
    "Nakamura",
    "Bernard",
    "Wright",
    "Herrera",
    "Sato",
    "Fischer",
    "Almeida",
    "Kaur",
    "Brennan",
    "Vogel",
]
MAIL_DOMAINS = [
    "gmail.com",
    "outlook.com",
    "yahoo.co.uk",
    "gmx.de",
    "web.de",
    "proton.me",
    "icloud.com",
    "hotmail.fr",
    "orange.fr",
    "libero.it",
    "uol.com.br",
    "yahoo.co.jp",
    "fastmail.com",
]
CORP_DOMAINS = [
    "brightwave-labs.io",
    "nordhafen-logistik.de",
    "pixelforge.co.uk",
    "lumen-analytics.com",
    "tiendaverde.es",
    "hanamori-soft.jp",
    "cafeteria-online.com.br",
    "atelier-numerique.fr",
    "quantaledger.com",
    "fjordbyte.no",
]
PW_WORDS = [
    "falcon",
    "maple",
    "orbit",
    "quartz",
    "lantern",
    "harbor",
    "cobalt",
    "meadow",
    "tundra",
    "zephyr",
    "saffron",
    "granite",
    "willow",
    "ember",
    "nimbus",
    "pepper",
    "rocket",
    "velvet",
    "juniper",
    "monsoon",
    "glacier",
    "tamarind",
    "cinder",
    "otter",
]


def person(r: random.Random) -> tuple[str, str]:
    return r.choice(FIRST), r.choice(LAST)


def email(r: random.Random, first: str | None = None, last: str | None = None, corp: bool | None = None) -> str:
    if first is None or last is None:
        first, last = person(r)
    f, la = first.lower(), last.lower()
    local = r.choice(
        [
            f"{f}.{la}",
            f"{f[0]}{la}",
            f"{f}{la[0]}",
            f"{f}_{la}{r.randint(1, 99)}",
            f"{la}.{f}",
            f"{f}{r.randint(70, 2005)}",
        ]
    )
    if corp is None:
        corp = r.random() < 0.5
    dom = r.choice(CORP_DOMAINS if corp else MAIL_DOMAINS)
    if r.random() < 0.15:
        local += "+" + r.choice(["github", "billing", "dev", "news"])
    return f"{local}@{dom}"


def username(r: random.Random, first: str | None = None, last: str | None = None) -> str:
    if first is None or last is None:
        first, last = person(r)
    f, la = first.lower(), last.lower()
    return r.choice([f, f"{f[0]}{la}", f"{f}.{la}", f"{la}{f[0]}", f"{f}{la[:3]}", f"{f}_{la}"])


# --------------------------------------------------------------------------- secrets

SAFE_PUNCT = "!%^*-_+=.~"
RICH_PUNCT = "!#$%^&*-_+=.~@?()[]{}<>,;:|"
URI_PUNCT = "-_.~!*"


def pw(r: random.Random, mode: str = "safe") -> str:
    punct = {"safe": SAFE_PUNCT, "rich": RICH_PUNCT, "uri": URI_PUNCT, "alnum": ""}[mode]
    style = r.random()
    if style < 0.45 or not punct:
        n = r.choice([10, 12, 14, 16, 20, 24, 32, 44])
        body = rs(r, n, ALNUM + punct)
        body = r.choice(UP) + body + r.choice(DIG) + (r.choice(punct) if punct else r.choice(LOW))
        return body
    if style < 0.75:
        return (
            r.choice(PW_WORDS).capitalize()
            + r.choice(punct)
            + digits(r, r.randint(2, 5))
            + r.choice(punct)
            + r.choice(PW_WORDS)
        )
    sep = r.choice("-._" if mode != "alnum" else "_")
    words = [r.choice(PW_WORDS) for _ in range(r.randint(3, 4))]
    words.insert(r.randint(0, len(words)), str(r.randint(10, 9999)))
    return sep.join(w.capitalize() if r.random() < 0.5 else w for w in words)


def gh_classic(r):
    return "ghp_" + rs(r, 36)


def gh_fine(r):
    return "github_pat_11" + rs(r, 20, UP + DIG) + "_" + rs(r, 59)


def gh_app(r):
    return r.choice(["ghs_", "gho_", "ghu_", "ghr_"]) + rs(r, 36)


def glpat(r):
    return "glpat-" + rs(r, 20, B64URL)


def slack_bot(r):
    return f"xoxb-{digits(r, 11)}-{digits(r, 13)}-{rs(r, 24)}"


def slack_user(r):
    return f"xoxp-{digits(r, 11)}-{digits(r, 11)}-{digits(r, 13)}-{hexs(r, 32)}"


def stripe_live(r):
    return r.choice(["sk_live_", "rk_live_"]) + rs(r, r.choice([24, 99]))


def openai_key(r):
    if r.random() < 0.7:
        return "sk-proj-" + rs(r, 74, B64URL) + "T3BlbkFJ" + rs(r, 74, B64URL)
    return "sk-" + rs(r, 20) + "T3BlbkFJ" + rs(r, 20)


def anthropic_key(r):
    return "sk-ant-api03-" + rs(r, 93, B64URL) + "AA"


def aws_akid(r):
    return "AKIA" + rs(r, 16, UP + "234567")


def aws_secret(r):
    return rs(r, 40, ALNUM + "+/")


def google_key(r):
    return "AIza" + rs(r, 35, B64URL)


def sendgrid(r):
    return "SG." + rs(r, 22, B64URL) + "." + rs(r, 43, B64URL)


def twilio_token(r):
    return hexs(r, 32)


def npm_tok(r):
    return "npm_" + rs(r, 36)


def pypi_tok(r):
    return "pypi-AgEIcHlwaS5vcmc" + rs(r, r.choice([136, 160, 180]), B64URL)


def hf_tok(r):
    return "hf_" + rs(r, 34, string.ascii_letters)


def shopify(r):
    return "shpat_" + hexs(r, 32)


def do_tok(r):
    return "dop_v1_" + hexs(r, 64)


def databricks(r):
    return "dapi" + hexs(r, 32) + r.choice(["", "-2", "-3"])


def jwt(r, sub: str | None = None):
    def enc(o):
        return base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).decode().rstrip("=")

    head = enc({"alg": r.choice(["HS256", "RS256"]), "typ": "JWT"})
    body = enc(
        {
            "sub": sub or digits(r, 8),
            "iat": r.randint(1_690_000_000, 1_790_000_000),
            "scope": r.choice(["read write", "admin", "api"]),
        }
    )
    return f"{head}.{body}.{rs(r, 43, B64URL)}"


def azure_key(r):
    return base64.b64encode(bytes(r.getrandbits(8) for _ in range(64))).decode()


def google_oauth(r):
    return "ya29." + rs(r, 150, B64URL)


def telegram(r):
    return f"{r.randint(1_000_000_000, 7_999_999_999)}:AA{rs(r, 33, B64URL)}"


def misc_api_key(r) -> str:
    return r.choice(
        [
            lambda: "lin_api_" + rs(r, 40),
            lambda: "secret_" + rs(r, 43),
            lambda: "glsa_" + rs(r, 32) + "_" + hexs(r, 8),
            lambda: "pul-" + hexs(r, 40),
            lambda: "key-" + hexs(r, 32),
            lambda: hexs(r, 32) + "-us" + str(r.randint(1, 21)),
            lambda: "dp.st.prd." + rs(r, 43),
            lambda: "ATATT3xFfGF0" + rs(r, 180, B64URL) + "=" + hexs(r, 8).upper(),
        ]
    )()


# --------------------------------------------------------------------------- numbers: phones, cards, IBANs, SSNs


def _ok_phone(s: str, region: str) -> bool:
    if _pn is None:
        return True
    try:
        return _pn.is_valid_number(_pn.parse(s, None if s.startswith("+") else region))
    except Exception:
        return False


def _phone_draw(r: random.Random, region: str) -> str:
    d = lambda n: digits(r, n)  # noqa: E731
    intl = r.random() < 0.45
    if region == "US":
        a = r.choice(
            [
                "212",
                "415",
                "312",
                "617",
                "206",
                "303",
                "512",
                "646",
                "202",
                "404",
                "713",
                "305",
                "503",
                "720",
                "917",
                "773",
            ]
        )
        e = str(r.randint(2, 9)) + d(2)
        n = d(4)
        if intl:
            return r.choice([f"+1 {a} {e} {n}", f"+1-{a}-{e}-{n}", f"+1 ({a}) {e}-{n}"])
        return r.choice([f"({a}) {e}-{n}", f"{a}-{e}-{n}", f"{a}.{e}.{n}"])
    if region == "GB":
        if r.random() < 0.6:
            m = "7" + r.choice("4579") + d(2)
            rest = d(6)
            return f"+44 {m} {rest}" if intl else f"0{m} {rest}"
        rest = r.choice("378") + d(3) + " " + d(4)
        return f"+44 20 {rest}" if intl else f"020 {rest}"
    if region == "DE":
        if r.random() < 0.6:
            p = r.choice(["151", "152", "157", "160", "170", "171", "172", "175", "176", "179"])
            rest = d(8) if p in ("151", "152", "157", "176", "179") else d(7)
            return f"+49 {p} {rest}" if intl else r.choice([f"0{p} {rest}", f"0{p}-{rest}", f"0{p}/{rest}"])
        city, n = r.choice([("30", 8), ("40", 8), ("89", 8), ("221", 7), ("69", 8)])
        rest = str(r.randint(2, 9)) + d(n - 1)
        return f"+49 {city} {rest}" if intl else f"0{city} {rest}"
    if region == "FR":
        p = r.choice(["6", "7", "1", "4"])
        groups = [d(2) for _ in range(4)]
        if p == "7":
            groups[0] = str(r.randint(3, 8)) + d(1)
        if intl:
            return f"+33 {p} " + " ".join(groups)
        return r.choice([" ", "."]).join([f"0{p}"] + groups)
    if region == "ES":
        first = r.choice(["6", "91", "93", "7"])
        if first == "7":
            first = "7" + str(r.randint(1, 4))
        body = first + d(9 - len(first))
        s = f"{body[:3]} {body[3:6]} {body[6:]}"
        return f"+34 {s}" if intl else s
    if region == "JP":
        if r.random() < 0.6:
            p = r.choice(["90", "80", "70"])
            s = f"{p}-{d(4)}-{d(4)}"
        else:
            s = f"3-{str(r.randint(3, 6))}{d(3)}-{d(4)}"
        return f"+81 {s}" if intl else f"0{s}"
    if region == "BR":
        ddd = r.choice(["11", "21", "31", "41", "51", "61", "71", "81"])
        s = f"9{str(r.randint(6, 9))}{d(3)}-{d(4)}"
        return f"+55 {ddd} {s}" if intl else f"({ddd}) {s}"
    if region == "IN":
        s = str(r.choice([7, 8, 9])) + d(4) + " " + d(5)
        return f"+91 {s}" if intl else f"0{s}"
    if region == "AU":
        if r.random() < 0.6:
            s = f"4{d(2)} {d(3)} {d(3)}"
            return f"+61 {s}" if intl else f"0{s}"
        s = f"{r.choice(['2', '3', '7', '8'])} {r.choice('9')}{d(3)} {d(4)}"
        return f"+61 {s}" if intl else f"(0{s[0]}) {s[2:]}"
    if region == "NL":
        s = f"6{r.randint(1, 5)}{d(7)}"
        return f"+31 6 {s[1:]}" if intl else r.choice([f"0{s[:1]}-{s[1:]}", f"0{s[:1]} {s[1:]}"])
    if region == "IT":
        s = f"3{r.choice(['20', '28', '33', '34', '38', '40', '47', '49'])} {d(3)} {d(4)}"
        return f"+39 {s}" if intl else s
    if region == "PT":
        s = f"9{r.choice('1236')}{d(1)} {d(3)} {d(3)}"
        return f"+351 {s}" if intl else s
    if region == "MX":
        s = f"55 {d(4)} {d(4)}"
        return f"+52 {s}" if intl else s
    raise ValueError(region)


PHONE_REGIONS = ["US", "GB", "DE", "FR", "ES", "JP", "BR", "IN", "AU", "NL", "IT", "PT", "MX"]


def phone(r: random.Random, region: str | None = None) -> str:
    region = region or r.choice(PHONE_REGIONS)
    for _ in range(200):
        s = _phone_draw(r, region)
        if _ok_phone(s, region):
            return s
    return s


def luhn_complete(prefix_body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(prefix_body)):
        n = int(ch)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return prefix_body + str((10 - total % 10) % 10)


def card(r: random.Random, fmt: str | None = None) -> str:
    brand = r.choice(["visa", "visa", "mc", "mc", "amex", "disc"])
    if brand == "visa":
        num = luhn_complete("4" + digits(r, 14))
    elif brand == "mc":
        pre = r.choice(["51", "52", "53", "54", "55", "2221", "2720"])
        num = luhn_complete(pre + digits(r, 15 - len(pre)))
    elif brand == "amex":
        num = luhn_complete(r.choice(["34", "37"]) + digits(r, 12))
    else:
        num = luhn_complete("6011" + digits(r, 11))
    if num in ("4242424242424242", "4111111111111111", "5555555555554444"):
        return card(r, fmt)
    fmt = fmt or r.choice(["space", "dash", "plain"])
    if fmt == "plain":
        return num
    sep = " " if fmt == "space" else "-"
    if len(num) == 15:
        return sep.join([num[:4], num[4:10], num[10:]])
    return sep.join(num[i : i + 4] for i in range(0, 16, 4))


def _iban_num(s: str) -> int:
    return int("".join(str(int(c, 36)) for c in s))


def _mod97_iban(cc: str, bban: str) -> str:
    chk = 98 - _iban_num(bban + cc + "00") % 97
    return f"{cc}{chk:02d}{bban}"


def _bban(r: random.Random, cc: str) -> str:
    d = lambda n: digits(r, n)  # noqa: E731
    if cc == "DE":
        return d(8) + d(10)
    if cc == "FR":
        bank, branch, acct = d(5), d(5), d(11)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(acct)) % 97
        return f"{bank}{branch}{acct}{key:02d}"
    if cc == "ES":
        bank, branch, acct = d(4), d(4), d(10)
        w = [1, 2, 4, 8, 5, 10, 9, 7, 3, 6]

        def c(s):
            v = 11 - sum(int(x) * y for x, y in zip(s, w, strict=True)) % 11
            return {11: 0, 10: 1}.get(v, v)

        return f"{bank}{branch}{c('00' + bank + branch)}{c(acct)}{acct}"
    if cc == "GB":
        return r.choice(["NWBK", "BARC", "LOYD", "HBUK", "MIDL"]) + d(6) + d(8)
    if cc == "NL":
        return r.choice(["ABNA", "INGB", "RABO", "TRIO", "SNSB"]) + d(10)
    if cc == "BE":
        first = d(10)
        k = int(first) % 97 or 97
        return f"{first}{k:02d}"
    if cc == "AT":
        return d(5) + d(11)
    if cc == "CH":
        return d(5) + d(12)
    if cc == "IT":
        return r.choice(UP) + d(5) + d(5) + d(12)
    if cc == "IE":
        return r.choice(["AIBK", "BOFI"]) + d(6) + d(8)
    if cc == "PT":
        return d(21)
    if cc == "PL":
        return d(24)
    raise ValueError(cc)


def iban(r: random.Random, cc: str | None = None, grouped: bool | None = None) -> str:
    cc = cc or r.choice(["DE", "FR", "ES", "GB", "NL", "BE", "AT", "CH", "IT", "IE", "PT", "PL"])
    for _ in range(3000):
        s = _mod97_iban(cc, _bban(r, cc))
        if _stdiban is None or _stdiban.is_valid(s):
            break
    if grouped is None:
        grouped = r.random() < 0.6
    return " ".join(s[i : i + 4] for i in range(0, len(s), 4)) if grouped else s


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


# --------------------------------------------------------------------------- near-misses (must_stay material)

PLACEHOLDERS = [
    "<your-token>",
    "<YOUR_API_KEY>",
    "xxxx",
    "changeme",
    "${DB_PASSWORD}",
    "${{ secrets.GITHUB_TOKEN }}",
    "REPLACE_ME",
    "********",
    "{{ vault_db_password }}",
    "$API_KEY",
    "your-password-here",
    "<redacted>",
    "%(DB_PASS)s",
    "os.environ['SECRET_KEY']",
]
FAKE_AWS = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
TEST_CARDS = ["4242 4242 4242 4242", "4242424242424242"]
PKGS = [
    "requests==2.31.0",
    "urllib3==2.2.1",
    "psycopg2-binary==2.9.9",
    "boto3==1.34.69",
    "openai==1.14.2",
    "fastapi==0.110.0",
    "express@4.19.2",
    "lodash@4.17.21",
    "next@14.1.4",
    "github.com/lib/pq v1.10.9",
    'serde = "1.0.197"',
    "spring-boot-starter-web:3.2.4",
    "Newtonsoft.Json 13.0.3",
    "rails (7.1.3)",
    "laravel/framework v10.48.4",
]
PUBLIC_HOSTS = [
    "api.github.com",
    "registry.npmjs.org",
    "pypi.org",
    "api.stripe.com",
    "hooks.slack.com",
    "gitlab.com",
    "sts.amazonaws.com",
    "oauth2.googleapis.com",
    "login.microsoftonline.com",
    "api.openai.com",
    "api.anthropic.com",
    "huggingface.co",
    "ghcr.io",
    "s3.eu-central-1.amazonaws.com",
]
EX_EMAILS = [
    "alice@example.com",
    "bob@example.org",
    "ops@example.com",
    "noreply@example.com",
    "test.user@example.org",
    "jane.doe@example.com",
    "billing@example.net",
]


def sha1(r):
    return hexs(r, 40)


def sha256(r):
    return hexs(r, 64)


def placeholder(r):
    return r.choice(PLACEHOLDERS)


def ex_email(r):
    return r.choice(EX_EMAILS)


def lock_integrity(r):
    return "sha512-" + base64.b64encode(bytes(r.getrandbits(8) for _ in range(64))).decode()


# =========================================================================== generators
# env files


def g_env_dotenv(r: random.Random) -> Paste:
    b = B()
    q = r.choice(['"', "'", ""])
    mode = "safe" if q == "" else "rich"
    if q == "'":
        mode = "safe"
    exp = "export " if r.random() < 0.3 else ""
    dbpw = pw(r, "uri")
    lines = [
        "# .env.local  (do not commit!!)",
        f"{exp}{b.s('NODE_ENV')}=production",
        f"{exp}APP_URL=https://app.{r.choice(CORP_DOMAINS)}",
        f"{exp}{b.s('PORT=' + str(r.choice([3000, 8080, 5173, 4000])))}",
        f"{exp}DATABASE_URL=postgresql://app_user:{b.g('connection_string_password', dbpw)}@db.internal:5432/app_prod",
        f"{exp}REDIS_PASSWORD={q}{b.g('password', pw(r, mode))}{q}",
        f"{exp}OPENAI_API_KEY={q}{b.g('api_key', openai_key(r))}{q}",
        f"{exp}STRIPE_SECRET_KEY={b.g('api_key', stripe_live(r))}",
        f"{exp}STRIPE_WEBHOOK_SECRET=whsec_{b.g('token', rs(r, 32))}",
        f"{exp}SENTRY_RELEASE={b.s(sha1(r))}",
        f"{exp}{b.s('JWT_SECRET')}={q}{b.g('password', rs(r, r.choice([32, 48, 64]), ALNUM))}{q}",
        f"{exp}SMTP_PASSWORD={b.s(placeholder(r))}",
        f"{exp}ADMIN_EMAIL={b.g('email', email(r))}",
        f"{exp}SUPPORT_EMAIL={b.s(ex_email(r))}",
        f"{exp}AWS_ACCESS_KEY_ID={b.s(FAKE_AWS[0])}",
    ]
    if r.random() < 0.5:
        lines.append(f"{exp}FEATURE_FLAGS_ID={b.s(uuid4(r))}")
    body = lines[1:]
    r.shuffle(body)
    text = (
        r.choice(["can you tell me why my app doesn't pick up these?\n\n", "", "here's my env:\n```\n"])
        + "\n".join(lines[:1] + body)
        + "\n"
    )
    return b.paste("env_dotenv", text)


def g_env_compose(r: random.Random) -> Paste:
    b = B()
    pg = pw(r, "safe")
    mq = pw(r, "uri")
    ver_pg = r.choice(["16.2", "15.6-alpine", "14"])
    listform = r.random() < 0.5

    def kv(k, v):
        return f"      - {k}={v}" if listform else f"      {k}: {json.dumps(v) if r.random() < 0.5 else v}"

    text = f"""version: "3.9"
services:
  db:
    image: {b.s("postgres:" + ver_pg)}
    environment:
{kv("POSTGRES_USER", "app")}
{kv(b.s("POSTGRES_PASSWORD"), b.g("password", pg))}
{kv("POSTGRES_DB", "orders")}
    ports:
      - "{b.s("5432:5432")}"
  rabbit:
    image: rabbitmq:3.13-management
    environment:
{kv("RABBITMQ_DEFAULT_USER", "orders")}
{kv("RABBITMQ_DEFAULT_PASS", b.g("password", mq))}
  api:
    build: .
    environment:
{kv("AMQP_URL", "amqp://orders:" + b.g("connection_string_password", mq) + "@rabbit:5672/")}
{kv("GITHUB_TOKEN", b.g("token", gh_classic(r)))}
{kv("MAILER_FROM", b.s(ex_email(r)))}
{kv("SECRET_KEY_BASE", b.s(placeholder(r)))}
    depends_on: [db, rabbit]
"""
    text = (
        'docker compose up fails with `FATAL: password authentication failed for user "app"`. compose file:\n\n' + text
    )
    return b.paste("env_compose", text)


def g_env_shells(r: random.Random) -> Paste:
    b = B()
    dialect = r.choice(["powershell", "cmd", "fish", "csh"])
    az = pw(r, "safe")
    tok = gh_fine(r)
    hf = hf_tok(r)
    if dialect == "powershell":
        text = f"""PS C:\\src\\infra> $env:ARM_CLIENT_ID = "{b.s(uuid4(r))}"
PS C:\\src\\infra> $env:ARM_CLIENT_SECRET = "{b.g("password", az)}"
PS C:\\src\\infra> $env:GH_TOKEN='{b.g("token", tok)}'
PS C:\\src\\infra> [Environment]::SetEnvironmentVariable("HF_TOKEN", "{b.g("token", hf)}", "User")
PS C:\\src\\infra> terraform -version
Terraform {b.s("v1.7.5")}
"""
    elif dialect == "cmd":
        text = f"""C:\\work\\api>set DB_PASS={b.g("password", az)}
C:\\work\\api>set GITHUB_TOKEN={b.g("token", tok)}
C:\\work\\api>setx HUGGING_FACE_HUB_TOKEN {b.g("token", hf)}

SUCCESS: Specified value was saved.
C:\\work\\api>set API_BASE=https://{b.s(r.choice(PUBLIC_HOSTS))}/v1
"""
    elif dialect == "fish":
        text = f"""# ~/.config/fish/conf.d/secrets.fish
set -gx DB_PASSWORD '{b.g("password", az)}'
set -gx GITHUB_TOKEN {b.g("token", tok)}
set -Ux HF_TOKEN {b.g("token", hf)}
set -gx EDITOR nvim
set -gx {b.s("PIP_INDEX_URL")} https://{b.s("pypi.org")}/simple
"""
    else:
        text = f"""# .cshrc on the build box
setenv DB_PASSWORD "{b.g("password", az)}"
setenv GITHUB_TOKEN {b.g("token", tok)}
setenv HF_TOKEN {b.g("token", hf)}
setenv PLACEHOLDER_KEY {b.s(placeholder(r))}
"""
    return b.paste("env_shells", "my shell setup, tokens don't seem to get exported:\n" + text)


# --------------------------------------------------------------------------- CI logs


def g_ci_github(r: random.Random) -> Paste:
    b = B()
    t0 = ts(r)
    run_id = digits(r, 10)
    ghs = gh_app(r)
    npm = npm_tok(r)
    user = username(r)
    home = f"/home/{user}"
    text = f"""{t0[:-1]}.1234567Z ##[group]Run actions/checkout@v4
{t0[:-1]}.1301234Z with:
{t0[:-1]}.1302345Z   repository: acme/widgets
{t0[:-1]}.1303456Z   token: ***
{t0[:-1]}.1304567Z   ref: {b.s(sha1(r))}
{t0[:-1]}.1400000Z ##[endgroup]
{t0[:-1]}.2400000Z ##[group]Run npm ci
{t0[:-1]}.2411111Z npm ci
{t0[:-1]}.2422222Z echo "//registry.npmjs.org/:_authToken=$NPM_TOKEN" > ~/.npmrc
{t0[:-1]}.2433333Z shell: /usr/bin/bash -e {{0}}
{t0[:-1]}.2444444Z env:
{t0[:-1]}.2455555Z   NPM_TOKEN: {b.g("token", npm)}
{t0[:-1]}.2466666Z   GITHUB_TOKEN: {b.s("${{ secrets.GITHUB_TOKEN }}")}
{t0[:-1]}.2477777Z ##[endgroup]
{t0[:-1]}.3100000Z + git clone https://x-access-token:{b.g("token", ghs)}@github.com/acme/private-sdk.git
{t0[:-1]}.3200000Z Cloning into 'private-sdk'...
{t0[:-1]}.5300000Z npm ERR! code {b.s("E401")}
{t0[:-1]}.5310000Z npm ERR! Unable to authenticate, need: Basic realm="GitHub Package Registry"
{t0[:-1]}.5320000Z npm ERR! A complete log of this run can be found in: {home}/.npm/_logs/{t0[:10]}T12_00_00_000Z-debug-0.log
{t0[:-1]}.6000000Z ##[error]Process completed with exit code 1.
"""
    b.g("home_path_user", home)
    b.s(f"https://github.com/acme/widgets/actions/runs/{run_id}")
    text = (
        f"self-hosted runner, workflow run https://github.com/acme/widgets/actions/runs/{run_id} keeps failing:\n\n"
        + text
    )
    return b.paste("ci_github", text)


def g_ci_gitlab(r: random.Random) -> Paste:
    b = B()
    gl = glpat(r)
    dpw = pw(r, "safe")
    sha = sha1(r)
    text = f"""# .gitlab-ci.yml
variables:
  DOCKER_DRIVER: overlay2
  {b.s("CI_REGISTRY_IMAGE")}: registry.gitlab.com/acme/backend
  DEPLOY_TOKEN: "{b.g("token", gl)}"

deploy:
  stage: deploy
  script:
    - docker login -u deployer -p '{b.g("password", dpw)}' registry.gitlab.com
    - helm upgrade --install api ./chart --set image.tag=$CI_COMMIT_SHORT_SHA

--- job log ---
Running with gitlab-runner {b.s("16.9.1")} (782c6ecb)
  on shared-runner-{digits(r, 3)} {rs(r, 8, LOW + DIG)}, system ID: s_{hexs(r, 12)}
Fetching changes with git depth set to 20...
Checking out {b.s(sha[:8])} as detached HEAD (ref is main)...
$ docker login -u deployer -p '{dpw}' registry.gitlab.com
WARNING! Using --password via the CLI is insecure. Use --password-stdin.
Error response from daemon: Get "https://registry.gitlab.com/v2/": unauthorized: HTTP Basic: Access denied
ERROR: Job failed: exit code 1
"""
    b.s("registry.gitlab.com")
    return b.paste("ci_gitlab", text)


def g_ci_jenkins(r: random.Random) -> Paste:
    b = B()
    u = username(r)
    tok = hexs(r, 34)
    art = pw(r, "rich")
    build = r.randint(100, 4000)
    text = f"""Started by user {u}
Running as SYSTEM
Building in workspace /var/lib/jenkins/workspace/payments-api
[payments-api] $ /bin/sh -xe /tmp/jenkins{digits(r, 18)}.sh
+ curl -sS -u {u}:{b.g("token", tok)} https://jenkins.{r.choice(CORP_DOMAINS)}/job/payments-api/{build}/api/json
+ mvn -B -s settings.xml deploy -Dartifactory.password='{b.g("password", art)}'
[INFO] Scanning for projects...
[INFO] Building payments-api {b.s("2.14.0-SNAPSHOT")}
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-deploy-plugin:3.1.1:deploy (default-deploy): status code: 401, reason phrase: Unauthorized (401)
Finished: FAILURE

Jenkinsfile:
  withCredentials([usernamePassword(credentialsId: '{b.s("artifactory-deployer")}', usernameVariable: 'ART_USER', passwordVariable: 'ART_PASS')]) {{
      sh 'mvn -B deploy -Dartifactory.password=$ART_PASS'
  }}
"""
    b.s("/var/lib/jenkins/workspace/payments-api")
    return b.paste("ci_jenkins", text)


# --------------------------------------------------------------------------- infra as code


def g_terraform(r: random.Random) -> Paste:
    b = B()
    akid, sec = aws_akid(r), aws_secret(r)
    dbpw = pw(r, "rich")
    do = do_tok(r)
    text = f"""# terraform.tfvars
region          = "{b.s("eu-west-1")}"
db_password     = "{b.g("password", dbpw)}"
do_token        = "{b.g("api_key", do)}"
instance_type   = "t3.medium"

# providers.tf
provider "aws" {{
  region     = var.region
  access_key = "{b.g("api_key", akid)}"
  secret_key = "{b.g("api_key", sec)}"
}}

# docs example we started from:
#   access_key = "{b.s(FAKE_AWS[0])}"
#   secret_key = "{b.s(FAKE_AWS[1])}"

resource "aws_db_instance" "main" {{
  identifier        = "orders-prod"
  engine_version    = "{b.s("15.5")}"
  username          = "orders"
  password          = var.db_password
  kms_key_id        = "arn:aws:kms:eu-west-1:{digits(r, 12)}:key/{b.s(uuid4(r))}"
}}

$ terraform plan
│ Error: configuring Terraform AWS Provider: validating provider credentials: retrieving caller identity from STS: operation error STS: GetCallerIdentity, https response error StatusCode: 403, RequestID: {b.s(uuid4(r))}, api error InvalidClientTokenId: The security token included in the request is invalid.
"""
    return b.paste("terraform", text)


def g_helm(r: random.Random) -> Paste:
    b = B()
    rpw = pw(r, "safe")
    smtp = pw(r, "rich")
    sg = sendgrid(r)
    text = f"""# values-prod.yaml
image:
  repository: ghcr.io/acme/api
  tag: "{b.s(ver(r))}"
  digest: {b.s("sha256:" + sha256(r))}
redis:
  auth:
    enabled: true
    password: {b.g("password", rpw)}
postgresql:
  auth:
    existingSecret: {b.s("api-db-credentials")}
    secretKeys:
      adminPasswordKey: {b.s("postgres-password")}
mail:
  host: smtp.sendgrid.net
  {b.s("port: 587")}
  username: apikey
  password: "{b.g("api_key", sg)}"
  fallbackPassword: '{b.g("password", smtp)}'
ingress:
  hosts:
    - host: api.{r.choice(CORP_DOMAINS)}

$ helm upgrade --install api ./chart -f values-prod.yaml --set redis.auth.password={rpw}
Error: UPGRADE FAILED: cannot patch "api-redis" with kind StatefulSet: StatefulSet.apps "api-redis" is invalid: spec: Forbidden
"""
    return b.paste("helm", text)


def g_ansible(r: random.Random) -> Paste:
    b = B()
    p1, p2 = pw(r, "safe"), pw(r, "rich")
    become = pw(r, "safe")
    text = f"""# inventory/hosts.ini
[web]
web1.{r.choice(CORP_DOMAINS)} ansible_user=deploy ansible_password={b.g("password", p1)}
web2 ansible_host=web2.internal ansible_user=deploy ansible_become_pass={b.g("password", become)}

# group_vars/all.yml
mysql_root_password: "{b.g("password", p2)}"
app_secret: "{b.s("{{ vault_app_secret }}")}"
ntp_server: {b.s("pool.ntp.org")}
admin_contact: {b.g("email", email(r, corp=True))}

$ ansible-playbook -i inventory/hosts.ini site.yml
TASK [mysql : set root password] ***********************************************
fatal: [web1]: FAILED! => {{"changed": false, "msg": "unable to connect to database, check login_user and login_password are correct or /root/.my.cnf has the credentials. Exception message: (1045, \\"Access denied for user 'root'@'localhost' (using password: YES)\\")"}}
"""
    b.s("login_password")
    return b.paste("ansible", text)


def g_kubectl(r: random.Random) -> Paste:
    b = B()
    dbpw = pw(r, "safe")
    api = stripe_live(r)
    pod = f"api-{hexs(r, 10)}-{rs(r, 5, LOW + DIG)}"
    enc = base64.b64encode(dbpw.encode()).decode()
    text = f"""$ kubectl get secret api-db -o yaml
apiVersion: v1
data:
  password: {b.g("password", enc)}
  username: YXBp
kind: Secret
metadata:
  creationTimestamp: "{b.s(ts(r))}"
  name: api-db
  namespace: prod
  resourceVersion: "{digits(r, 8)}"
  uid: {b.s(uuid4(r))}
type: Opaque

$ kubectl describe pod {pod} -n prod
Containers:
  api:
    Image:          ghcr.io/acme/api@{b.s("sha256:" + sha256(r))}
    Environment:
      DB_PASSWORD:        {b.g("password", dbpw)}
      STRIPE_KEY:         {b.g("api_key", api)}
      LOG_LEVEL:          debug
      REDIS_URL:          <set to the key 'url' in secret 'redis'>  Optional: false
Events:
  Warning  BackOff  {r.randint(2, 59)}s (x{r.randint(3, 40)} over 10m)  kubelet  Back-off restarting failed container api in pod {pod}_prod({uuid4(r)})
"""
    b.s("<set to the key 'url' in secret 'redis'>")
    return b.paste("kubectl", text)


def g_docker(r: random.Random) -> Paste:
    b = B()
    pwd = pw(r, "safe")
    mpw = pw(r, "alnum")
    tok = gh_classic(r)
    cid = hexs(r, 64)
    text = f"""$ echo {b.g("token", tok)} | docker login ghcr.io -u ci-bot --password-stdin
Login Succeeded
$ docker run -d --name pg -e POSTGRES_PASSWORD={b.g("password", pwd)} -p 5432:5432 {b.s("postgres:16.2")}
{b.s(cid)}
$ docker run --rm mysql:8.3 mysql -h db -uroot -p{b.g("password", mpw)} -e 'show databases'
mysql: [Warning] Using a password on the command line interface can be insecure.
ERROR 2005 (HY000): Unknown MySQL server host 'db' (-2)
$ docker inspect pg --format '{{{{json .Config.Env}}}}'
["POSTGRES_PASSWORD={pwd}","PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","GOSU_VERSION=1.17","PG_MAJOR=16","PG_VERSION={b.s("16.2-1.pgdg120+2")}"]
"""
    b.s("ERROR 2005 (HY000)")
    return b.paste("docker", text)


# --------------------------------------------------------------------------- cloud CLIs


def g_aws_cli(r: random.Random) -> Paste:
    b = B()
    akid, sec = aws_akid(r), aws_secret(r)
    sak = "ASIA" + rs(r, 16, UP + "234567")
    ssec = aws_secret(r)
    stok = "IQoJb3JpZ2luX2VjE" + rs(r, 300, B64)
    acct = digits(r, 12)
    text = f"""$ cat ~/.aws/credentials
[default]
aws_access_key_id = {b.g("api_key", akid)}
aws_secret_access_key = {b.g("api_key", sec)}

[sandbox]
aws_access_key_id = {b.s(FAKE_AWS[0])}
aws_secret_access_key = {b.s(FAKE_AWS[1])}

$ aws sts get-session-token --duration-seconds 3600
{{
    "Credentials": {{
        "AccessKeyId": "{b.g("api_key", sak)}",
        "SecretAccessKey": "{b.g("api_key", ssec)}",
        "SessionToken": "{b.g("token", stok)}",
        "Expiration": "{b.s(ts(r, z="+00:00"))}"
    }}
}}
$ aws s3 ls s3://acme-artifacts --region eu-central-1
An error occurred (AccessDenied) when calling the ListObjectsV2 operation: User: arn:aws:iam::{acct}:user/ci-deployer is not authorized to perform: s3:ListBucket
"""
    b.s("arn:aws:iam::" + acct + ":user/ci-deployer")
    b.s("ListObjectsV2")
    return b.paste("aws_cli", text)


def g_gcloud(r: random.Random) -> Paste:
    b = B()
    proj = r.choice(["acme-prod", "ml-sandbox-42", "billing-etl"])
    kid = hexs(r, 40)
    body_lines = [rs(r, 64, B64) for _ in range(r.randint(6, 10))]
    key_pem = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body_lines) + "\\n-----END PRIVATE KEY-----\\n"
    b.g("private_key", body_lines[0])
    b.g("private_key", body_lines[len(body_lines) // 2])
    acc = google_oauth(r)
    sa = f"deployer@{proj}.iam.gserviceaccount.com"
    text = f"""{{
  "type": "service_account",
  "project_id": "{b.s(proj)}",
  "private_key_id": "{b.g("api_key", kid)}",
  "private_key": "{key_pem}",
  "client_email": "{sa}",
  "client_id": "{digits(r, 21)}",
  "auth_uri": "https://accounts.google.com/o/oauth2/auth",
  "token_uri": "{b.s("https://oauth2.googleapis.com/token")}"
}}

$ gcloud auth print-access-token
{b.g("token", acc)}
$ gcloud run deploy api --image europe-west1-docker.pkg.dev/{proj}/api/api:{b.s(sha1(r)[:12])} --region {b.s("europe-west1")}
ERROR: (gcloud.run.deploy) PERMISSION_DENIED: Permission 'run.services.get' denied on resource
"""
    b.s("PERMISSION_DENIED")
    return b.paste("gcloud", text)


def g_azure(r: random.Random) -> Paste:
    b = B()
    spw = rs(r, 6, ALNUM) + "~" + rs(r, 3, ALNUM) + "Q~" + rs(r, 30, ALNUM + "_-.~")
    acct = r.choice(["acmeprodstore", "mlartifacts01", "logsarchive"])
    key = azure_key(r)
    tenant = uuid4(r)
    sqlpw = pw(r, "safe")
    text = f"""$ az ad sp create-for-rbac --name ci-deploy --role contributor --scopes /subscriptions/{b.s(uuid4(r))}
{{
  "appId": "{b.s(uuid4(r))}",
  "displayName": "ci-deploy",
  "password": "{b.g("password", spw)}",
  "tenant": "{b.s(tenant)}"
}}
$ az storage account show-connection-string -n {acct}
{{
  "connectionString": "DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={b.g("api_key", key)};EndpointSuffix=core.windows.net"
}}
appsettings: Server=tcp:{acct}-sql.database.windows.net,1433;Initial Catalog=orders;User ID=sqladmin;Password={b.g("connection_string_password", sqlpw)};Encrypt=True;
$ az login --service-principal -u ci-deploy -p {spw} --tenant {tenant}
AADSTS7000215: Invalid client secret provided.
"""
    b.s("AADSTS7000215")
    b.s("EndpointSuffix=core.windows.net")
    return b.paste("azure", text)


# --------------------------------------------------------------------------- SDK code


def g_sdk_python(r: random.Random) -> Paste:
    b = B()
    ak = anthropic_key(r)
    dbpw = pw(r, "uri")
    conn_pw = pw(r, "rich").replace("'", "")
    user = username(r)
    home = f"/home/{user}"
    text = f"""import anthropic, boto3, psycopg2

client = anthropic.Anthropic(api_key="{b.g("api_key", ak)}")
engine_url = "postgresql+psycopg2://etl:{b.g("connection_string_password", dbpw)}@warehouse.internal:5432/dw"
conn = psycopg2.connect(host="warehouse.internal", dbname="dw", user="etl", password='{b.g("password", conn_pw)}')
s3 = boto3.client("s3", aws_access_key_id="{b.s(FAKE_AWS[0])}", aws_secret_access_key="{b.s(FAKE_AWS[1])}")
API_KEY = os.environ.get("OPENAI_API_KEY", "{b.s("<your-api-key>")}")

Traceback (most recent call last):
  File "{home}/code/etl/load.py", line {r.randint(10, 300)}, in <module>
    conn = psycopg2.connect(host="warehouse.internal", dbname="dw", user="etl", password=...)
  File "{b.s("/usr/lib/python3/dist-packages/psycopg2/__init__.py")}", line 122, in connect
psycopg2.OperationalError: connection to server at "warehouse.internal", {b.s("port 5432")} failed: FATAL:  password authentication failed for user "etl"
"""
    b.g("home_path_user", home)
    return b.paste("sdk_python", text)


def g_sdk_js(r: random.Random) -> Paste:
    b = B()
    sk = stripe_live(r)
    sg = sendgrid(r)
    mpw = pw(r, "uri")
    dev = email(r, corp=True)
    text = f"""// server.js
const stripe = require('stripe')('{b.g("api_key", sk)}');
const sgMail = require('@sendgrid/mail');
sgMail.setApiKey(process.env.SENDGRID_API_KEY || "{b.g("api_key", sg)}");
const mongoose = require('mongoose');
await mongoose.connect(`mongodb+srv://orders-svc:{b.g("connection_string_password", mpw)}@cluster0.{rs(r, 5, LOW + DIG)}.mongodb.net/orders?retryWrites=true&w=majority`);

const msg = {{ to: '{b.g("email", dev)}', from: '{b.s(ex_email(r))}', subject: 'test', text: 'hi' }};
// package.json: "{b.s("@sendgrid/mail")}": "^8.1.1", "stripe": "^{b.s("14.21.0")}"
// test key from the docs: {b.s("pk_test_TYooMQauvdEDq54NiTphI7jx")}

(node:{r.randint(1000, 60000)}) UnhandledPromiseRejectionWarning: Error: Unauthorized
    at node_modules/@sendgrid/client/src/classes/client.js:146:29
  {b.s("code: 401")},
"""
    return b.paste("sdk_js", text)


def g_sdk_go(r: random.Random) -> Paste:
    b = B()
    tok = gh_fine(r)
    dsn_pw = pw(r, "uri")
    tg = telegram(r)
    text = f"""package main

import (
\t"context"
\t"database/sql"

\t"github.com/google/go-github/v60/github"
\t_ "{b.s("github.com/lib/pq")}"
)

const botToken = "{b.g("token", tg)}"

func main() {{
\tclient := github.NewClient(nil).WithAuthToken("{b.g("token", tok)}")
\tdb, err := sql.Open("postgres", "postgres://reporter:{b.g("connection_string_password", dsn_pw)}@10.1.4.20:5432/metrics?sslmode=disable")
\tif err != nil {{
\t\tpanic(err)
\t}}
\t_, _, err = client.Repositories.Get(context.Background(), "acme", "widgets")
}}

// go.sum: github.com/lib/pq v1.10.9 {b.s("h1:YXG7RB+JIjhP29X+OtkiDnYaXQwpS4JEWq7dtCCRUEw=")}
panic: GET https://{b.s("api.github.com")}/repos/acme/widgets: 401 Bad credentials []

goroutine 1 [running]:
main.main()
\t/build/cmd/report/main.go:22 +0x1a5
"""
    return b.paste("sdk_go", text)


def g_sdk_java(r: random.Random) -> Paste:
    b = B()
    jpw = pw(r, "safe")
    ktpw = pw(r, "rich")
    tw = twilio_token(r)
    sid = "AC" + hexs(r, 32)
    text = f"""# src/main/resources/application.properties
spring.datasource.url=jdbc:mysql://db.internal:3306/shop?useSSL=false&user=shop&password={b.g("connection_string_password", jpw)}
spring.datasource.hikari.maximum-pool-size=10
server.ssl.key-store-password={b.g("password", ktpw)}
{b.s("spring.mail.password")}=${{MAIL_PASSWORD}}
twilio.account-sid={sid}
twilio.auth-token={b.g("token", tw)}

// SmsService.java
Twilio.init("{sid}", "{tw}");
Message.creator(new PhoneNumber("{b.g("phone", phone(r, "US"))}"), new PhoneNumber("{b.s("+15005550006")}"), "Your code is 123456").create();

Caused by: java.sql.SQLException: Access denied for user 'shop'@'172.18.0.5' (using password: YES)
\tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException({b.s("SQLError.java:130")})
\tat com.zaxxer.hikari.pool.HikariPool.checkFailFast(HikariPool.java:{r.randint(500, 600)})
"""
    b.s("${MAIL_PASSWORD}")
    return b.paste("sdk_java", text)


def g_sdk_csharp(r: random.Random) -> Paste:
    b = B()
    sqlpw = pw(r, "safe")
    sbkey = azure_key(r)[:44]
    user = username(r)
    home = f"C:\\Users\\{user}"
    cfg = {
        "ConnectionStrings": {
            "Default": f"Server=sql01.corp.local;Database=Crm;User Id=crm_app;Password={sqlpw};TrustServerCertificate=True",
            "ServiceBus": f"Endpoint=sb://crm-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sbkey}",
        },
        "Logging": {"LogLevel": {"Default": "Information"}},
        "Jwt": {"Issuer": "https://login.microsoftonline.com/" + uuid4(r) + "/v2.0", "Key": "<set-in-user-secrets>"},
    }
    b.g("connection_string_password", sqlpw)
    b.g("api_key", sbkey)
    b.s("<set-in-user-secrets>")
    b.s("RootManageSharedAccessKey")
    text = (
        "appsettings.Development.json:\n"
        + json.dumps(cfg, indent=2)
        + f"""

Unhandled exception. Microsoft.Data.SqlClient.SqlException (0x80131904): Login failed for user 'crm_app'.
   at Crm.Api.Program.Main(String[] args) in {home}\\source\\repos\\Crm\\Crm.Api\\Program.cs:line {r.randint(10, 90)}
ClientConnectionId:{b.s(uuid4(r))}
Error Number:{b.s("18456")},State:1,Class:14
"""
    )
    b.g("home_path_user", home)
    return b.paste("sdk_csharp", text)


def g_sdk_ruby(r: random.Random) -> Paste:
    b = B()
    dbpw = pw(r, "safe")
    sk = stripe_live(r)
    mkey = hexs(r, 32)
    user = username(r)
    home = f"/Users/{user}"
    text = f"""# config/database.yml
production:
  adapter: postgresql
  host: <%= ENV["DB_HOST"] %>
  username: shop
  password: {b.g("password", dbpw)}
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>

# config/master.key
{b.g("password", mkey)}

# config/initializers/stripe.rb
Stripe.api_key = ENV.fetch("STRIPE_SECRET_KEY") {{ "{b.g("api_key", sk)}" }}
Rails.application.config.action_mailer.default_options = {{ from: "{b.s(ex_email(r))}" }}

ActiveSupport::MessageEncryptor::InvalidMessage (ActiveSupport::MessageEncryptor::InvalidMessage)
    from {home}/.rbenv/versions/{b.s("3.3.0")}/lib/ruby/gems/3.3.0/gems/activesupport-7.1.3/lib/active_support/message_encryptor.rb:{r.randint(200, 260)}:in `_decrypt'
"""
    b.g("home_path_user", home)
    b.s("ActiveSupport::MessageEncryptor::InvalidMessage")
    return b.paste("sdk_ruby", text)


def g_sdk_php(r: random.Random) -> Paste:
    b = B()
    dbpw = pw(r, "rich").replace("'", "")
    salt = rs(r, 64, ALNUM + "!#%^*-_+=.~@?()[]{}<>,;:|")
    mailpw = pw(r, "safe")
    key = base64.b64encode(bytes(r.getrandbits(8) for _ in range(32))).decode()
    text = f"""// wp-config.php
define( 'DB_NAME', 'wordpress' );
define( 'DB_USER', 'wp_prod' );
define( 'DB_PASSWORD', '{b.g("password", dbpw)}' );
define( 'DB_HOST', 'localhost:3306' );
define( 'AUTH_KEY',         '{b.g("password", salt)}' );
define( 'SECURE_AUTH_KEY',  '{b.s("put your unique phrase here")}' );

# Laravel .env
APP_KEY=base64:{b.g("password", key)}
MAIL_MAILER=smtp
MAIL_USERNAME={b.g("email", email(r))}
MAIL_PASSWORD="{b.g("password", mailpw)}"
{b.s("MAIL_ENCRYPTION")}=tls

Warning: mysqli_real_connect(): (HY000/1045): Access denied for user 'wp_prod'@'localhost' (using password: YES) in {b.s("/var/www/html/wp-includes/class-wpdb.php")} {b.s("on line 1982")}
"""
    return b.paste("sdk_php", text)


def g_sdk_rust(r: random.Random) -> Paste:
    b = B()
    tok = hf_tok(r)
    pg = pw(r, "uri")
    user = username(r)
    home = f"/home/{user}"
    text = f"""use reqwest::header::{{AUTHORIZATION, HeaderValue}};

const HF_TOKEN: &str = "{b.g("token", tok)}";
static DATABASE_URL: &str = "postgres://indexer:{b.g("connection_string_password", pg)}@localhost/search";

fn main() {{
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {{}}", HF_TOKEN)).unwrap());
}}

# Cargo.toml
[dependencies]
reqwest = {{ version = "{b.s("0.12.2")}", features = ["json"] }}
sqlx = {{ version = "0.7", features = ["postgres", "runtime-tokio"] }}

thread 'main' panicked at src/main.rs:{r.randint(5, 80)}:{r.randint(5, 40)}:
called `Result::unwrap()` on an `Err` value: Database(PgDatabaseError {{ severity: Fatal, code: "{b.s("28P01")}", message: "password authentication failed for user \\"indexer\\"" }})
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
   0: std::panicking::begin_panic_handler
             at /rustc/{b.s(sha1(r))}/library/std/src/panicking.rs:645:5
   1: search::main
             at {home}/.cargo/git/checkouts/search-{hexs(r, 16)}/src/main.rs:31:9
"""
    b.g("home_path_user", home)
    return b.paste("sdk_rust", text)


# --------------------------------------------------------------------------- stack traces with home paths


def g_trace_linux(r: random.Random) -> Paste:
    b = B()
    user = username(r)
    home = f"/home/{user}"
    venv = r.choice([".venv", "venv", ".local/share/virtualenvs/api-" + rs(r, 8, ALNUM)])
    text = f"""Traceback (most recent call last):
  File "{home}/projects/api/manage.py", line 22, in <module>
    main()
  File "{home}/projects/api/{venv}/lib/python3.11/site-packages/django/core/management/__init__.py", line 442, in execute_from_command_line
    utility.execute()
  File "{b.s("/usr/lib/python3.11/importlib/__init__.py")}", line 126, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
ModuleNotFoundError: No module named '{b.s("django_extensions")}'

$ pip --version
pip {b.s("24.0")} from {home}/projects/api/{venv}/lib/python3.11/site-packages/pip (python 3.11)
"""
    b.g("home_path_user", home)
    return b.paste("trace_linux", text)


def g_trace_macos(r: random.Random) -> Paste:
    b = B()
    user = username(r)
    home = f"/Users/{user}"
    text = f"""node:internal/modules/cjs/loader:1147
  throw err;
  ^

Error: Cannot find module '{b.s("@prisma/client")}'
Require stack:
- {home}/Developer/shop-web/src/db.ts
- {home}/Developer/shop-web/src/index.ts
    at Module._resolveFilename (node:internal/modules/cjs/loader:1144:15)
    at Object.<anonymous> ({home}/Developer/shop-web/src/db.ts:1:16) {{
  code: '{b.s("MODULE_NOT_FOUND")}',
  requireStack: [ '{home}/Developer/shop-web/src/db.ts' ]
}}

Node.js {b.s("v20.11.1")}
npm warn cleanup Failed to remove some directories [ '{home}/Library/Caches/node-gyp/20.11.1' ]
"""
    b.g("home_path_user", home)
    return b.paste("trace_macos", text)


def g_trace_windows(r: random.Random) -> Paste:
    b = B()
    user = username(r).replace(".", "")
    home1 = f"C:\\Users\\{user}"
    json_home = f"C:\\\\Users\\\\{user}"
    fwd = f"C:/Users/{user}"
    text = f"""Traceback (most recent call last):
  File "{home1}\\AppData\\Local\\Programs\\Python\\Python312\\Lib\\runpy.py", line 198, in _run_module_as_main
  File "{home1}\\Documents\\GitHub\\scraper\\main.py", line 41, in <module>
    driver = webdriver.Chrome(service=Service("{fwd}/Downloads/chromedriver.exe"))
selenium.common.exceptions.SessionNotCreatedException: Message: session not created: This version of ChromeDriver only supports {b.s("Chrome version 114")}

settings.json: {{"python.defaultInterpreterPath": "{json_home}\\\\miniconda3\\\\envs\\\\scraper\\\\python.exe"}}
PS {home1}\\Documents\\GitHub\\scraper> python --version
Python {b.s("3.12.2")}
"""
    for h in (home1, json_home, fwd):
        b.g("home_path_user", h)
    b.s("C:\\Program Files\\Google\\Chrome\\Application")
    text += "Chrome is installed at C:\\Program Files\\Google\\Chrome\\Application\n"
    return b.paste("trace_windows", text)


def g_trace_wsl(r: random.Random) -> Paste:
    b = B()
    wuser = username(r).replace(".", "")
    luser = r.choice([wuser, username(r)])
    whome = f"/mnt/c/Users/{wuser}"
    lhome = f"/home/{luser}"
    text = f"""{luser}@DESKTOP-{rs(r, 7, UP + DIG)}:{whome}/source/app$ npm run dev
> app@{b.s("0.3.1")} dev
> vite

Error: EACCES: permission denied, open '{whome}/source/app/node_modules/.vite/deps/_metadata.json'
    at Object.openSync ({b.s("node:fs:573")}:18)
{{
  errno: -13,
  code: '{b.s("EACCES")}',
  syscall: 'open',
  path: '{whome}/source/app/node_modules/.vite/deps/_metadata.json'
}}
{luser}@DESKTOP:~$ cat {lhome}/.wslconfig
cat: {lhome}/.wslconfig: No such file or directory
{luser}@DESKTOP:~$ ls /etc/wsl.conf
{b.s("/etc/wsl.conf")}
"""
    b.g("home_path_user", whome)
    b.g("home_path_user", lhome)
    return b.paste("trace_wsl", text)


# --------------------------------------------------------------------------- shell sessions


def g_shell_session(r: random.Random) -> Paste:
    b = B()
    user = username(r)
    host = r.choice(["devbox", "ip-172-31-20-7", "build01", "laptop"])
    mypw = pw(r, "alnum")
    pgpw = pw(r, "safe")
    cpw = pw(r, "uri")
    home = f"/home/{user}"
    text = f"""{user}@{host}:~$ mysql -u root -p{b.g("password", mypw)} -h 127.0.0.1 shop
ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)
{user}@{host}:~$ PGPASSWORD='{b.g("password", pgpw)}' psql -h db.internal -U reporting -d analytics -c '\\dt'
psql: error: connection to server at "db.internal" (10.0.3.12), port 5432 failed: timeout expired
{user}@{host}:~$ curl -u admin:{b.g("password", cpw)} https://grafana.{r.choice(CORP_DOMAINS)}/api/health
{{"commit":"{b.s(sha1(r)[:10])}","database":"ok","version":"{b.s("10.4.1")}"}}
{user}@{host}:~$ pwd
{home}
{user}@{host}:~$ echo $SHELL
/bin/bash
"""
    b.g("home_path_user", home)
    b.s("ERROR 1045 (28000)")
    return b.paste("shell_session", text)


def g_shell_cli_flags(r: random.Random) -> Paste:
    b = B()
    p1, p2, p3 = pw(r, "safe"), pw(r, "safe"), pw(r, "alnum")
    tok = glpat(r)
    text = f"""$ redis-cli -h cache.internal -a '{b.g("password", p1)}' --no-auth-warning ping
(error) WRONGPASS invalid username-password pair or user is disabled.
$ mongosh "mongodb://admin@mongo.internal:27017/admin" --password {b.g("password", p2)}
MongoServerError: Authentication failed.
$ git clone https://oauth2:{b.g("token", tok)}@gitlab.com/acme/platform/infra.git
$ openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{b.g("password", p3)}
$ htpasswd -bc .htpasswd admin {b.s("changeme")}
$ sha256sum release.tar.gz
{b.s(sha256(r))}  release.tar.gz
"""
    b.s("WRONGPASS")
    return b.paste("shell_cli_flags", text)


# --------------------------------------------------------------------------- HTTP


def g_http_dump(r: random.Random) -> Paste:
    b = B()
    bearer = jwt(r)
    sess = rs(r, 32, LOW + DIG)
    csrf = rs(r, 40, B64URL)
    cust = email(r)
    reqid = uuid4(r)
    ph = phone(r)
    body = json.dumps({"email": cust, "phone": ph, "plan": "pro", "coupon": None})
    text = f"""POST /api/v2/customers HTTP/1.1
Host: api.{r.choice(CORP_DOMAINS)}
User-Agent: {b.s("Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0")}
Authorization: Bearer {b.g("token", bearer)}
Cookie: sessionid={b.g("token", sess)}; csrftoken={b.g("token", csrf)}; _ga=GA1.1.{digits(r, 9)}.{digits(r, 10)}
Content-Type: application/json
X-Request-ID: {b.s(reqid)}
Content-Length: {len(body)}

{body}

HTTP/1.1 500 Internal Server Error
Date: {b.s("Tue, 05 Mar 2024 14:03:11 GMT")}
Set-Cookie: sessionid={sess}; HttpOnly; Path=/; SameSite=Lax
Content-Type: application/json

{{"error":"{b.s("INTERNAL_ERROR")}","request_id":"{reqid}"}}
"""
    b.g("email", cust)
    b.g("phone", ph)
    return b.paste("http_dump", text)


def g_curl_devtools(r: random.Random) -> Paste:
    b = B()
    cookie = base64.urlsafe_b64encode(bytes(r.getrandbits(8) for _ in range(48))).decode().rstrip("=")
    auth = "Bearer " + rs(r, 64, ALNUM)
    em = email(r)
    ph = phone(r)
    host = r.choice(["app.linear.app", "shop.example-store.com", "dashboard." + r.choice(CORP_DOMAINS)])
    text = f"""curl 'https://{host}/graphql' \\
  -H 'accept: */*' \\
  -H 'accept-language: en-US,en;q=0.9,de;q=0.8' \\
  -H 'authorization: {auth}' \\
  -H 'content-type: application/json' \\
  -H 'cookie: __session={b.g("token", cookie)}; theme=dark; ajs_anonymous_id={b.s(uuid4(r))}' \\
  -H 'sec-ch-ua: {b.s('"Chromium";v="123"')}, "Not:A-Brand";v="8"' \\
  -H 'x-client-version: {b.s("2024.03.14-" + sha1(r)[:7])}' \\
  --data-raw '{{"operationName":"UpdateProfile","variables":{{"email":"{em}","phone":"{ph}"}},"query":"mutation UpdateProfile($email: String!, $phone: String) {{ updateProfile(email: $email, phone: $phone) {{ id }} }}"}}' \\
  --compressed
"""
    b.g("token", auth.split(" ", 1)[1])
    b.g("email", em)
    b.g("phone", ph)
    b.s("UpdateProfile")
    return b.paste("curl_devtools", "this request from devtools returns 403, copied as cURL:\n\n" + text)


def g_postman(r: random.Random) -> Paste:
    b = B()
    tok = jwt(r)
    key = misc_api_key(r)
    bpw = pw(r, "rich")
    coll = {
        "info": {
            "_postman_id": uuid4(r),
            "name": "Billing API",
            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
        },
        "auth": {"type": "bearer", "bearer": [{"key": "token", "value": tok, "type": "string"}]},
        "item": [
            {
                "name": "Create invoice",
                "request": {
                    "method": "POST",
                    "header": [{"key": "X-Api-Key", "value": key}, {"key": "Idempotency-Key", "value": uuid4(r)}],
                    "url": {"raw": "{{baseUrl}}/v1/invoices?limit=20", "host": ["{{baseUrl}}"]},
                },
            },
            {
                "name": "Login",
                "request": {
                    "method": "POST",
                    "auth": {
                        "type": "basic",
                        "basic": [{"key": "username", "value": "qa-admin"}, {"key": "password", "value": bpw}],
                    },
                },
            },
        ],
        "variable": [
            {"key": "baseUrl", "value": "https://billing.example.com"},
            {"key": "apiKey", "value": "{{vault:billing-api-key}}"},
        ],
    }
    text = json.dumps(coll, indent="\t")
    b.g("token", tok)
    b.g("api_key", key)
    b.g("password", json.dumps(bpw)[1:-1])
    b.s(coll["info"]["_postman_id"])
    b.s("{{baseUrl}}")
    b.s("https://billing.example.com")
    b.s("{{vault:billing-api-key}}")
    b.s(coll["item"][0]["request"]["header"][1]["value"])
    return b.paste("postman", "exported my collection, why does Login 401?\n" + text)


# --------------------------------------------------------------------------- SQL / configs


def g_sql(r: random.Random) -> Paste:
    b = B()
    cpw = pw(r, "uri")
    rows = []
    for i in range(r.randint(2, 4)):
        f, la = person(r)
        e, p, s = email(r, f, la), phone(r, "US"), ssn(r)
        b.g("email", e)
        b.g("phone", p)
        b.g("ssn", s)
        rows.append(f"  ({1000 + i}, '{e}', '{p}', '{s}', '{ts(r, ' ', '')}')")
    text = f"""-- psql "postgresql://admin:{b.g("connection_string_password", cpw)}@prod-db.{r.choice(CORP_DOMAINS)}:5432/hr?sslmode=require"
INSERT INTO employees (id, email, phone, ssn, created_at) VALUES
{("," + chr(10)).join(rows)};
ERROR:  duplicate key value violates unique constraint "{b.s("employees_email_key")}"
DETAIL:  Key (email)=({rows[0].split("'")[1]}) already exists.
SQLSTATE: {b.s("23505")}
-- migration {b.s("20240311_0042_add_ssn_column")} applied at {b.s(ts(r))}
"""
    return b.paste("sql", text)


def g_sql_conn_strings(r: random.Random) -> Paste:
    b = B()
    p1, p2, p3, p4 = pw(r, "uri"), pw(r, "safe"), pw(r, "uri"), pw(r, "safe")
    text = f"""We have four services and all of them fail after the password rotation:
1. SQLALCHEMY_DATABASE_URI = "mysql+pymysql://app:{b.g("connection_string_password", p1)}@mysql-primary:3306/app?charset=utf8mb4"
2. JDBC: jdbc:sqlserver://sql01:1433;databaseName=Ledger;user=ledger_rw;password={b.g("connection_string_password", p2)};encrypt=true
3. redis://default:{b.g("connection_string_password", p3)}@redis-{digits(r, 5)}.c{r.randint(1, 300)}.eu-west-1-2.ec2.cloud.redislabs.com:{digits(r, 5)}
4. Npgsql: Host=pg.internal;Port=5432;Username=audit;Password={b.g("connection_string_password", p4)};Database=audit;Pooling=true
The template in the README uses postgres://user:{b.s("${DB_PASSWORD}")}@localhost:5432/app and postgres://app:{b.s("changeme")}@localhost/app for local dev.
"""
    return b.paste("sql_conn_strings", text)


def g_json_config(r: random.Random) -> Paste:
    b = B()
    cfg = {
        "server": {"port": 8443, "host": "0.0.0.0"},
        "database": {"host": "db.internal", "user": "svc", "password": pw(r, "rich")},
        "integrations": {
            "slack": {"botToken": slack_bot(r), "channel": "#alerts"},
            "google": {"mapsApiKey": google_key(r)},
            "openai": {"apiKey": "sk-...", "model": "gpt-4o-mini"},
        },
        "auth": {"jwtSecret": rs(r, 48, ALNUM), "issuer": "https://auth.example.com/"},
        "admins": [email(r, corp=True), "admin@example.com"],
        "build": {"commit": sha1(r), "version": ver(r)},
    }
    b.g("password", json.dumps(cfg["database"]["password"])[1:-1])
    b.g("token", cfg["integrations"]["slack"]["botToken"])
    b.g("api_key", cfg["integrations"]["google"]["mapsApiKey"])
    b.g("password", cfg["auth"]["jwtSecret"])
    b.g("email", cfg["admins"][0])
    for s in (
        "sk-...",
        "gpt-4o-mini",
        "admin@example.com",
        cfg["build"]["commit"],
        "https://auth.example.com/",
        "mapsApiKey",
    ):
        b.s(s)
    sep = r.choice([None, (",", ":")])
    text = json.dumps(cfg, indent=None if sep else 2, separators=sep)
    return b.paste("json_config", "config.json (prod):\n" + text)


def g_yaml_config(r: random.Random) -> Paste:
    b = B()
    spw = pw(r, "safe")
    ldap = pw(r, "safe")
    text = f"""# config/production.yaml
app:
  name: orders
  release: {b.s(ver(r))}
  instance-id: {b.s(uuid4(r))}
smtp:
  host: smtp.{r.choice(CORP_DOMAINS)}
  user: {b.g("email", email(r, corp=True))}
  pass: >-
    {b.g("password", spw)}
ldap:
  bindDn: cn=svc-orders,ou=services,dc=corp,dc=local
  bindPassword:
    {b.g("password", ldap)}
datadog:
  api_key: {b.g("api_key", hexs(r, 32))}
  site: {b.s("datadoghq.eu")}
notion:
  token: {b.g("api_key", misc_api_key(r))}
sentry:
  dsn_template: {b.s("https://<key>@o0.ingest.sentry.io/<project>")}
"""
    return b.paste("yaml_config", text)


# --------------------------------------------------------------------------- people: mail, tickets, CSV


def _signature(r: random.Random, b: B, f: str, la: str, region: str) -> str:
    e = b.g("email", email(r, f, la, corp=True))
    p = b.g("phone", phone(r, region))
    style = r.random()
    if style < 0.33:
        return f"--\n{f} {la}\nSenior Engineer | {e.split('@')[1]}\nT: {p}\n{e}"
    if style < 0.66:
        m = b.g("phone", phone(r, region))
        return f"Best regards,\n{f} {la}\nPhone: {p} | Mobile: {m}\nEmail: {e}"
    return f"Cheers,\n{f}\n\n{f} {la} · Platform Team\n{p} · {e}"


def g_email_thread(r: random.Random) -> Paste:
    b = B()
    f1, l1 = person(r)
    f2, l2 = person(r)
    region = r.choice(PHONE_REGIONS)
    e1 = email(r, f1, l1, corp=True)
    text = f"""From: {f1} {l1} <{b.g("email", e1)}>
To: support@example.com
Date: {b.s("Wed, 13 Mar 2024 09:41:07 +0100")}
Subject: Re: [{b.s("Ticket #" + str(r.randint(100000, 999999)))}] Webhook signature mismatch

Hi,

we rotated the signing secret yesterday, the new one is {b.g("token", "whsec_" + rs(r, 32))} — still getting
"{b.s("No signatures found matching the expected signature for payload")}". Event id {b.s("evt_" + rs(r, 24))}.

{_signature(r, b, f1, l1, region)}

On Tue, Mar 12, 2024 at 5:02 PM {f2} {l2} <{b.s("support@example.com")}> wrote:
> Could you send the raw payload and the Stripe-Signature header? Please don't include your secret key.
"""
    return b.paste("email_thread", text)


def g_support_ticket(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    region = r.choice(["US", "GB", "DE", "FR", "ES", "NL", "IT"])
    c = card(r)
    ib = iban(r, {"US": None, "GB": "GB"}.get(region, region if region in ("DE", "FR", "ES", "NL", "IT") else None))
    addr_email = email(r, f, la)
    order = f"ORD-{digits(r, 8)}"
    text = f"""Ticket {b.s(order)} — priority: high — created {b.s(ts(r))}
Customer: {f} {la}
Email: {b.g("email", addr_email)}
Phone: {b.g("phone", phone(r, region))}

Message:
I was charged twice. The card is {b.g("card", c)} (exp {r.randint(1, 12):02d}/{r.randint(26, 31)}). Please refund to my
bank account instead: IBAN {b.g("iban", ib)}. Your test page said to use {b.s(r.choice(TEST_CARDS))} but that's not mine.

Internal note: refund id {b.s("re_" + rs(r, 24))}, payment intent {b.s("pi_" + rs(r, 24))}.
"""
    if region == "US" and r.random() < 0.7:
        text += (
            f"Customer also wrote their SSN for verification: {b.g('ssn', ssn(r))} (we should never ask for this)\n"
        )
    return b.paste("support_ticket", text)


def g_csv_customers(r: random.Random) -> Paste:
    b = B()
    header = "customer_id,first_name,last_name,email,phone,ssn,card_last_used,iban,created_at,plan"
    rows = [header]
    for _ in range(r.randint(3, 5)):
        f, la = person(r)
        e = b.g("email", email(r, f, la))
        p = b.g("phone", phone(r, "US"))
        s = b.g("ssn", ssn(r, r.choice(["dash", "dash", "plain"])))
        cd = b.g("card", card(r, r.choice(["plain", "space"])))
        ib = b.g("iban", iban(r, grouped=False))
        cid = b.s(uuid4(r))
        tstamp = ts(r)
        rows.append(f'{cid},{f},{la},{e},"{p}",{s},{cd},{ib},{tstamp},{r.choice(["free", "pro", "team"])}')
    b.s(header)
    text = "pandas can't parse the phone column, here's a sample of customers.csv:\n\n" + "\n".join(rows) + "\n"
    return b.paste("csv_customers", text)


# --------------------------------------------------------------------------- git / ssh / auth files


def g_git_config(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    user = username(r, f, la)
    e = email(r, f, la)
    tok = r.choice([gh_classic, gh_fine, glpat])(r)
    bbpw = pw(r, "uri")
    text = f"""$ git remote -v
origin\thttps://{user}:{b.g("token", tok)}@github.com/acme/widgets.git (fetch)
origin\thttps://{user}:{tok}@github.com/acme/widgets.git (push)
upstream\t{b.s("git@github.com:acme-oss/widgets.git")} (fetch)
$ cat ~/.gitconfig
[user]
\tname = {f} {la}
\temail = {b.g("email", e)}
[credential]
\thelper = store
[url "https://bitbucket.org/"]
\tinsteadOf = bb:
$ cat ~/.git-credentials
https://{user}:{b.g("password", bbpw)}@bitbucket.org
$ git log -1 --format='%H %an'
{b.s(sha1(r))} {f} {la}
$ git describe --tags
{b.s("v" + ver(r) + "-" + str(r.randint(1, 40)) + "-g" + sha1(r)[:7])}
"""
    return b.paste("git_config", text)


def _pem(r: random.Random, b: B, kind: str) -> str:
    if kind == "rsa":
        head, tail = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
        body = "MIIEpAIBAAKCAQEA" + b64_of(r, 1180)
    elif kind == "openssh":
        head, tail = "-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----"
        body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + b64_of(r, 300)
    elif kind == "ec":
        head, tail = "-----BEGIN EC PRIVATE KEY-----", "-----END EC PRIVATE KEY-----"
        body = "MHcCAQEEI" + b64_of(r, 110)
    else:
        head, tail = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
        body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + b64_of(r, 900)
    width = 70 if kind == "openssh" else 64
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    if len(lines[-1]) < 16:
        lines[-2] += lines.pop()
    b.g("private_key", lines[0])
    b.g("private_key", lines[len(lines) // 2])
    b.g("private_key", lines[-2])
    return "\n".join([head] + lines + [tail])


def g_ssh_keys(r: random.Random) -> Paste:
    b = B()
    kind = r.choice(["rsa", "openssh", "ec", "pkcs8", "putty"])
    user = username(r)
    fp = "SHA256:" + base64.b64encode(bytes(r.getrandbits(8) for _ in range(32))).decode().rstrip("=")
    if kind == "putty":
        pub = b64_of(r, 51)
        priv = b64_of(r, 48)
        mac = hexs(r, 64)
        b.g("private_key", priv)
        b.g("private_key", mac)
        key = f"""PuTTY-User-Key-File-3: ssh-ed25519
Encryption: none
Comment: {b.s("eddsa-key-20240311")}
Public-Lines: 2
{pub[:64]}
{pub[64:]}
Private-Lines: 1
{priv}
Private-MAC: {mac}"""
    else:
        key = _pem(r, b, kind)
    text = f"""Permissions 0644 for '/home/{user}/.ssh/id_deploy' are too open.
It is required that your private key files are NOT accessible by others.
This private key will be ignored.
Load key "/home/{user}/.ssh/id_deploy": bad permissions
git@github.com: Permission denied (publickey).

$ cat ~/.ssh/id_deploy
{key}
$ ssh-keygen -lf ~/.ssh/id_deploy.pub
256 {b.s(fp)} deploy@ci (ED25519)
"""
    b.g("home_path_user", f"/home/{user}")
    b.s("Permission denied (publickey)")
    return b.paste("ssh_keys", text)


def g_tls_bundle(r: random.Random) -> Paste:
    b = B()
    cert_body = b64_of(r, 400)
    cert_lines = [cert_body[i : i + 64] for i in range(0, len(cert_body), 64)]
    b.s(cert_lines[1])  # a certificate is public
    key = _pem(r, b, r.choice(["rsa", "pkcs8", "ec"]))
    text = f"""nginx: [emerg] SSL_CTX_use_PrivateKey("/etc/nginx/ssl/api.key") failed (SSL: error:{b.s("05800074")}:x509 certificate routines::key values mismatch)

/etc/nginx/ssl/api.crt:
-----BEGIN CERTIFICATE-----
{chr(10).join(cert_lines)}
-----END CERTIFICATE-----
/etc/nginx/ssl/api.key:
{key}
"""
    b.s("/etc/nginx/ssl/api.key")
    return b.paste("tls_bundle", text)


def g_netrc_pgpass(r: random.Random) -> Paste:
    b = B()
    variant = r.choice(["netrc", "pgpass", "mycnf", "all"])
    parts = []
    if variant in ("netrc", "all"):
        npw = pw(r, "safe")
        parts.append(f"""$ cat ~/.netrc
machine api.heroku.com
  login {b.g("email", email(r))}
  password {b.g("token", uuid4(r))}
machine {b.s("urs.earthdata.nasa.gov")} login datauser password {b.g("password", npw)}""")
    if variant in ("pgpass", "all"):
        p = pw(r, "uri")
        parts.append(f"""$ cat ~/.pgpass
db.internal:5432:analytics:reporting:{b.g("password", p)}
localhost:5432:*:postgres:{b.s("changeme")}""")
    if variant in ("mycnf", "all"):
        p = pw(r, "safe")
        parts.append(f"""$ cat ~/.my.cnf
[client]
user=backup
password="{b.g("password", p)}"
host=mysql-replica.internal
[{b.s("mysqldump")}]
single-transaction""")
    text = "\n".join(parts) + "\nwhy do I still get prompted for a password?\n"
    return b.paste("netrc_pgpass", text)


def g_registry_tokens(r: random.Random) -> Paste:
    b = B()
    npm, pypi, hf = npm_tok(r), pypi_tok(r), hf_tok(r)
    cargo = "cio" + rs(r, 32)
    text = f"""$ cat .npmrc
@acme:registry=https://npm.pkg.github.com
//registry.npmjs.org/:_authToken={b.g("token", npm)}
//npm.pkg.github.com/:_authToken=${{NPM_TOKEN}}
$ cat ~/.pypirc
[pypi]
  username = __token__
  password = {b.g("token", pypi)}
$ huggingface-cli login --token {b.g("token", hf)}
Token is valid (permission: write).
$ cat ~/.cargo/credentials.toml
[registry]
token = "{b.g("token", cargo)}"
$ npm publish
npm error code {b.s("E403")}
npm error 403 403 Forbidden - PUT https://registry.npmjs.org/@acme%2fui - You cannot publish over the previously published versions: {b.s("1.4.2")}.
"""
    b.s("${NPM_TOKEN}")
    b.s("__token__")
    b.s("https://npm.pkg.github.com")
    return b.paste("registry_tokens", text)


def g_slack(r: random.Random) -> Paste:
    b = B()
    team, chan = "T" + rs(r, 8, UP + DIG), "B" + rs(r, 10, UP + DIG)
    hook_secret = rs(r, 24)
    bot = slack_bot(r)
    signing = hexs(r, 32)
    user_tok = slack_user(r)
    text = f"""SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{team}/{chan}/{b.g("token", hook_secret)}
SLACK_BOT_TOKEN={b.g("token", bot)}
SLACK_SIGNING_SECRET={b.g("token", signing)}
SLACK_USER_TOKEN="{b.g("token", user_tok)}"
SLACK_APP_ID={b.s("A0" + rs(r, 9, UP + DIG))}

$ curl -X POST -H 'Content-type: application/json' --data '{{"text":"deploy {b.s(sha1(r)[:7])} done"}}' $SLACK_WEBHOOK_URL
invalid_token
$ python bot.py
slack_sdk.errors.SlackApiError: The request to the Slack API failed. (url: {b.s("https://slack.com/api/chat.postMessage")})
The server responded with: {{'ok': False, 'error': '{b.s("not_in_channel")}'}}
"""
    return b.paste("slack", text)


def g_payment_log(r: random.Random) -> Paste:
    b = B()
    lines = []
    for _ in range(r.randint(3, 5)):
        t = ts(r, z="")
        kind = r.random()
        if kind < 0.4:
            c = card(r, "plain")
            lines.append(
                f"{t} INFO  checkout.charge amount=4999 currency=eur pan={b.g('card', c)} cvv=*** status=declined code={b.s('card_declined')}"
            )
        elif kind < 0.65:
            ib = iban(r, grouped=r.random() < 0.3)
            lines.append(
                f"{t} INFO  sepa.mandate created debtor_iban={b.g('iban', ib)} mandate_ref={b.s('MNDT-' + digits(r, 10))}"
            )
        elif kind < 0.85:
            c = card(r, "space")
            lines.append(
                f'{t} DEBUG gateway.request body={{"card":{{"number":"{b.g("card", c)}","exp_month":{r.randint(1, 12)},"exp_year":{r.randint(2026, 2031)}}},"email":"{b.g("email", email(r))}"}}'
            )
        else:
            lines.append(f"{t} INFO  test charge pan={b.s('4242424242424242')} status=succeeded")
    ref = luhn_complete("9" + digits(r, 14))
    ref = ref[:-1] + str((int(ref[-1]) + 1) % 10)  # 16 digits that fail Luhn: a reference, not a card
    lines.append(
        f"{ts(r, z='')} INFO  settlement batch={b.s('STL-' + ref)} acquirer_ref={b.s(ref)} epoch_ms={b.s(str(r.randint(1_700_000_000_000, 1_790_000_000_000)))}"
    )
    lines.append(
        f"{ts(r, z='')} ERROR webhook verification failed secret={b.g('token', 'whsec_' + rs(r, 32))} idempotency_key={b.s(uuid4(r))}"
    )
    return b.paste(
        "payment_log", "our payment service logs — is it ok that the PAN shows up here?\n" + "\n".join(lines) + "\n"
    )


# --------------------------------------------------------------------------- non-English prose


def g_prose_de(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    text = f"""Hallo zusammen,

ich komme mit dem Deployment nicht weiter. Der Kunde {f} {la} ({b.g("email", email(r, f, la))}, Tel. {b.g("phone", phone(r, "DE"))}) hat
seine Bankverbindung geändert, neue IBAN: {b.g("iban", iban(r, "DE"))}. Die Lastschrift schlägt trotzdem mit
Fehlercode {b.s("AC04")} fehl. Das Passwort für den SFTP-Zugang lautet übrigens {b.g("password", pw(r, "safe"))} — bitte nicht weitergeben.

Version: {b.s(ver(r))}, Commit {b.s(sha1(r))}. Rückfragen gerne an mich: {b.g("phone", phone(r, "DE"))}.

Viele Grüße
"""
    return b.paste("prose_de", text)


def g_prose_fr(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    text = f"""Bonjour,

Suite à notre échange, voici les informations pour le prélèvement de M. {la} :
IBAN : {b.g("iban", iban(r, "FR"))}
Téléphone : {b.g("phone", phone(r, "FR"))}
Courriel : {b.g("email", email(r, f, la))}

Le script d'import plante avec « {b.s("UnicodeDecodeError")} » à la ligne {r.randint(10, 400)}. La clé API de test est {b.s("<votre-clé-api>")},
la vraie (ne pas partager !) est {b.g("api_key", google_key(r))}. Le mot de passe admin : « {b.g("password", pw(r, "rich"))} ».

Cordialement,
{f}
"""
    return b.paste("prose_fr", text)


def g_prose_es(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    region = r.choice(["ES", "MX"])
    text = f"""Hola equipo,

el cliente {f} {la} escribió desde {b.g("email", email(r, f, la))} diciendo que no puede pagar. Su número es {b.g("phone", phone(r, region))}
y la tarjeta que usa termina en {r.randint(1000, 9999)} — de hecho nos mandó el número completo: {b.g("card", card(r))}.
Cuenta para devolución: {b.g("iban", iban(r, "ES"))}.

El error en los logs es {b.s("ERR_PAYMENT_3DS_TIMEOUT")} (request id {b.s(uuid4(r))}). ¿Alguien sabe si la versión {b.s(ver(r))} del SDK lo arregla?
La contraseña del panel de Redsys es {b.g("password", pw(r, "safe"))}, cámbienla después por favor.

Saludos
"""
    return b.paste("prose_es", text)


def g_prose_ja(r: random.Random) -> Paste:
    b = B()
    f, la = (
        r.choice(["Kenji", "Yuki", "Haruto", "Aoi", "Sota", "Mei"]),
        r.choice(["Tanaka", "Sato", "Suzuki", "Takahashi", "Watanabe", "Ito"]),
    )
    user = username(r, f, la)
    text = f"""お疲れ様です。

本番環境でログインできない件ですが、ユーザー（{b.g("email", email(r, f, la))}、電話 {b.g("phone", phone(r, "JP"))}）から問い合わせがありました。
DB のパスワードは「{b.g("password", pw(r, "safe"))}」です。GitHub トークン {b.g("token", gh_classic(r))} も念のため共有します。
エラーコードは {b.s("E_AUTH_4031")}、発生時刻は {b.s(ts(r))} です。ログは /home/{user}/app/logs/error.log にあります。

よろしくお願いいたします。
"""
    b.g("home_path_user", f"/home/{user}")
    return b.paste("prose_ja", text)


def g_prose_pt(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    region = r.choice(["BR", "PT"])
    cpf_like = f"{digits(r, 3)}.{digits(r, 3)}.{digits(r, 3)}"
    text = f"""Oi pessoal,

a cliente {f} {la} ({b.g("email", email(r, f, la))}) ligou do número {b.g("phone", phone(r, region))} reclamando que o boleto não foi gerado.
Conta para estorno: {b.g("iban", iban(r, "PT"))}. O pedido é o {b.s("#" + digits(r, 7))}, versão do app {b.s(ver(r))}.

A chave do gateway que está no .env é {b.g("api_key", stripe_live(r))} e a senha do banco é {b.g("password", pw(r, "safe"))}.
(o número {cpf_like} no print é só o começo do documento, ignorem)

Valeu!
"""
    return b.paste("prose_pt", text)


# --------------------------------------------------------------------------- chat-style key dumps and app logs


def g_chat_keys(r: random.Random) -> Paste:
    b = B()
    picks = r.sample(
        [
            ("OPENAI_API_KEY", openai_key, "api_key"),
            ("ANTHROPIC_API_KEY", anthropic_key, "api_key"),
            ("SHOPIFY_ACCESS_TOKEN", shopify, "token"),
            ("DATABRICKS_TOKEN", databricks, "token"),
            ("DIGITALOCEAN_TOKEN", do_tok, "token"),
            ("GOOGLE_API_KEY", google_key, "api_key"),
            ("SENDGRID_API_KEY", sendgrid, "api_key"),
            ("HF_TOKEN", hf_tok, "token"),
            ("NPM_TOKEN", npm_tok, "token"),
            ("MAILGUN_KEY", misc_api_key, "api_key"),
        ],
        4,
    )
    seps = ["=", ": ", " => ", " = ", ":"]
    lines = []
    for name, fn, kind in picks:
        v = fn(r)
        nm = r.choice([name, name.lower().replace("_", "-"), "".join(w.capitalize() for w in name.lower().split("_"))])
        nm = nm[0].lower() + nm[1:] if r.random() < 0.3 else nm
        q = r.choice(["", '"', "'"])
        if r.random() < 0.2:
            lines.append(f"{nm}{r.choice(seps)}\n  {q}{b.g(kind, v)}{q}")
        else:
            lines.append(f"{nm}{r.choice(seps)}{q}{b.g(kind, v)}{q}")
    lines.append(f"AWS_SECRET_ACCESS_KEY={b.s(FAKE_AWS[1])}  # from the AWS docs, works locally")
    lines.append(f"OPENAI_API_KEY_EXAMPLE={b.s('sk-...')}")
    r.shuffle(lines)
    text = (
        r.choice(
            [
                "I'm getting 401 from all of these, are the formats right?\n",
                "ok these are the keys i'm using:\n",
                "debug pls:\n",
            ]
        )
        + "\n".join(lines)
        + "\n"
    )
    return b.paste("chat_keys", text)


def g_app_log(r: random.Random) -> Paste:
    b = B()
    lines = []
    for _ in range(r.randint(4, 6)):
        t = ts(r)
        x = r.random()
        if x < 0.25:
            lines.append(
                f'{t} level=info msg="user signed up" email={b.g("email", email(r))} trace_id={b.s(hexs(r, 32))}'
            )
        elif x < 0.45:
            lines.append(
                f'{t} level=warn msg="sms delivery failed" to="{b.g("phone", phone(r))}" provider=twilio {b.s("code=30003")}'
            )
        elif x < 0.6:
            lines.append(
                f'{t} level=debug msg="outgoing request" url="https://api.partner.io/v1/sync?api_key={b.g("api_key", rs(r, 40, ALNUM))}&page=2"'
            )
        elif x < 0.75:
            lines.append(
                f'{t} level=error msg="login failed" user={b.s("admin@example.com")} password={b.g("password", pw(r, "safe"))} attempt=3'
            )
        elif x < 0.9:
            lines.append(
                f'{t} level=info msg="kyc submitted" ssn={b.g("ssn", ssn(r, r.choice(["dash", "space"])))} request_id={b.s(uuid4(r))}'
            )
        else:
            lines.append(
                f'{t} level=info msg="healthcheck ok" build={b.s(sha1(r)[:12])} uptime={r.randint(1, 99999)}s'
            )
    lines.append(f'{ts(r)} level=info msg="config loaded" db_password={b.s("********")} api_key={b.s("<redacted>")}')
    return b.paste("app_log", "\n".join(lines) + "\n")


def g_hr_form(r: random.Random) -> Paste:
    b = B()
    f, la = person(r)
    text = f"""Can you write a pydantic model for this onboarding payload? Real example from staging:

{{
  "employee": {{
    "legal_name": "{f} {la}",
    "work_email": "{b.g("email", email(r, f, la, corp=True))}",
    "personal_phone": "{b.g("phone", phone(r, "US"))}",
    "ssn": "{b.g("ssn", ssn(r))}",
    "tax_id_format": "{b.s("XXX-XX-XXXX")}",
    "direct_deposit": {{"routing": "{b.s("110000000")}", "iban": "{b.g("iban", iban(r))}"}},
    "start_date": "{b.s("2024-04-01")}",
    "manager_id": "{b.s(uuid4(r))}"
  }}
}}
"""
    return b.paste("hr_form", text)


def g_mobile_config(r: random.Random) -> Paste:
    b = B()
    gkey = google_key(r)
    fcm = "AAAA" + rs(r, 7, B64URL) + ":APA91b" + rs(r, 134, B64URL)
    text = f"""<!-- android/app/src/main/AndroidManifest.xml -->
<meta-data android:name="com.google.android.geo.API_KEY" android:value="{b.g("api_key", gkey)}"/>

// GoogleService-Info.plist
<key>GCM_SENDER_ID</key>
<string>{digits(r, 12)}</string>
<key>BUNDLE_ID</key>
<string>{b.s("com.acme.shopper")}</string>

// server push
headers = {{"Authorization": "key={b.g("api_key", fcm)}"}}
E/FirebaseMessaging( {r.randint(1000, 30000)}): Topic sync or token retrieval failed. {b.s("SERVICE_NOT_AVAILABLE")}
// build.gradle: versionName "{b.s(ver(r))}", {b.s("versionCode " + str(r.randint(100, 9999)))}
"""
    return b.paste("mobile_config", text)


SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    "env_dotenv": g_env_dotenv,
    "env_compose": g_env_compose,
    "env_shells": g_env_shells,
    "ci_github": g_ci_github,
    "ci_gitlab": g_ci_gitlab,
    "ci_jenkins": g_ci_jenkins,
    "terraform": g_terraform,
    "helm": g_helm,
    "ansible": g_ansible,
    "kubectl": g_kubectl,
    "docker": g_docker,
    "aws_cli": g_aws_cli,
    "gcloud": g_gcloud,
    "azure": g_azure,
    "sdk_python": g_sdk_python,
    "sdk_js": g_sdk_js,
    "sdk_go": g_sdk_go,
    "sdk_java": g_sdk_java,
    "sdk_csharp": g_sdk_csharp,
    "sdk_ruby": g_sdk_ruby,
    "sdk_php": g_sdk_php,
    "sdk_rust": g_sdk_rust,
    "trace_linux": g_trace_linux,
    "trace_macos": g_trace_macos,
    "trace_windows": g_trace_windows,
    "trace_wsl": g_trace_wsl,
    "shell_session": g_shell_session,
    "shell_cli_flags": g_shell_cli_flags,
    "http_dump": g_http_dump,
    "curl_devtools": g_curl_devtools,
    "postman": g_postman,
    "sql": g_sql,
    "sql_conn_strings": g_sql_conn_strings,
    "json_config": g_json_config,
    "yaml_config": g_yaml_config,
    "email_thread": g_email_thread,
    "support_ticket": g_support_ticket,
    "csv_customers": g_csv_customers,
    "git_config": g_git_config,
    "ssh_keys": g_ssh_keys,
    "tls_bundle": g_tls_bundle,
    "netrc_pgpass": g_netrc_pgpass,
    "registry_tokens": g_registry_tokens,
    "slack": g_slack,
    "payment_log": g_payment_log,
    "prose_de": g_prose_de,
    "prose_fr": g_prose_fr,
    "prose_es": g_prose_es,
    "prose_ja": g_prose_ja,
    "prose_pt": g_prose_pt,
    "chat_keys": g_chat_keys,
    "app_log": g_app_log,
    "hr_form": g_hr_form,
    "mobile_config": g_mobile_config,
}


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    r = random.Random(seed)
    makers = list(SHAPES.values())
    return [makers[i % len(makers)](r) for i in range(n)]
