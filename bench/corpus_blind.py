# Pastes keep their real long lines (connection strings, log entries), which a wrapped template would change.
# ruff: noqa: E501
"""A blind held-out corpus for the scrubber: pastes a developer might put into a coding assistant, each with the
values a scrubber must remove and the near-misses it must keep.

Written without reading the scrubber, its rule catalogue, its tests or the earlier corpora, and never run through
the scrubber while being written, so no rule was fitted to it. Every secret and every piece of PII is assembled at
run time from a seeded generator (provider prefixes and lengths follow the providers' published formats), so the
source holds no literal credential for a secret scanner to trip on.

Kinds of ``must_go`` values:

- ``password``: a password or passphrase given by name (``DB_PASSWORD=``, ``--password``, ``-pSECRET``,
  ``curl -u user:pw``, a Basic auth blob, a base64 value in a Kubernetes Secret).
- ``connection_string_password``: the password inside a URI or a driver connection string.
- ``api_key``: a provider API key or signing key (Stripe, OpenAI, AWS secret, SendGrid, Django SECRET_KEY, ...).
- ``token``: an access, bot, session or refresh token (GitHub/GitLab PATs, Slack/Discord/Telegram bots, Vault,
  JWTs, session cookies, AWS session tokens, registry tokens).
- ``private_key``: the body of a PEM, OpenSSH or PuTTY private key (the BEGIN/END lines themselves may stay).
- ``email``, ``phone`` (valid numbers of several national plans), ``card`` (Luhn-valid), ``iban`` (mod-97
  valid), ``ssn`` (US, in issued ranges): personal data.
- ``home_path_user``: the user name inside a home path (``/home/priya/``, ``c:\\users\\priya\\``,
  ``/mnt/c/Users/...``, ``/var/home/...``) or a shell prompt (``priya@devbox:~$``).

Left out on purpose: private IP addresses (they identify no one and are what makes a config debuggable), and
person names in prose (no scrubber in this project claims to find them). Neither list names them.

``must_stay`` holds what a good scrubber keeps: placeholders, documented example keys, RFC 2606 addresses,
published test card numbers, git SHAs, UUIDs, digests and lockfile hashes, versions, ARNs, public keys and
certificates. About a fifth of the shapes carry only near-misses, so the kept share means something.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import phonenumbers

KINDS = (
    "password",
    "connection_string_password",
    "api_key",
    "token",
    "private_key",
    "email",
    "phone",
    "card",
    "iban",
    "ssn",
    "home_path_user",
)


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]]
    must_stay: list[str]


@dataclass
class _Build:
    """Collects the labelled values while a shape writes its text."""

    go_: list[tuple[str, str]] = field(default_factory=list)
    stay_: list[str] = field(default_factory=list)

    def go(self, kind: str, value: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind}")
        if (kind, value) not in self.go_:
            self.go_.append((kind, value))
        return value

    def stay(self, value: str) -> str:
        if value not in self.stay_:
            self.stay_.append(value)
        return value

    def paste(self, shape: str, text: str) -> Paste:
        missing = [v for _, v in self.go_ if v not in text] + [v for v in self.stay_ if v not in text]
        if missing:
            raise ValueError(f"{shape}: labelled values missing from the text: {missing[:3]}")
        return Paste(shape, text, list(self.go_), list(self.stay_))


# --- random material -------------------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + string.digits


def _s(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _alnum(r: random.Random, n: int) -> str:
    return _s(r, ALNUM, n)


def _hex(r: random.Random, n: int) -> str:
    return _s(r, HEX, n)


def _digits(r: random.Random, n: int) -> str:
    return str(r.randint(1, 9)) + _s(r, string.digits, n - 1)


def _b64_bytes(r: random.Random, nbytes: int) -> str:
    return base64.b64encode(r.randbytes(nbytes)).decode()


def _b64url_json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _wrap(body: str, width: int = 64) -> str:
    return "\n".join(body[i : i + width] for i in range(0, len(body), width))


WORDS = (
    "Summer Winter Falcon Orchard Copper Harbor Maple Granite Velvet Cobalt Tundra Saffron Juniper Lantern Meadow "
    "Quartz Riviera Sparrow Thistle Walrus Pelican Cedar Marble Nimbus Otter Paprika Glacier Bramble Cinder Dahlia "
    "Ember Fjord Heron Indigo Jasper Kestrel Lagoon Mosaic Nutmeg Obsidian Puffin Raven Sequoia Topaz Umber Willow"
).split()

FIRST = (
    "Priya Tomasz Aiko Oluwaseun Mateo Ingrid Farhan Chiara Dmitri Leilani Siobhan Kwame Ananya Yusuf Camila "
    "Hiroshi Nadia Rafael Thandiwe Sven Gustavo Ayesha Declan Zofia Kenji Marisol Tobias Anneliese Rohan Beatriz"
).split()
LAST = (
    "Raman Kowalski Tanaka Adeyemi Fernandez Lindqvist Chowdhury Romano Volkov Kahale Brennan Mensah Iyer Demir "
    "Alvarez Sato Haddad Oliveira Ndlovu Eriksen Pereira Siddiqui Gallagher Nowak Watanabe Morales Fischer Okafor"
).split()
FREEMAIL = ("gmail.com", "outlook.com", "yahoo.co.uk", "proton.me", "gmx.de", "web.de", "icloud.com", "hotmail.fr")
TLDS = ("com", "io", "de", "co.uk", "fr", "net", "dev", "com.br", "co.jp", "nl", "app")
SYLLABLES = "nor bel vex tra lum kor dal fin ost mar quin sol tav ren pix zor hal cab mon ter".split()


def _company(r: random.Random) -> str:
    return "".join(r.choice(SYLLABLES) for _ in range(r.randint(2, 3))) + r.choice(("", "-labs", "-tech", "hq"))


def _domain(r: random.Random) -> str:
    return f"{_company(r)}.{r.choice(TLDS)}"


def _person(r: random.Random) -> tuple[str, str]:
    return r.choice(FIRST), r.choice(LAST)


def _email(r: random.Random, person: tuple[str, str] | None = None) -> str:
    first, last = (p.lower() for p in (person or _person(r)))
    local = r.choice(
        (f"{first}.{last}", f"{first[0]}{last}", f"{first}_{last[0]}", f"{first}{last}{r.randint(7, 99)}", first)
    )
    domain = r.choice(FREEMAIL) if r.random() < 0.4 else _domain(r)
    return f"{local}@{domain}"


def _username(r: random.Random, person: tuple[str, str] | None = None) -> str:
    first, last = (p.lower() for p in (person or _person(r)))
    name = r.choice((first, f"{first[0]}{last}", f"{first}.{last}", f"{last}{first[0]}", f"{first}{last[:2]}"))
    return name if len(name) >= 5 else f"{name}{last}"


def _password(r: random.Random, where: str = "any") -> str:
    """A password in one of the styles people really use. ``where`` limits the characters: "url" keeps it legal
    in URI userinfo without encoding, "shell" keeps it safe unquoted on a command line."""
    word, word2 = r.choice(WORDS), r.choice(WORDS)
    year = str(r.randint(2015, 2027))
    styles = [
        f"{word}{word2}{r.randint(10, 9999)}",
        f"{word}.{year}",
        f"{word.lower()}-{word2.lower()}-{r.choice(WORDS).lower()}-{r.choice(WORDS).lower()}",
        _alnum(r, r.randint(20, 32)),
        f"{word}{year}_{_alnum(r, 4)}",
    ]
    if where in ("any", "url"):
        styles += [f"${word.lower()}{r.randint(100, 999)}{word2}", f"*{word}{r.randint(10, 99)}*{_alnum(r, 3)}"]
    if where == "any":
        symbols = ALNUM + "!#$%&*+-=?@^_~"
        styles += [
            _s(r, symbols, r.randint(14, 22)),
            f"#{word}{r.randint(10, 99)}!{word2.lower()}",
            "{" + _alnum(r, 10) + "}" + r.choice("!?#") + str(r.randint(0, 99)),
            f"{word}!{r.randint(10, 99)}#{word2}",
            f"%{_alnum(r, 12)}",
            f"<{word}>{r.randint(1000, 9999)}",
        ]
    if where == "shell":
        styles += [f"{word}@{year}", f"{word}.{word2}.{r.randint(1, 99)}"]
    return r.choice(styles)


def _password_with_at(r: random.Random) -> str:
    return f"{r.choice(WORDS)}@{r.randint(2015, 2027)}{r.choice('!.-_')}{_alnum(r, 3)}"


def _session_token(r: random.Random) -> str:
    return _s(r, B64URL, r.randint(800, 1200))


def _jwt(r: random.Random, email: str | None = None) -> str:
    header = _b64url_json({"alg": r.choice(("HS256", "RS256", "ES256")), "typ": "JWT"})
    claims: dict = {"sub": str(uuid.UUID(int=r.getrandbits(128), version=4)), "iat": 1733000000 + r.randint(0, 9999)}
    claims["exp"] = claims["iat"] + 3600
    if email:
        claims["email"] = email
    claims["scope"] = r.choice(("read write", "openid profile", "admin"))
    return f"{header}.{_b64url_json(claims)}.{_s(r, B64URL, r.choice((43, 86, 342)))}"


# --- provider formats (prefixes and lengths as the providers publish them) ------------------------------------


def _stripe(r: random.Random) -> str:
    return r.choice(("sk_live_", "rk_live_")) + r.choice(("51", "")) + _alnum(r, r.choice((24, 32, 97)))


def _github(r: random.Random) -> str:
    if r.random() < 0.4:
        return f"github_pat_11{_s(r, UPPER_ALNUM, 20)}_{_alnum(r, 59)}"
    return r.choice(("ghp_", "gho_", "ghs_", "ghu_")) + _alnum(r, 36)


def _gitlab(r: random.Random) -> str:
    return r.choice(("glpat-", "glpat-", "gldt-", "glrt-")) + _s(r, B64URL, 20)


def _slack_bot(r: random.Random) -> str:
    return f"xoxb-{_digits(r, r.randint(10, 13))}-{_digits(r, 13)}-{_alnum(r, 24)}"


def _openai(r: random.Random) -> str:
    if r.random() < 0.2:
        return f"sk-{_alnum(r, 20)}T3BlbkFJ{_alnum(r, 20)}"
    return f"sk-{r.choice(('proj', 'proj', 'svcacct'))}-{_s(r, B64URL, 74)}T3BlbkFJ{_s(r, B64URL, 74)}"


def _anthropic(r: random.Random) -> str:
    return f"sk-ant-api03-{_s(r, B64URL, 93)}AA"


def _aws_key_id(r: random.Random, prefix: str = "AKIA") -> str:
    return prefix + _s(r, string.ascii_uppercase + "234567", 16)


def _aws_secret(r: random.Random) -> str:
    return _s(r, B64, 40)


def _aws_session(r: random.Random) -> str:
    return "IQoJb3JpZ2luX2VjE" + _s(r, B64, r.randint(600, 900)) + "="


def _sendgrid(r: random.Random) -> str:
    return f"SG.{_s(r, B64URL, 22)}.{_s(r, B64URL, 43)}"


def _npm(r: random.Random) -> str:
    return "npm_" + _alnum(r, 36)


def _pypi(r: random.Random) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + _s(r, B64URL, r.randint(120, 180))


def _hf(r: random.Random) -> str:
    return "hf_" + _s(r, string.ascii_letters, 34)


def _vault(r: random.Random) -> str:
    return "hvs.CAESI" + _s(r, B64URL, r.randint(86, 94))


def _discord_bot(r: random.Random) -> str:
    snowflake = str(r.randint(10**17, 2 * 10**18))
    return f"{base64.b64encode(snowflake.encode()).decode().rstrip('=')}.{_s(r, B64URL, 6)}.{_s(r, B64URL, 38)}"


def _telegram(r: random.Random) -> str:
    return f"{r.randint(10**8, 10**10 - 1)}:AA{_s(r, B64URL, 33)}"


PROVIDERS: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    # env var name -> (kind, generator)
    "STRIPE_SECRET_KEY": ("api_key", _stripe),
    "STRIPE_WEBHOOK_SECRET": ("api_key", lambda r: "whsec_" + _alnum(r, 32)),
    "GITHUB_TOKEN": ("token", _github),
    "GITLAB_TOKEN": ("token", _gitlab),
    "SLACK_BOT_TOKEN": ("token", _slack_bot),
    "SLACK_APP_TOKEN": ("token", lambda r: f"xapp-1-A{_s(r, UPPER_ALNUM, 10)}-{_digits(r, 13)}-{_hex(r, 64)}"),
    "OPENAI_API_KEY": ("api_key", _openai),
    "ANTHROPIC_API_KEY": ("api_key", _anthropic),
    "GROQ_API_KEY": ("api_key", lambda r: "gsk_" + _alnum(r, 52)),
    "REPLICATE_API_TOKEN": ("api_key", lambda r: "r8_" + _alnum(r, 37)),
    "HF_TOKEN": ("token", _hf),
    "SENDGRID_API_KEY": ("api_key", _sendgrid),
    "TWILIO_AUTH_TOKEN": ("token", lambda r: _hex(r, 32)),
    "TWILIO_API_KEY": ("api_key", lambda r: "SK" + _hex(r, 32)),
    "MAILGUN_API_KEY": (
        "api_key",
        lambda r: r.choice(("key-" + _hex(r, 32), f"{_hex(r, 32)}-{_hex(r, 8)}-{_hex(r, 8)}")),
    ),
    "NPM_TOKEN": ("token", _npm),
    "PYPI_TOKEN": ("token", _pypi),
    "DIGITALOCEAN_TOKEN": ("token", lambda r: "dop_v1_" + _hex(r, 64)),
    "SHOPIFY_ACCESS_TOKEN": ("token", lambda r: r.choice(("shpat_", "shpca_", "shppa_")) + _hex(r, 32)),
    "LINEAR_API_KEY": ("api_key", lambda r: "lin_api_" + _alnum(r, 40)),
    "NOTION_TOKEN": ("token", lambda r: r.choice(("secret_" + _alnum(r, 43), f"ntn_{_digits(r, 11)}{_alnum(r, 35)}"))),
    "VAULT_TOKEN": ("token", _vault),
    "GRAFANA_SA_TOKEN": ("token", lambda r: f"glsa_{_alnum(r, 32)}_{_hex(r, 8)}"),
    "NEW_RELIC_API_KEY": ("api_key", lambda r: "NRAK-" + _s(r, UPPER_ALNUM, 27)),
    "DATABRICKS_TOKEN": ("token", lambda r: "dapi" + _hex(r, 32)),
    "DOPPLER_TOKEN": ("token", lambda r: "dp.pt." + _alnum(r, 43)),
    "PULUMI_ACCESS_TOKEN": ("token", lambda r: "pul-" + _hex(r, 40)),
    "POSTMAN_API_KEY": ("api_key", lambda r: f"PMAK-{_hex(r, 24)}-{_hex(r, 34)}"),
    "SUPABASE_ACCESS_TOKEN": ("token", lambda r: "sbp_" + _hex(r, 40)),
    "GOOGLE_API_KEY": ("api_key", lambda r: "AIza" + _s(r, B64URL, 35)),
    "DATADOG_API_KEY": ("api_key", lambda r: _hex(r, 32)),
    "CLOUDFLARE_API_TOKEN": ("token", lambda r: _s(r, B64URL, 40)),
    "DISCORD_BOT_TOKEN": ("token", _discord_bot),
    "TELEGRAM_BOT_TOKEN": ("token", _telegram),
    "SENTRY_AUTH_TOKEN": ("token", lambda r: "sntryu_" + _hex(r, 64)),
    "AGE_SECRET_KEY": ("private_key", lambda r: "AGE-SECRET-KEY-1" + _s(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    "ATLASSIAN_API_TOKEN": ("api_key", lambda r: f"ATATT3xFfGF0{_s(r, B64URL, 170)}={_s(r, HEX.upper(), 8)}"),
    "SQUARE_ACCESS_TOKEN": ("token", lambda r: "EAAA" + _s(r, B64URL, 60)),
}


def _provider(r: random.Random, b: _Build, name: str | None = None) -> tuple[str, str]:
    name = name or r.choice(list(PROVIDERS))
    kind, make = PROVIDERS[name]
    return name, b.go(kind, make(r))


# --- personal data with valid checksums -------------------------------------------------------------------------

PHONE_PLANS: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    (
        "US",
        lambda r: (
            f"({r.choice((212, 312, 415, 503, 617, 206, 512, 303, 404, 718))}) {r.randint(201, 989)}-{r.randint(1000, 9999)}"
        ),
    ),
    ("US", lambda r: f"+1 {r.choice((646, 213, 305, 720, 971))}-{r.randint(201, 989)}-{r.randint(1000, 9999)}"),
    ("GB", lambda r: f"07{r.randint(400, 999)} {r.randint(100000, 999999)}"),
    ("GB", lambda r: f"+44 7{r.randint(400, 999)} {r.randint(100, 999)} {r.randint(100, 999)}"),
    ("FR", lambda r: f"0{r.choice((6, 7))} " + " ".join(f"{r.randint(10, 99)}" for _ in range(4))),
    ("FR", lambda r: f"+33 6 {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}"),
    ("JP", lambda r: f"0{r.choice((70, 80, 90))}-{r.randint(1000, 9999)}-{r.randint(1000, 9999)}"),
    ("DE", lambda r: f"+49 15{r.choice((1, 2, 7, 9))} {r.randint(1000000, 99999999)}"),
    ("DE", lambda r: f"01{r.choice((51, 60, 70, 76))} {r.randint(1000, 9999)} {r.randint(1000, 9999)}"),
    ("IN", lambda r: f"+91 {r.randint(70000, 99999)} {r.randint(10000, 99999)}"),
    ("BR", lambda r: f"(11) 9{r.randint(6000, 9999)}-{r.randint(1000, 9999)}"),
    ("AU", lambda r: f"04{r.randint(10, 99)} {r.randint(100, 999)} {r.randint(100, 999)}"),
    ("ES", lambda r: f"+34 6{r.randint(10, 99)} {r.randint(100, 999)} {r.randint(100, 999)}"),
    ("NL", lambda r: f"06-{r.randint(10000000, 99999999)}"),
)
PHONE_REGIONS = tuple(sorted({region for region, _ in PHONE_PLANS}))


def _phone(r: random.Random) -> str:
    """A number valid in its national plan (libphonenumber's metadata), in the way people write it there."""
    region, make = r.choice(PHONE_PLANS)
    while True:
        text = make(r)
        if phonenumbers.is_valid_number(phonenumbers.parse(text, region)):
            return text


def _luhn_complete(partial: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(partial)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return partial + str((10 - total % 10) % 10)


def _card(r: random.Random) -> str:
    prefix, length, groups = r.choice(
        (
            (str(r.choice((41, 45, 47, 49))) + str(r.randint(0, 9)), 16, (4, 4, 4, 4)),
            (str(r.randint(51, 55)), 16, (4, 4, 4, 4)),
            (str(r.randint(2221, 2720)), 16, (4, 4, 4, 4)),
            (r.choice(("34", "37")), 15, (4, 6, 5)),
            ("6011", 16, (4, 4, 4, 4)),
        )
    )
    number = _luhn_complete(prefix + _s(r, string.digits, length - len(prefix) - 1))
    sep = r.choice((" ", " ", "-", ""))
    parts, i = [], 0
    for g in groups:
        parts.append(number[i : i + g])
        i += g
    return sep.join(parts)


TEST_CARDS = (
    "4242 4242 4242 4242",
    "4000 0566 5566 5556",
    "5555 5555 5555 4444",
    "3782 822463 10005",
    "4111111111111111",
)

IBAN_BBAN: dict[str, Callable[[random.Random], str]] = {
    "DE": lambda r: _s(r, string.digits, 18),
    "GB": lambda r: _s(r, string.ascii_uppercase, 4) + _s(r, string.digits, 14),
    "NL": lambda r: _s(r, string.ascii_uppercase, 4) + _s(r, string.digits, 10),
    "FR": lambda r: _s(r, string.digits, 23),
    "AT": lambda r: _s(r, string.digits, 16),
    "CH": lambda r: _s(r, string.digits, 17),
    "PL": lambda r: _s(r, string.digits, 24),
    "IE": lambda r: _s(r, string.ascii_uppercase, 4) + _s(r, string.digits, 14),
}


def _iban(r: random.Random) -> str:
    country = r.choice(list(IBAN_BBAN))
    bban = IBAN_BBAN[country](r)
    numeric = "".join(str(int(ch, 36)) for ch in bban + country + "00")
    compact = f"{country}{98 - int(numeric) % 97:02d}{bban}"
    return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4)) if r.random() < 0.6 else compact


def _ssn(r: random.Random) -> str:
    area = r.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


# --- near-misses ------------------------------------------------------------------------------------------------


def _uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _sha(r: random.Random) -> str:
    return _hex(r, 40)


def _version(r: random.Random) -> str:
    return f"{r.randint(0, 12)}.{r.randint(0, 40)}.{r.randint(0, 30)}"


def _sri(r: random.Random) -> str:
    return "sha512-" + _b64_bytes(r, 64)


def _digest(r: random.Random) -> str:
    return "sha256:" + _hex(r, 64)


def _example_email(r: random.Random) -> str:
    local = r.choice(("user", "alice", "bob", "jane.doe", "noreply", "admin", "test", "you"))
    return f"{local}@{r.choice(('example.com', 'example.org', 'example.net', 'mail.example.com', 'corp.test'))}"


PLACEHOLDERS = (
    "<your-token>",
    "<YOUR_API_KEY>",
    "YOUR_API_KEY_HERE",
    "xxxxxxxxxxxxxxxxxxxx",
    "sk-...",
    "sk-proj-...your key...",
    "${DB_PASSWORD}",
    "<password>",
    "REPLACE_ME",
    "********",
    "<redacted>",
    "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "your-secret-here",
    "[REDACTED]",
)
AWS_DOC_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _pem(label: str, body: str) -> str:
    return f"-----BEGIN {label}-----\n{_wrap(body)}\n-----END {label}-----"


def _rsa_body(r: random.Random) -> str:
    return (
        r.choice(("MIIEowIBAAKCAQEA", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ")) + _s(r, B64, 1560) + "="
    )


def _private_pem(r: random.Random) -> tuple[str, str]:
    """(block, body) for an RSA, PKCS#8, EC or OpenSSH private key."""
    kind = r.choice(("RSA", "PKCS8", "EC", "OPENSSH"))
    if kind == "EC":
        label, body = "EC PRIVATE", "MHcCAQEEI" + _s(r, B64, 43) + "oAoGCCqGSM49AwEHoUQDQgAE" + _s(r, B64, 88)
    elif kind == "OPENSSH":
        label = "OPENSSH PRIVATE"
        body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + _s(r, B64, 320) + "="
        block = f"-----BEGIN {label} KEY-----\n{_wrap(body, 70)}\n-----END {label} KEY-----"
        return block, _wrap(body, 70)
    else:
        label, body = ("RSA PRIVATE" if kind == "RSA" else "PRIVATE"), _rsa_body(r)
    return _pem(label + " KEY", body), _wrap(body)


def _certificate(r: random.Random) -> tuple[str, str]:
    body = "MIID" + _s(r, B64, 1100) + "=="
    return _pem("CERTIFICATE", body), _wrap(body)


def _ssh_public(r: random.Random) -> str:
    return "AAAAC3NzaC1lZDI1NTE5AAAAI" + _s(r, B64, 43)


def _q(value: str) -> str:
    """Quote a YAML scalar the way a person would when it would otherwise not parse as written."""
    if value[0] in "#$%{*<&!@|>[`,?-:'\"" or ": " in value or " #" in value:
        return f'"{value}"'
    return value


# --- shapes carrying secrets or PII -----------------------------------------------------------------------------


def terraform_tfvars(r: random.Random) -> Paste:
    b = _Build()
    pw = b.go("password", _password(r))
    dd = b.go("api_key", _hex(r, 32))
    cf = b.go("token", _s(r, B64URL, 40))
    tfc = b.go("token", f"{_alnum(r, 14)}.atlasv1.{_s(r, B64URL, 67)}")
    ami = b.stay("ami-0" + _hex(r, 16))
    text = f"""# terraform.tfvars (prod) -- why does plan want to replace the RDS instance?
region            = "eu-west-1"
instance_type     = "t3.large"
ami_id            = "{ami}"
db_username       = "app_admin"
db_password       = "{pw}"
datadog_api_key   = "{dd}"
cloudflare_api_token = "{cf}"
tags = {{
  team  = "payments"
  owner = "{b.stay(_example_email(r))}"
}}

# ~/.terraformrc
credentials "app.terraform.io" {{
  token = "{tfc}"
}}
"""
    return b.paste("terraform_tfvars", text)


def ansible_group_vars(r: random.Random) -> Paste:
    b = _Build()
    root = b.go("password", _password(r))
    smtp = b.go("password", _password(r))
    become = b.go("password", _password(r))
    admin = b.go("email", _email(r))
    vaulted = b.stay("{{ vault_replication_password }}")
    text = f"""# group_vars/dbservers.yml  (ansible 2.16, no vault yet, sorry)
mysql_root_password: {_q(root)}
mysql_replication_password: "{vaulted}"
mysql_port: 3306
smtp_relay_host: smtp.{_domain(r)}
smtp_password: {_q(smtp)}
admin_email: {admin}
ansible_user: deploy
ansible_become_pass: {_q(become)}
ntp_servers:
  - 0.pool.ntp.org
  - 1.pool.ntp.org
"""
    return b.paste("ansible_group_vars", text)


def github_actions_env(r: random.Random) -> Paste:
    b = _Build()
    npm = b.go("token", _npm(r))
    hook = b.go("token", _alnum(r, 24))
    team, chan = "T" + _s(r, UPPER_ALNUM, 9), "B" + _s(r, UPPER_ALNUM, 10)
    pinned = b.stay(_sha(r))
    ref = b.stay("${{ secrets.PYPI_TOKEN }}")
    text = f"""name: release
on:
  push:
    tags: ["v*"]
env:
  NODE_VERSION: "20"
  NPM_TOKEN: {npm}
  SLACK_WEBHOOK_URL: https://hooks.slack.com/services/{team}/{chan}/{hook}
jobs:
  publish:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@{pinned} # v4.0.2
      - run: echo "//registry.npmjs.org/:_authToken=${{{{ env.NPM_TOKEN }}}}" > ~/.npmrc
      - run: npm publish --access public
      - run: twine upload dist/* -u __token__ -p {ref}
"""
    return b.paste("github_actions_env", text)


def helm_values(r: random.Random) -> Paste:
    b = _Build()
    pg = b.go("password", _password(r))
    redis = b.go("password", _password(r))
    jwt_secret = b.go("api_key", _s(r, B64, 44))
    digest = b.stay(_digest(r))
    tag = b.stay(_version(r))
    text = f"""# values-prod.yaml for our chart -- the pod crashloops with "password authentication failed"
image:
  repository: ghcr.io/{_company(r)}/api
  tag: "{tag}"
  digest: {digest}
postgresql:
  auth:
    username: api
    password: {_q(pg)}
    database: api
    existingSecret: ""
redis:
  auth:
    enabled: true
    password: {_q(redis)}
config:
  jwtSecret: "{jwt_secret}"
  logLevel: debug
resources:
  limits: {{cpu: 500m, memory: 512Mi}}
"""
    return b.paste("helm_values", text)


def systemd_unit(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    pw = b.go("connection_string_password", _password(r, "url"))
    stripe = b.go("api_key", _stripe(r))
    text = f"""$ systemctl cat worker.service
# /etc/systemd/system/worker.service
[Unit]
Description=Billing worker
After=network-online.target

[Service]
User={r.choice(("worker", "svc-billing", "app"))}
WorkingDirectory=/home/{user}/billing
Environment="DATABASE_URL=postgresql://billing:{pw}@10.20.0.14:5432/billing"
Environment=STRIPE_SECRET_KEY={stripe}
Environment=PYTHONUNBUFFERED=1
Environment=SENTRY_RELEASE={b.stay(_sha(r))}
ExecStart=/home/{user}/.local/bin/poetry run python -m billing.worker
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
    return b.paste("systemd_unit", text)


def java_properties(r: random.Random) -> Paste:
    b = _Build()
    jdbc = b.go("connection_string_password", _password(r, "url"))
    mail = b.go("password", _password(r))
    sg = b.go("api_key", _sendgrid(r))
    keystore = b.go("password", _password(r))
    text = f"""# src/main/resources/application.properties
server.port=8080
spring.datasource.url=jdbc:mysql://db.internal:3306/shop?user=shop&password={jdbc}&useSSL=false&serverTimezone=UTC
spring.jpa.hibernate.ddl-auto=validate
spring.mail.host=smtp.sendgrid.net
spring.mail.username=apikey
spring.mail.password={mail}
app.sendgrid.api-key={sg}
server.ssl.key-store=classpath:keystore.p12
server.ssl.key-store-password={keystore}
app.jwt.secret=${{JWT_SECRET}}
"""
    b.stay("${JWT_SECRET}")
    return b.paste("java_properties", text)


def spring_application_yml(r: random.Random) -> Paste:
    b = _Build()
    pw = b.go("password", _password(r))
    client_secret = b.go("api_key", _hex(r, 40))
    rabbit = b.go("password", _password(r))
    client_id = b.stay("Iv1." + _hex(r, 16))
    text = f"""spring:
  datasource:
    url: jdbc:postgresql://localhost:5432/orders
    username: orders
    password: {_q(pw)}
  rabbitmq:
    host: rabbit
    username: orders
    password: {_q(rabbit)}
  security:
    oauth2:
      client:
        registration:
          github:
            client-id: {client_id}
            client-secret: {client_secret}
management:
  endpoints.web.exposure.include: health,info
"""
    return b.paste("spring_application_yml", text)


def django_settings(r: random.Random) -> Paste:
    b = _Build()
    prefix = r.choice(("django-insecure-", ""))
    key = b.go("api_key", prefix + _s(r, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50))
    pw = b.go("password", _password(r))
    mail_pw = b.go("password", _password(r))
    person = _person(r)
    admin = b.go("email", _email(r, person))
    text = f"""# settings.py -- runserver works but gunicorn says ImproperlyConfigured
SECRET_KEY = '{key}'
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", ".{_domain(r)}"]
ADMINS = [("{person[0]} {person[1]}", "{admin}")]
DATABASES = {{
    "default": {{
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "crm",
        "USER": "crm",
        "PASSWORD": "{pw}",
        "HOST": "db",
        "PORT": "5432",
    }}
}}
EMAIL_HOST = "smtp.office365.com"
EMAIL_HOST_USER = "{b.stay(_example_email(r))}"
EMAIL_HOST_PASSWORD = "{mail_pw}"
"""
    return b.paste("django_settings", text)


def rails_database_yml(r: random.Random) -> Paste:
    b = _Build()
    pw = b.go("password", _password(r))
    base = b.go("api_key", _hex(r, 128))
    aws = b.go("api_key", _aws_secret(r))
    key_id = b.go("api_key", _aws_key_id(r))
    erb = b.stay('<%= ENV["DATABASE_PASSWORD"] %>')
    text = f"""# config/database.yml
default: &default
  adapter: postgresql
  encoding: unicode
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>
development:
  <<: *default
  database: shop_development
  password: {erb}
production:
  <<: *default
  database: shop_production
  username: shop
  password: {_q(pw)}

# and `bin/rails credentials:show` prints:
secret_key_base: {base}
aws:
  access_key_id: {key_id}
  secret_access_key: {aws}
"""
    return b.paste("rails_database_yml", text)


def php_env_wpconfig(r: random.Random) -> Paste:
    b = _Build()
    db = b.go("password", _password(r))
    app_key = b.go("api_key", "base64:" + _b64_bytes(r, 32))
    mail = b.go("password", _password(r))
    wp_db = b.go("password", _password(r))
    salt = b.go("api_key", _s(r, ALNUM + "!#$%&()*+,-./:;<=>?@[]^_{|}~", 64))
    text = f"""# .env (Laravel)
APP_NAME=Shop
APP_KEY={app_key}
APP_DEBUG=true
DB_CONNECTION=mysql
DB_HOST=127.0.0.1
DB_PORT=3306
DB_PASSWORD={db}
MAIL_MAILER=smtp
MAIL_PASSWORD={mail}

// wp-config.php on the blog
define( 'DB_NAME', 'wordpress' );
define( 'DB_USER', 'wp' );
define( 'DB_PASSWORD', '{wp_db}' );
define( 'AUTH_KEY', '{salt}' );
define( 'WP_DEBUG', false );
$table_prefix = 'wp_';
"""
    return b.paste("php_env_wpconfig", text)


def sdk_init_snippets(r: random.Random) -> Paste:
    b = _Build()
    openai, anthropic, groq = _openai(r), _anthropic(r), "gsk_" + _alnum(r, 52)
    stripe, replicate = _stripe(r), "r8_" + _alnum(r, 37)
    lang = r.choice(("python", "node", "go", "rust"))
    if lang == "python":
        text = f"""import anthropic
from groq import Groq
import replicate

client = anthropic.Anthropic(api_key="{b.go("api_key", anthropic)}")
groq = Groq(api_key="{b.go("api_key", groq)}")
rep = replicate.Client(api_token="{b.go("api_key", replicate)}")
msg = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=[...])
# TypeError: Messages.create() got an unexpected keyword argument 'stream_options'
"""
    elif lang == "node":
        text = f"""import OpenAI from "openai";
import Stripe from "stripe";

const openai = new OpenAI({{ apiKey: "{b.go("api_key", openai)}", organization: "org-{_alnum(r, 24)}" }});
const stripe = new Stripe("{b.go("api_key", stripe)}", {{ apiVersion: "2024-06-20" }});
// why is stripe.checkout.sessions.create returning 401 in prod only?
"""
    elif lang == "go":
        text = f"""package main

import (
\t"github.com/stripe/stripe-go/v79"
\topenai "github.com/sashabaranov/go-openai"
)

func main() {{
\tstripe.Key = "{b.go("api_key", stripe)}"
\tclient := openai.NewClient("{b.go("api_key", openai)}")
\t_ = client
}}
"""
    else:
        text = f"""use async_openai::{{config::OpenAIConfig, Client}};

let config = OpenAIConfig::new()
    .with_api_key("{b.go("api_key", openai)}")
    .with_org_id("org-{_alnum(r, 24)}");
let client = Client::with_config(config);
let groq = groq_api_rs::Client::new("{b.go("api_key", groq)}");
// error[E0599]: no method named `chat` found for struct `Client`
"""
    for kept in ("claude-sonnet-4-5", "2024-06-20", "github.com/stripe/stripe-go/v79", "OpenAIConfig"):
        if kept in text:
            b.stay(kept)
    return b.paste("sdk_init_snippets", text)


def python_dict_literal(r: random.Random) -> Paste:
    b = _Build()
    pw = b.go("password", _password(r))
    hf = b.go("token", _hf(r))
    key_id = b.go("api_key", _aws_key_id(r))
    secret = b.go("api_key", _aws_secret(r))
    bucket_id = b.stay(_uuid(r))
    text = f"""CONFIG = {{
    "db": {{"host": "warehouse.internal", "user": "etl", "password": "{pw}", "port": 5439}},
    "hf_token": "{hf}",
    "aws": {{
        "aws_access_key_id": "{key_id}",
        "aws_secret_access_key": "{secret}",
        "region_name": "us-east-2",
    }},
    "bucket_id": "{bucket_id}",
    "batch_size": 512,
}}
# KeyError: 'aws_session_token' when I call boto3.client("s3", **CONFIG["aws"])
"""
    return b.paste("python_dict_literal", text)


def json_log_auth_headers(r: random.Random) -> Paste:
    b = _Build()
    lines = []
    for _ in range(r.randint(2, 4)):
        email = b.go("email", _email(r))
        jwt = b.go("token", _jwt(r, email if r.random() < 0.5 else None))
        api_key = b.go("api_key", _alnum(r, 32))
        entry = {
            "ts": f"2024-11-{r.randint(10, 28)}T{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)}.{r.randint(100, 999)}Z",
            "level": r.choice(("error", "warn", "info")),
            "request_id": b.stay(_uuid(r)),
            "trace_id": b.stay(_hex(r, 32)),
            "method": "POST",
            "path": r.choice(("/v1/orders", "/api/checkout", "/graphql")),
            "status": r.choice((401, 403, 500, 502)),
            "headers": {"authorization": f"Bearer {jwt}", "x-api-key": api_key, "user-agent": "okhttp/4.12.0"},
            "user": {"email": email},
        }
        lines.append(json.dumps(entry))
    text = "pino logs from the gateway, every request 401s since the deploy:\n" + "\n".join(lines) + "\n"
    return b.paste("json_log_auth_headers", text)


def http_request_dump(r: random.Random) -> Paste:
    b = _Build()
    user, pw = r.choice(("admin", "deploy", "ci-bot")), _password(r, "url")
    basic = b.go("password", base64.b64encode(f"{user}:{pw}".encode()).decode())
    session = b.go("token", _session_token(r))
    csrf = b.go("token", _alnum(r, 32))
    etag = b.stay('W/"' + _hex(r, 16) + '"')
    text = f"""Copied from devtools (as cURL didn't work). Why does the second one get 403?

POST /admin/api/reports HTTP/1.1
Host: {_domain(r)}
Authorization: Basic {basic}
Content-Type: application/json
Content-Length: 57

GET /dashboard HTTP/2
Host: app.{_domain(r)}
Cookie: session={session}; csrftoken={csrf}; theme=dark
If-None-Match: {etag}
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0
"""
    return b.paste("http_request_dump", text)


def curl_commands(r: random.Random) -> Paste:
    b = _Build()
    pw = b.go("password", _password(r, "shell"))
    xkey = b.go("api_key", _alnum(r, r.choice((32, 40))))
    gl = b.go("token", _gitlab(r))
    idem = b.stay(_uuid(r))
    text = f"""$ curl -u deploy:{pw} https://nexus.{_domain(r)}/service/rest/v1/repositories
{{"message": "Unauthorized"}}
$ curl -s -H "X-API-Key: {xkey}" -H "Idempotency-Key: {idem}" https://api.{_domain(r)}/v2/items?limit=50
$ curl --header "PRIVATE-TOKEN: {gl}" "https://gitlab.com/api/v4/projects/{r.randint(1000000, 60000000)}/pipelines?ref=main"
curl: (22) The requested URL returned error: 404
"""
    return b.paste("curl_commands", text)


def db_cli_history(r: random.Random) -> Paste:
    b = _Build()
    mysql_pw = b.go("password", _password(r, "shell"))
    pg_pw = b.go("password", _password(r, "shell"))
    mongo_pw = b.go("connection_string_password", _password(r, "url"))
    redis_pw = b.go("password", _password(r, "shell"))
    redis_url = b.go("connection_string_password", _password(r, "url"))
    cluster = _alnum(r, 5).lower()
    text = f"""$ history | tail -n 8
  501  mysql -u root -p{mysql_pw} -h 127.0.0.1 shop < dump.sql
  502  PGPASSWORD={pg_pw} psql -h pg.internal -U reporting -d analytics -c '\\dt'
  503  mongosh "mongodb+srv://analyst:{mongo_pw}@cluster0.{cluster}.mongodb.net/sales?retryWrites=true&w=majority"
  504  redis-cli -h cache.internal -a {redis_pw} --no-auth-warning INFO keyspace
  505  redis-cli -u redis://:{redis_url}@cache.internal:6379/0 PING
  506  git log --oneline -3
  507  docker compose ps
  508  history | tail -n 8
"""
    return b.paste("db_cli_history", text)


def connection_uris(r: random.Random) -> Paste:
    b = _Build()
    pw = [b.go("connection_string_password", _password(r, "url")) for _ in range(4)]
    at_pw = b.go("connection_string_password", _password_with_at(r))
    sql_pw = b.go("connection_string_password", _password(r, "shell"))
    text = f"""Which of these should I use for SQLAlchemy async? All in our .env.staging:
DATABASE_URL=postgresql+asyncpg://orders:{pw[0]}@pg-staging.internal:5432/orders
REPLICA_URL=mysql+pymysql://reader:{pw[1]}@mysql-ro.internal/orders?charset=utf8mb4
BROKER_URL=amqp://celery:{pw[2]}@rabbitmq:5672/%2F
CACHE_URL=rediss://default:{pw[3]}@redis-{r.randint(10000, 19999)}.c1.eu-west-1-2.ec2.cloud.redislabs.com:{r.randint(10000, 19999)}
MONGO_URL=mongodb://root:{at_pw}@mongo:27017/?authSource=admin
MSSQL=Server=tcp:{_company(r)}.database.windows.net,1433;Initial Catalog=orders;User ID=orders;Password={sql_pw};Encrypt=True;
LOCAL_URL={b.stay("sqlite:///./dev.db")}
EXAMPLE={b.stay("postgresql://USER:PASSWORD@HOST:5432/DB")}
"""
    return b.paste("connection_uris", text)


def markdown_creds_table(r: random.Random) -> Paste:
    b = _Build()
    rows = []
    for service in r.sample(("Grafana", "Jenkins", "pgAdmin", "RabbitMQ UI", "Kibana", "MinIO console", "Airflow"), 4):
        owner = b.go("email", _email(r))
        rows.append(f"| {service} | admin | {b.go('password', _password(r))} | {owner} |")
    placeholder = b.stay(r.choice(("<ask in #ops>", "see 1Password", "`$SONAR_PASSWORD`")))
    text = (
        "Onboarding doc from our wiki -- can you turn this into a docker-compose override?\n\n"
        "| Service | User | Password | Owner |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n| SonarQube | admin | {placeholder} | platform team |\n"
    )
    return b.paste("markdown_creds_table", text)


def k8s_secret(r: random.Random) -> Paste:
    b = _Build()
    db = b.go("password", _password(r))
    api = b.go("token", _s(r, B64URL, 40))
    encoded = b.go("password", base64.b64encode(_password(r).encode()).decode())
    uid = b.stay(_uuid(r))
    text = f"""apiVersion: v1
kind: Secret
metadata:
  name: api-secrets
  namespace: prod
  uid: {uid}
type: Opaque
stringData:
  db-password: {_q(db)}
  api-token: {api}
data:
  redis-password: {encoded}
---
# kubectl describe pod says: couldn't find key db_password in Secret prod/api-secrets
"""
    return b.paste("k8s_secret", text)


def kubeconfig(r: random.Random) -> Paste:
    b = _Build()
    key_block, _ = _private_pem(r)
    key_data = b.go("private_key", base64.b64encode(key_block.encode()).decode())
    token = b.go("token", _jwt(r))
    ca = b.stay(base64.b64encode(_certificate(r)[0].encode()).decode())
    text = f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://{r.randint(10, 99)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}:6443
  name: prod
users:
- name: admin
  user:
    client-key-data: {key_data}
- name: ci
  user:
    token: {token}
contexts:
- context: {{cluster: prod, user: admin}}
  name: prod
current-context: prod
"""
    return b.paste("kubeconfig", text)


def package_registry_configs(r: random.Random) -> Paste:
    b = _Build()
    npm = b.go("token", _npm(r))
    pypi = b.go("token", _pypi(r))
    nexus = b.go("password", _password(r))
    cargo = b.go("token", "cio" + _alnum(r, 32))
    text = f"""~/.npmrc
@{_company(r)}:registry=https://npm.pkg.github.com
//registry.npmjs.org/:_authToken={npm}

~/.pypirc
[distutils]
index-servers = pypi internal
[pypi]
username = __token__
password = {pypi}
[internal]
repository = https://nexus.{_domain(r)}/repository/pypi-internal/
username = ci
password = {nexus}

~/.cargo/credentials.toml
[registry]
token = "{cargo}"
"""
    return b.paste("package_registry_configs", text)


def powershell_session(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    openai = b.go("api_key", _openai(r))
    account = _company(r).replace("-", "")[:20]
    key = b.go("api_key", _b64_bytes(r, 64))
    pw = b.go("password", _password(r, "shell"))
    text = f"""PS C:\\Users\\{user}\\source\\repos\\Importer> $env:OPENAI_API_KEY = "{openai}"
PS C:\\Users\\{user}\\source\\repos\\Importer> $env:AZURE_STORAGE_CONNECTION_STRING = "DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};EndpointSuffix=core.windows.net"
PS C:\\Users\\{user}\\source\\repos\\Importer> $secure = ConvertTo-SecureString "{pw}" -AsPlainText -Force
PS C:\\Users\\{user}\\source\\repos\\Importer> dotnet run
Unhandled exception. System.FormatException: Settings must be of the form "name=value".
   at Importer.Program.Main(String[] args) in C:\\Users\\{user}\\source\\repos\\Importer\\Program.cs:line 27
"""
    return b.paste("powershell_session", text)


def windows_wsl_traceback(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    other = b.go("home_path_user", _username(r))
    text = f"""Traceback (most recent call last):
  File "c:\\users\\{user}\\projects\\scraper\\main.py", line 14, in <module>
    from scraper.fetch import run
  File "c:\\users\\{user}\\appdata\\local\\programs\\python\\python312\\lib\\importlib\\__init__.py", line 90, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
ModuleNotFoundError: No module named 'scraper.fetch'

and the same repo opened from WSL:
$ python3 /mnt/c/Users/{other}/projects/scraper/main.py
/usr/bin/python3: can't open file '/mnt/c/Users/{other}/projects/scraper/main.py': [Errno 2] No such file or directory
"""
    return b.paste("windows_wsl_traceback", text)


def shell_prompt_session(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    host = r.choice(("devbox", "fedora", "thinkpad", "MacBook-Pro", "ws-17"))
    token = b.go("token", _github(r))
    short = b.stay(_hex(r, 7))
    style = r.choice(("debian", "fedora", "mac"))
    if style == "debian":
        prompt, home = f"{user}@{host}:~/src/api$", f"/home/{user}"
    elif style == "fedora":
        prompt, home = f"[{user}@{host} api]$", f"/var/home/{user}"
    else:
        prompt, home = f"{user}@{host} api %", f"/Users/{user}"
    text = f"""{prompt} export GITHUB_TOKEN={token}
{prompt} gh pr checkout 412
From github.com:{_company(r)}/api
 * [new ref]         refs/pull/412/head -> fix-retry
Switched to branch 'fix-retry'
{prompt} git log --oneline -1
{short} Retry idempotent requests on 502
{prompt} pytest -q
ERROR {home}/src/api/tests/test_retry.py - ImportError: cannot import name 'Backoff'
"""
    return b.paste("shell_prompt_session", text)


def node_stack_trace(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    pw = b.go("connection_string_password", _password(r, "url"))
    text = f"""MongoServerSelectionError: connect ECONNREFUSED 127.0.0.1:27017
    at Timeout._onTimeout (/home/{user}/work/inventory/node_modules/mongodb/lib/sdam/topology.js:278:38)
    at listOnTimeout (node:internal/timers:573:17)
    at process.processTimers (node:internal/timers:514:7) {{
  reason: TopologyDescription {{ type: 'Unknown', setName: null }},
  connectionString: 'mongodb://inventory:{pw}@127.0.0.1:27017/inventory?authSource=admin'
}}
Node.js v{b.stay(f"{r.choice((18, 20, 22))}.{r.randint(1, 19)}.{r.randint(0, 9)}")}
"""
    return b.paste("node_stack_trace", text)


def csv_customer_pii(r: random.Random) -> Paste:
    b = _Build()
    rows = ["customer_id,name,email,phone,country,iban,created_at"]
    for _ in range(r.randint(3, 5)):
        person = _person(r)
        cid = b.stay(f"C{_digits(r, 7)}")
        rows.append(
            f"{cid},{person[0]} {person[1]},{b.go('email', _email(r, person))},{b.go('phone', _phone(r))},"
            f"{r.choice(('DE', 'GB', 'FR', 'NL', 'US'))},{b.go('iban', _iban(r))},2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        )
    text = "pandas.read_csv chokes on this export (ParserError: Expected 7 fields in line 4, saw 8):\n\n" + "\n".join(
        rows
    )
    return b.paste("csv_customer_pii", text + "\n")


def payments_debug_rows(r: random.Random) -> Paste:
    b = _Build()
    lines = []
    for _ in range(r.randint(2, 4)):
        order = b.stay(f"ord_{_alnum(r, 14)}")
        lines.append(
            f"  {{'order': '{order}', 'card_number': '{b.go('card', _card(r))}', 'exp': '{r.randint(1, 12):02d}/{r.randint(26, 31)}', "
            f"'cvc': '{r.randint(100, 999)}', 'amount': {r.randint(100, 99999) / 100:.2f}}},"
        )
    test_card = b.stay(r.choice(TEST_CARDS))
    text = (
        "Our fallback processor rejects these but Stripe test mode with "
        f"{test_card} works. Rows from the failed_charges table:\n[\n" + "\n".join(lines) + "\n]\n"
    )
    return b.paste("payments_debug_rows", text)


def support_ticket_prose(r: random.Random) -> Paste:
    b = _Build()
    person = _person(r)
    email = b.go("email", _email(r, person))
    phone = b.go("phone", _phone(r))
    card = b.go("card", _card(r))
    ticket = b.stay(f"ZD-{r.randint(100000, 999999)}")
    text = f"""Can you write a regex that pulls the callback number out of tickets like this one?

Ticket {ticket} -- "Hi, this is {person[0]}, my account is {email}. I was charged twice, card {card}.
Please call me back on {phone} after 5pm. Thanks!"
"""
    return b.paste("support_ticket_prose", text)


def hr_payroll_export(r: random.Random) -> Paste:
    b = _Build()
    rows = []
    for _ in range(r.randint(2, 4)):
        person = _person(r)
        emp = b.stay(f"E-{r.randint(10000, 99999)}")
        rows.append(
            f"{emp}\t{person[1]}, {person[0]}\t{b.go('ssn', _ssn(r))}\t{b.go('email', _email(r, person))}\t"
            f"{r.randint(52000, 185000)}"
        )
    text = (
        "Excel turns the SSN column into numbers and drops leading zeros. Tab-separated, straight from Workday:\n"
        "emp_id\tname\tssn\twork_email\tbase_salary\n" + "\n".join(rows) + "\n"
    )
    return b.paste("hr_payroll_export", text)


def sepa_payment_xml(r: random.Random) -> Paste:
    b = _Build()
    debtor, creditor = b.go("iban", _iban(r).replace(" ", "")), b.go("iban", _iban(r).replace(" ", ""))
    msg_id = b.stay(f"MSG-{_hex(r, 12).upper()}")
    name = " ".join(_person(r))
    text = f"""lxml says the document isn't valid against pain.001.001.03 -- what's wrong with this?
<CstmrCdtTrfInitn>
  <GrpHdr><MsgId>{msg_id}</MsgId><CreDtTm>2024-11-29T10:15:00</CreDtTm><NbOfTxs>1</NbOfTxs></GrpHdr>
  <PmtInf>
    <Dbtr><Nm>{_company(r).title()} GmbH</Nm></Dbtr>
    <DbtrAcct><Id><IBAN>{debtor}</IBAN></Id></DbtrAcct>
    <CdtTrfTxInf>
      <Amt><InstdAmt Ccy="EUR">{r.randint(100, 9000)}.00</InstdAmt></Amt>
      <Cdtr><Nm>{name}</Nm></Cdtr>
      <CdtrAcct><Id><IBAN>{creditor}</IBAN></Id></CdtrAcct>
    </CdtTrfTxInf>
  </PmtInf>
</CstmrCdtTrfInitn>
"""
    return b.paste("sepa_payment_xml", text)


def loan_application_json(r: random.Random) -> Paste:
    b = _Build()
    person = _person(r)
    doc = {
        "applicationId": b.stay(_uuid(r)),
        "applicant": {
            "firstName": person[0],
            "lastName": person[1],
            "ssn": b.go("ssn", _ssn(r)),
            "email": b.go("email", _email(r, person)),
            "phone": b.go("phone", _phone(r)),
        },
        "payout": {"iban": b.go("iban", _iban(r))},
        "cardOnFile": {"number": b.go("card", _card(r)), "brand": "auto"},
        "schemaVersion": b.stay(_version(r)),
    }
    text = "pydantic ValidationError: applicant.ssn -- string does not match regex. The payload we receive:\n"
    return b.paste("loan_application_json", text + json.dumps(doc, indent=2) + "\n")


def chat_bot_config(r: random.Random) -> Paste:
    b = _Build()
    slack = b.go("token", _slack_bot(r))
    discord = b.go("token", _discord_bot(r))
    telegram = b.go("token", _telegram(r))
    hook_id = str(r.randint(10**17, 2 * 10**18))
    hook = b.go("token", _s(r, B64URL, 68))
    signing = b.go("api_key", _hex(r, 32))
    text = f"""# bot/config.py -- the Discord part logs in but Slack says invalid_auth
SLACK_BOT_TOKEN = "{slack}"
SLACK_SIGNING_SECRET = "{signing}"
DISCORD_TOKEN = "{discord}"
DISCORD_ALERTS = "https://discord.com/api/webhooks/{hook_id}/{hook}"
TELEGRAM_TOKEN = "{telegram}"
COMMAND_PREFIX = "!"
GUILD_ID = {b.stay(str(r.randint(10**17, 2 * 10**18)))}
"""
    return b.paste("chat_bot_config", text)


def aws_credentials_file(r: random.Random) -> Paste:
    b = _Build()
    key_id = b.go("api_key", _aws_key_id(r))
    secret = b.go("api_key", _aws_secret(r))
    sts_id = b.go("api_key", _aws_key_id(r, "ASIA"))
    sts_secret = b.go("api_key", _aws_secret(r))
    session = b.go("token", _aws_session(r))
    account = b.stay(_digits(r, 12))
    text = f"""~/.aws/credentials (copied the example from the docs first: {b.stay(AWS_DOC_KEY_ID)} / {b.stay(AWS_DOC_SECRET)})
[default]
aws_access_key_id = {key_id}
aws_secret_access_key = {secret}

[sso-admin]
aws_access_key_id = {sts_id}
aws_secret_access_key = {sts_secret}
aws_session_token = {session}

~/.aws/config
[profile sso-admin]
role_arn = arn:aws:iam::{account}:role/OrganizationAccountAccessRole
region = eu-central-1
An error occurred (ExpiredToken) when calling the GetCallerIdentity operation
"""
    return b.paste("aws_credentials_file", text)


def gcp_service_account_json(r: random.Random) -> Paste:
    b = _Build()
    body = _wrap(_rsa_body(r))
    escaped = body.replace("\n", "\\n")
    b.go("private_key", escaped)
    project = f"{_company(r)}-{r.randint(100000, 999999)}"
    doc = {
        "type": "service_account",
        "project_id": b.stay(project),
        "private_key_id": _hex(r, 40),
        "private_key": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n",
        "client_email": f"etl-runner@{project}.iam.gserviceaccount.com",
        "client_id": _digits(r, 21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": b.stay("https://oauth2.googleapis.com/token"),
    }
    text = "google.auth.exceptions.RefreshError: invalid_grant: Invalid JWT Signature. Key file:\n" + json.dumps(
        doc, indent=2
    )
    return b.paste("gcp_service_account_json", text + "\n")


def azure_appsettings(r: random.Random) -> Paste:
    b = _Build()
    account = _company(r).replace("-", "")[:20]
    storage = b.go("api_key", _b64_bytes(r, 64))
    sb = b.go("api_key", _b64_bytes(r, 32))
    sql = b.go("connection_string_password", _password(r, "shell"))
    sig = b.go("token", _b64_bytes(r, 32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"))
    doc = {
        "Logging": {"LogLevel": {"Default": "Information"}},
        "ConnectionStrings": {
            "Storage": f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={storage};EndpointSuffix=core.windows.net",
            "ServiceBus": f"Endpoint=sb://{account}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sb}",
            "Sql": f"Server=tcp:{account}.database.windows.net,1433;Database=app;User ID=app;Password={sql};Encrypt=True;",
        },
        "ExportUrl": f"https://{account}.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2025-01-31T00:00:00Z&spr=https&sig={sig}",
        "InstanceId": b.stay(_uuid(r)),
    }
    text = "appsettings.Production.json -- the blob client throws AuthenticationFailed:\n" + json.dumps(doc, indent=2)
    return b.paste("azure_appsettings", text + "\n")


def provider_dotenv(r: random.Random) -> Paste:
    b = _Build()
    lines = []
    for name in r.sample(list(PROVIDERS), r.randint(9, 13)):
        _, value = _provider(r, b, name)
        style = r.choice(("{n}={v}", 'export {n}="{v}"', "{n}='{v}'", "{n} = {v}"))
        lines.append(style.format(n=name, v=value))
    lines.insert(r.randint(0, len(lines)), f"APP_URL={b.stay('http://localhost:3000')}")
    example = r.choice(("sk-...", "sk-proj-...your key...", "<YOUR_API_KEY>", "YOUR_API_KEY_HERE"))
    lines.insert(r.randint(0, len(lines)), f"# OPENAI_API_KEY={b.stay(example)}")
    text = "my .env.local, dotenv loads it but process.env.X is undefined in next.config.js:\n" + "\n".join(lines)
    return b.paste("provider_dotenv", text + "\n")


def secrets_manager_json(r: random.Random) -> Paste:
    """A secret manager's answer: the secrets sit JSON-encoded inside another JSON string."""
    b = _Build()
    secret = {name: _provider(r, b, name)[1] for name in r.sample(list(PROVIDERS), r.randint(8, 12))}
    pw = b.go("connection_string_password", _password(r, "url"))
    secret["DATABASE_URL"] = f"postgres://api:{pw}@api-prod.cluster-{_hex(r, 12)}.eu-west-1.rds.amazonaws.com:5432/api"
    name = f"prod/{_company(r)}/api"
    answer = {
        "ARN": b.stay(f"arn:aws:secretsmanager:eu-west-1:{_digits(r, 12)}:secret:{name}-{_alnum(r, 6)}"),
        "Name": name,
        "VersionId": b.stay(_uuid(r)),
        "SecretString": json.dumps(secret),
        "VersionStages": ["AWSCURRENT"],
        "CreatedDate": "2024-11-28T09:14:51.512000+00:00",
    }
    text = "$ aws secretsmanager get-secret-value --secret-id " + name + "\n" + json.dumps(answer, indent=4)
    text += "\nThe Lambda reads it with json.loads(SecretString) but DATABASE_URL comes back None -- why?\n"
    return b.paste("secrets_manager_json", text)


def docker_compose_env(r: random.Random) -> Paste:
    b = _Build()
    pg = b.go("password", _password(r))
    minio = b.go("password", _password(r))
    grafana = b.go("password", _password(r))
    interp = b.stay("${REDIS_PASSWORD:-}")
    pg_image = b.stay(f"postgres:{r.randint(13, 17)}.{r.randint(1, 9)}")
    text = f"""services:
  db:
    image: {pg_image}
    environment:
      - POSTGRES_USER=app
      - POSTGRES_PASSWORD={pg}
  minio:
    image: minio/minio:RELEASE.2024-11-07T00-52-20Z
    environment:
      MINIO_ROOT_USER: admin
      MINIO_ROOT_PASSWORD: {_q(minio)}
  redis:
    image: redis:7.4
    command: ["redis-server", "--requirepass", "{interp}"]
  grafana:
    image: grafana/grafana:11.3.0
    environment:
      GF_SECURITY_ADMIN_PASSWORD: {_q(grafana)}
"""
    return b.paste("docker_compose_env", text)


def pem_keys_paste(r: random.Random) -> Paste:
    b = _Build()
    block, body = _private_pem(r)
    b.go("private_key", body)
    cert, cert_body = _certificate(r)
    b.stay(cert_body)
    pub = b.stay(_ssh_public(r))
    text = f"""nginx: [emerg] SSL_CTX_use_PrivateKey failed (key values mismatch). Here's the key and cert:

{block}

{cert}

and the deploy key on the server's authorized_keys: ssh-ed25519 {pub} deploy
"""
    return b.paste("pem_keys_paste", text)


def putty_ppk(r: random.Random) -> Paste:
    b = _Build()
    public = _s(r, B64, 372) + "="
    private = _s(r, B64, 1100) + "="
    pub_lines, priv_lines = _wrap(public), _wrap(private)
    b.go("private_key", priv_lines)
    b.stay(pub_lines)
    mac = b.stay(_hex(r, 64))
    text = f"""WinSCP won't take this key ("Unable to use key file ... (PuTTY key format too new)"):
PuTTY-User-Key-File-3: ssh-rsa
Encryption: none
Comment: rsa-key-20241130
Public-Lines: {len(pub_lines.splitlines())}
{pub_lines}
Private-Lines: {len(priv_lines.splitlines())}
{priv_lines}
Private-MAC: {mac}
"""
    return b.paste("putty_ppk", text)


def cli_flag_secrets(r: random.Random) -> Paste:
    b = _Build()
    pypi = b.go("token", _pypi(r))
    docker_pw = b.go("password", _password(r, "shell"))
    helm_pw = b.go("password", _password(r, "shell"))
    dump_pw = b.go("password", _password(r, "shell"))
    client_secret = b.go("api_key", _s(r, ALNUM + "~._-", 40))
    vault = b.go("token", _vault(r))
    _, supabase = _provider(r, b, "SUPABASE_ACCESS_TOKEN")
    tenant = b.stay(_uuid(r))
    text = f"""Commands from our release runbook, the helm one fails with "INSTALLATION FAILED: Unauthorized":
twine upload --repository pypi -u __token__ -p {pypi} dist/*
docker login registry.{_domain(r)} -u ci --password {docker_pw}
helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={helm_pw} --version {_version(r)}
mysqldump --user=backup --password={dump_pw} --single-transaction shop > shop.sql
az login --service-principal -u {_uuid(r)} --password={client_secret} --tenant {tenant}
vault login {vault}
supabase login --token {supabase}
"""
    return b.paste("cli_flag_secrets", text)


def browser_storage_dump(r: random.Random) -> Paste:
    b = _Build()
    email = b.go("email", _email(r))
    access = b.go("token", _jwt(r, email))
    refresh = b.go("token", _s(r, B64URL, r.randint(120, 200)))
    doc = {
        "auth": {"accessToken": access, "refreshToken": refresh, "user": {"id": b.stay(_uuid(r)), "email": email}},
        "theme": "dark",
        "featureFlags": {"newCheckout": True},
        "appVersion": b.stay(_version(r)),
    }
    text = "localStorage after login (JSON.stringify), the refresh loop never stops:\n" + json.dumps(doc)
    return b.paste("browser_storage_dump", text + "\n")


def git_config_remotes(r: random.Random) -> Paste:
    b = _Build()
    gl = b.go("token", _gitlab(r))
    gh = b.go("token", "ghs_" + _alnum(r, 36))
    person = _person(r)
    email = b.go("email", _email(r, person))
    ssh_remote = b.stay(f"git@github.com:{_company(r)}/infra.git")
    text = f"""$ cat .git/config
[core]
\trepositoryformatversion = 0
[remote "origin"]
\turl = https://oauth2:{gl}@gitlab.com/{_company(r)}/backend.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[remote "mirror"]
\turl = https://x-access-token:{gh}@github.com/{_company(r)}/backend.git
[remote "infra"]
\turl = {ssh_remote}
[user]
\tname = {person[0]} {person[1]}
\temail = {email}
$ git push mirror
remote: Permission to backend.git denied.
"""
    return b.paste("git_config_remotes", text)


def netscape_cookies(r: random.Random) -> Paste:
    b = _Build()
    session = b.go("token", _session_token(r))
    remember = b.go("token", _hex(r, 64))
    domain = _domain(r)
    text = f"""yt-dlp --cookies cookies.txt fails with HTTP 403; my cookies.txt:
# Netscape HTTP Cookie File
.{domain}\tTRUE\t/\tTRUE\t1767225600\t_session_id\t{session}
.{domain}\tTRUE\t/\tTRUE\t1767225600\tremember_token\t{remember}
.{domain}\tTRUE\t/\tFALSE\t1767225600\tlocale\ten-GB
"""
    return b.paste("netscape_cookies", text)


def sms_gateway_log(r: random.Random) -> Paste:
    b = _Build()
    twilio = b.go("token", _hex(r, 32))
    lines = []
    for _ in range(r.randint(2, 4)):
        sid = b.stay("SM" + _hex(r, 32))
        lines.append(f"{sid} to={b.go('phone', _phone(r))} status=undelivered error_code=30008")
    text = f"TWILIO_AUTH_TOKEN={twilio}\nWhy are these undelivered? From our worker log:\n" + "\n".join(lines) + "\n"
    return b.paste("sms_gateway_log", text)


def pgpass_mycnf(r: random.Random) -> Paste:
    b = _Build()
    pg = [b.go("password", _password(r, "shell")) for _ in range(2)]
    my = b.go("password", _password(r))
    text = f"""psql still prompts for a password, are these files right? (chmod 600 on both)
$ cat ~/.pgpass
pg-prod.internal:5432:billing:billing_ro:{pg[0]}
localhost:5432:*:postgres:{pg[1]}
$ cat ~/.my.cnf
[client]
user=root
password="{my}"
host=127.0.0.1
"""
    return b.paste("pgpass_mycnf", text)


def jupyter_cell_json(r: random.Random) -> Paste:
    b = _Build()
    openai, hf = _openai(r), _hf(r)
    _, databricks = _provider(r, b, "DATABRICKS_TOKEN")
    cell = {
        "cell_type": "code",
        "execution_count": r.randint(3, 40),
        "id": b.stay(_hex(r, 8)),
        "metadata": {},
        "outputs": [],
        "source": [
            "import os\n",
            f'os.environ["OPENAI_API_KEY"] = "{b.go("api_key", openai)}"\n',
            f'login(token="{b.go("token", hf)}")\n',
            f'w = WorkspaceClient(host="https://adb-{_digits(r, 16)}.7.azuredatabricks.net", token="{databricks}")\n',
            'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")',
        ],
    }
    text = "My notebook won't open after a crash (Unreadable Notebook). The cell JSON:\n" + json.dumps(cell, indent=1)
    return b.paste("jupyter_cell_json", text + "\n")


def maven_nuget_xml(r: random.Random) -> Paste:
    b = _Build()
    mvn = b.go("password", _password(r))
    nuget = b.go("token", _s(r, string.ascii_lowercase + string.digits, 52))
    encrypted = "{" + _b64_bytes(r, 24) + "}"  # mvn --encrypt-password output: opaque, but not harmless
    text = f"""~/.m2/settings.xml
<settings>
  <servers>
    <server>
      <id>internal-releases</id>
      <username>deployer</username>
      <password>{mvn}</password>
    </server>
    <server>
      <id>central</id>
      <password>{encrypted}</password>
    </server>
  </servers>
</settings>

NuGet.Config
<packageSourceCredentials>
  <AzureArtifacts>
    <add key="Username" value="build" />
    <add key="ClearTextPassword" value="{nuget}" />
  </AzureArtifacts>
</packageSourceCredentials>
"""
    return b.paste("maven_nuget_xml", text)


def docker_config_json(r: random.Random) -> Paste:
    b = _Build()
    user, pw = r.choice(("ci", "deploy", "_json_key")), _password(r)
    auth = b.go("password", base64.b64encode(f"{user}:{pw}".encode()).decode())
    gh = b.go("token", _github(r))
    doc = {
        "auths": {
            "registry.gitlab.com": {"auth": auth},
            "ghcr.io": {"username": "build-bot", "password": gh},
            "https://index.docker.io/v1/": {},
        },
        "credsStore": "desktop",
        "currentContext": "default",
    }
    text = "docker pull says 'denied: access forbidden' for ghcr.io; ~/.docker/config.json:\n" + json.dumps(
        doc, indent=2
    )
    return b.paste("docker_config_json", text + "\n")


def email_headers(r: random.Random) -> Paste:
    b = _Build()
    sender, to, cc = _person(r), _person(r), _person(r)
    from_email, to_email, cc_email = (b.go("email", _email(r, p)) for p in (sender, to, cc))
    phone = b.go("phone", _phone(r))
    message_id = f"<{_uuid(r)}@mail.gmail.com>"
    text = f"""Our Postfix bounces this with 550 5.7.1 -- raw message below:
Return-Path: <{from_email}>
Message-ID: {message_id}
From: {sender[0]} {sender[1]} <{from_email}>
To: {to[0]} {to[1]} <{to_email}>
Cc: {cc_email}
Subject: Re: invoice {r.randint(1000, 9999)}
MIME-Version: 1.0
Content-Type: text/plain; charset="UTF-8"

Thanks, I'll check with accounts.
--
{sender[0]} {sender[1]} | Finance
Mobile: {phone}
"""
    return b.paste("email_headers", text)


SECRET_NAMES = {
    "password": (
        "password",
        "passwd",
        "pwd",
        "db_pass",
        "PG_PASS",
        "adminPassword",
        "smtp-password",
        "MasterPassword",
    ),
    "api_key": ("api_key", "apiKey", "API_SECRET", "client_secret", "secret_key", "signing-key", "encryptionKey"),
    "token": ("access_token", "authToken", "AUTH_TOKEN", "bearer_token", "refresh-token", "x_auth_token"),
}
ASSIGNMENT_SYNTAX = (
    '{n} = "{v}"',  # TOML, HCL, Python
    "{n}: {v}",  # YAML
    "export {n}='{v}'",  # shell
    '"{n}": "{v}",',  # JSON
    "{n}={v}",  # dotenv, INI, properties
    '    {n}: "{v}",',  # JS/TS object, Go struct literal
    "'{n}' => '{v}',",  # PHP array
    '{n} := "{v}"',  # Go
    'var {n} = "{v}";',  # C#, JS
    "set {n}={v}",  # cmd.exe
    '{n} <- "{v}"',  # R
    "--{n}={v}",  # CLI flag
)


def named_assignments_mixed(r: random.Random) -> Paste:
    """Assignments in many syntaxes with values that have no provider prefix: only the name says it is secret."""
    b = _Build()
    lines = []
    for syntax in r.sample(ASSIGNMENT_SYNTAX, 5):
        kind = r.choice(list(SECRET_NAMES))
        value = _password(r, "shell") if kind == "password" else _s(r, B64URL, r.randint(24, 48))
        lines.append(syntax.format(n=r.choice(SECRET_NAMES[kind]), v=b.go(kind, value)))
    lines.insert(r.randint(0, len(lines)), b.stay(f"timeout_seconds = {r.randint(31, 299)}"))
    text = "Collected from our services while auditing config loading, which of these get picked up?\n" + "\n".join(
        lines
    )
    return b.paste("named_assignments_mixed", text + "\n")


def chat_prose_secrets(r: random.Random) -> Paste:
    """Credentials typed into a sentence, not an assignment."""
    b = _Build()
    person = _person(r)
    pw = b.go("password", _password(r))
    admin_pw = b.go("password", _password(r, "shell"))
    key = b.go("api_key", _anthropic(r) if r.random() < 0.5 else _openai(r))
    templates = (
        f"My colleague {person[0]} {person[1]} set up our payroll DB; her password is {pw}. How do I connect with psql?",
        f"The staging database password is `{pw}` (user: staging). Connection keeps timing out from the VPN.",
        f"I reset it to {pw} but Grafana still says invalid username or password.",
    )
    text = (
        r.choice(templates)
        + f"\nAlso the admin panel login is admin / {admin_pw} if you need to check the logs."
        + f"\nMy key is {key} -- is it the right one for the batch API?\n"
    )
    return b.paste("chat_prose_secrets", text)


def graphql_login_body(r: random.Random) -> Paste:
    b = _Build()
    email = b.go("email", _email(r))
    pw = b.go("password", _password(r))
    signature = b.stay("mutation Login($email: String!, $password: String!)")
    body = {
        "operationName": "Login",
        "query": signature + " { login(email: $email, password: $password) { accessToken } }",
        "variables": {"email": email, "password": pw},
    }
    text = "Apollo returns BAD_USER_INPUT for this request body from the network tab:\n" + json.dumps(body, indent=2)
    return b.paste("graphql_login_body", text + "\n")


def sql_statements(r: random.Random) -> Paste:
    b = _Build()
    role_pw = b.go("password", _password(r))
    mysql_pw = b.go("password", _password(r))
    rows = []
    for _ in range(r.randint(2, 3)):
        person = _person(r)
        rows.append(
            f"  ('{person[0]} {person[1]}', '{b.go('email', _email(r, person))}', '{b.go('phone', _phone(r))}', now())"
        )
    text = (
        f"""Migration fails on the second statement (syntax error at or near "IDENTIFIED"):
CREATE ROLE reporting WITH LOGIN PASSWORD '{role_pw}';
CREATE USER 'etl'@'%' IDENTIFIED BY '{mysql_pw}';
INSERT INTO customers (full_name, email, phone, created_at) VALUES
"""
        + ",\n".join(rows)
        + ";\n"
    )
    return b.paste("sql_statements", text)


def nginx_conf(r: random.Random) -> Paste:
    b = _Build()
    key = b.go("api_key", _hex(r, 40))
    basic = b.go("password", base64.b64encode(f"svc:{_password(r, 'url')}".encode()).decode())
    htpasswd = b.stay("/etc/nginx/.htpasswd")
    text = f"""server {{
    listen 443 ssl;
    server_name api.{_domain(r)};
    auth_basic "staff";
    auth_basic_user_file {htpasswd};

    location /upstream/ {{
        proxy_pass https://partner.{_domain(r)}/;
        proxy_set_header X-Api-Key {key};
        proxy_set_header Authorization "Basic {basic}";
        proxy_set_header X-Request-Id $request_id;
    }}
}}
# 502 from the partner since yesterday; curl with the same headers works
"""
    return b.paste("nginx_conf", text)


def dockerfile_env(r: random.Random) -> Paste:
    b = _Build()
    sentry = b.go("token", "sntrys_" + _s(r, B64URL, 120))
    mapbox = b.go("api_key", "sk.eyJ1Ijoi" + _s(r, B64URL, 60) + "." + _s(r, B64URL, 22))
    base = b.stay(f"node:{r.choice((18, 20, 22))}-alpine@{_digest(r)}")
    text = f"""FROM {base} AS build
ARG NPM_TOKEN
WORKDIR /app
COPY package*.json ./
RUN echo "//registry.npmjs.org/:_authToken=${{NPM_TOKEN}}" > .npmrc && npm ci && rm .npmrc
ENV SENTRY_AUTH_TOKEN={sentry}
ENV MAPBOX_SECRET_TOKEN={mapbox}
RUN npm run build
# the sentry upload step says "Invalid token", but it works locally
"""
    b.stay("${NPM_TOKEN}")
    return b.paste("dockerfile_env", text)


def crontab_lines(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    mail = b.go("email", _email(r))
    pg = b.go("password", _password(r, "shell"))
    text = f"""$ crontab -l
MAILTO={mail}
SHELL=/bin/bash
0 3 * * * PGPASSWORD={pg} pg_dump -h db.internal -U backup shop | gzip > /home/{user}/backups/shop-$(date +\\%F).sql.gz
*/15 * * * * /home/{user}/bin/sync.sh >> /home/{user}/logs/sync.log 2>&1
The backup job runs but the file is 20 bytes.
"""
    return b.paste("crontab_lines", text)


def rust_go_panic_paths(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    if r.random() < 0.5:
        home = r.choice((f"/home/{user}", f"/Users/{user}"))
        version = b.stay(f"tokio-1.{r.randint(30, 41)}.{r.randint(0, 9)}")
        text = f"""thread 'main' panicked at {home}/.cargo/registry/src/index.crates.io-6f17d22bba15001f/{version}/src/runtime/blocking/shutdown.rs:51:21:
Cannot drop a runtime in a context where blocking is not allowed.
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
error: process didn't exit successfully: `{home}/code/indexer/target/debug/indexer` (exit status: 101)
"""
    else:
        home = r.choice((f"/home/{user}", f"/Users/{user}", f"C:/Users/{user}"))
        version = b.stay(f"v1.{r.randint(8, 12)}.{r.randint(0, 9)}")
        text = f"""panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x1029a3c]

goroutine 1 [running]:
github.com/jackc/pgx/v5/pgxpool.(*Pool).Acquire(0x0, {{0x102c1e7a8, 0x14000126000}})
\t{home}/go/pkg/mod/github.com/jackc/pgx/v5@{version}/pgxpool/pool.go:512 +0x2c
main.main()
\t{home}/src/ledger/main.go:41 +0x1a4
exit status 2
"""
    return b.paste("rust_go_panic_paths", text)


def vscode_launch_json(r: random.Random) -> Paste:
    b = _Build()
    user = b.go("home_path_user", _username(r))
    token = b.go("token", _s(r, B64URL, 40))
    pw = b.go("password", _password(r))
    config = {
        "version": "0.2.0",
        "configurations": [
            {
                "name": "API (debug)",
                "type": "debugpy",
                "request": "launch",
                "module": "uvicorn",
                "args": ["app.main:app", "--reload"],
                "cwd": b.stay("${workspaceFolder}"),
                "python": f"C:\\Users\\{user}\\.venvs\\api\\Scripts\\python.exe",
                "env": {"API_TOKEN": token, "DB_PASSWORD": pw, "LOG_LEVEL": "debug"},
            }
        ],
    }
    text = "Breakpoints never hit with this launch.json:\n" + json.dumps(config, indent=4)
    return b.paste("vscode_launch_json", text + "\n")


# --- shapes carrying only near-misses ---------------------------------------------------------------------------


def package_lock_excerpt(r: random.Random) -> Paste:
    b = _Build()
    entries = []
    for name in r.sample(("lodash", "axios", "zod", "react-dom", "@types/node", "esbuild", "undici", "semver"), 3):
        version = b.stay(_version(r))
        integrity = b.stay(_sri(r))
        base = name.split("/")[-1]
        entries.append(
            f'    "node_modules/{name}": {{\n      "version": "{version}",\n'
            f'      "resolved": "https://registry.npmjs.org/{name}/-/{base}-{version}.tgz",\n'
            f'      "integrity": "{integrity}"\n    }}'
        )
    text = (
        "npm ci fails with EINTEGRITY on one of these, package-lock.json excerpt:\n"
        '{\n  "lockfileVersion": 3,\n  "packages": {\n' + ",\n".join(entries) + "\n  }\n}\n"
    )
    return b.paste("package_lock_excerpt", text)


def python_go_lock_hashes(r: random.Random) -> Paste:
    b = _Build()
    req = [f"{name}=={_version(r)} \\\n    --hash=sha256:{b.stay(_hex(r, 64))}" for name in ("requests", "urllib3")]
    gosum = [
        f"github.com/{mod} v{_version(r)} h1:{b.stay(_b64_bytes(r, 32))}"
        for mod in ("stretchr/testify", "google/uuid")
    ]
    content_hash = b.stay(_hex(r, 64))
    text = (
        "pip install --require-hashes -r requirements.txt says THESE PACKAGES DO NOT MATCH THE HASHES:\n"
        + "\n".join(req)
        + f'\n\npoetry.lock: content-hash = "{content_hash}"\n\ngo.sum:\n'
        + "\n".join(gosum)
        + "\n"
    )
    return b.paste("python_go_lock_hashes", text)


def readme_placeholders(r: random.Random) -> Paste:
    b = _Build()
    token_ph = b.stay(r.choice(("<your-token>", "YOUR_API_KEY_HERE", "<YOUR_API_KEY>")))
    key_ph = b.stay(r.choice(("sk-...", "sk-proj-...your key...", "sk-ant-...")))
    gh_ph = b.stay("ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX")
    url = b.stay("postgres://USER:PASSWORD@HOST:5432/DBNAME")
    redis = b.stay("redis://:<password>@localhost:6379/0")
    mail = b.stay(_example_email(r))
    text = f"""Is this README section clear enough for new contributors?

## Configuration
1. Create an API key and export it: `export OPENAI_API_KEY="{key_ph}"`
2. For the GitHub sync, a classic token with `repo` scope: `GITHUB_TOKEN={gh_ph}`
3. Set `DATABASE_URL={url}` and `REDIS_URL={redis}`.
4. AWS (see the AWS docs): `aws_access_key_id = {b.stay(AWS_DOC_KEY_ID)}`,
   `aws_secret_access_key = {b.stay(AWS_DOC_SECRET)}`
5. Webhook auth header: `Authorization: Bearer {token_ph}`
6. Questions: {mail}
"""
    return b.paste("readme_placeholders", text)


def k8s_manifest_refs(r: random.Random) -> Paste:
    b = _Build()
    digest = b.stay(_digest(r))
    helm_ref = b.stay("{{ .Values.db.password }}")
    env_ref = b.stay("${DB_PASSWORD}")
    uid = b.stay(_uuid(r))
    text = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  uid: {uid}
spec:
  template:
    spec:
      containers:
        - name: api
          image: ghcr.io/{_company(r)}/api@{digest}
          env:
            - name: DB_PASSWORD
              valueFrom:
                secretKeyRef: {{name: api-secrets, key: db-password}}
            - name: DB_URL
              value: postgresql://api:$(DB_PASSWORD)@db:5432/api
            - name: LEGACY_PASSWORD
              value: "{helm_ref}"
          args: ["--db-password", "{env_ref}"]
# kubectl apply: error validating data: unknown field "secretKeyRef"
"""
    return b.paste("k8s_manifest_refs", text)


def git_log_output(r: random.Random) -> Paste:
    b = _Build()
    commits = []
    for _ in range(3):
        sha = b.stay(_sha(r))
        change = b.stay("I" + _hex(r, 40))
        commits.append(
            f"commit {sha}\nAuthor: ci-bot <{b.stay(_example_email(r))}>\nDate:   Fri Nov 29 1{r.randint(0, 9)}:"
            f"{r.randint(10, 59)}:02 2024 +0000\n\n    {r.choice(('Bump deps', 'Fix flaky retry test', 'Refactor auth middleware'))}\n\n"
            f"    Change-Id: {change}\n"
        )
    text = "git bisect points at one of these, which one touches auth?\n" + "\n".join(commits)
    return b.paste("git_log_output", text)


def ci_secret_refs(r: random.Random) -> Paste:
    b = _Build()
    pinned = b.stay(_sha(r))
    refs = [b.stay(v) for v in ("${{ secrets.NPM_TOKEN }}", "${{ secrets.AWS_SECRET_ACCESS_KEY }}", "$CI_JOB_TOKEN")]
    text = f"""# .github/workflows/deploy.yml -- the AWS step says "Credentials could not be loaded"
jobs:
  deploy:
    runs-on: ubuntu-24.04
    permissions: {{id-token: write, contents: read}}
    steps:
      - uses: aws-actions/configure-aws-credentials@{pinned}
        with:
          aws-access-key-id: ${{{{ secrets.AWS_ACCESS_KEY_ID }}}}
          aws-secret-access-key: {refs[1]}
          aws-region: us-east-1
      - run: npm publish
        env:
          NODE_AUTH_TOKEN: {refs[0]}
# .gitlab-ci.yml
pull-deps:
  script:
    - git clone https://gitlab-ci-token:{refs[2]}@gitlab.com/group/deps.git
"""
    return b.paste("ci_secret_refs", text)


def stripe_test_fixtures(r: random.Random) -> Paste:
    b = _Build()
    cards = [b.stay(c) for c in r.sample(TEST_CARDS, 3)]
    ids = [b.stay(f"{p}_{_alnum(r, 24)}") for p in ("pi", "cus", "ch")]
    text = f"""Writing e2e tests for checkout; Stripe test mode fixtures:
- default: {cards[0]} (any future expiry, any CVC)
- also from the testing docs: {cards[1]} and {cards[2]}
The webhook fixture has payment_intent {ids[0]} for customer {ids[1]}, charge {ids[2]}.
Why does `stripe trigger payment_intent.succeeded` not hit my local endpoint?
"""
    return b.paste("stripe_test_fixtures", text)


def terraform_plan_output(r: random.Random) -> Paste:
    b = _Build()
    account = b.stay(_digits(r, 12))
    instance = b.stay("i-0" + _hex(r, 16))
    sg = b.stay("sg-0" + _hex(r, 16))
    text = f"""Terraform will perform the following actions:

  # aws_db_instance.main must be replaced
-/+ resource "aws_db_instance" "main" {{
      ~ arn                 = "arn:aws:rds:eu-west-1:{account}:db:main" -> (known after apply)
      ~ password            = (sensitive value)
        vpc_security_group_ids = ["{sg}"]
      ~ engine_version      = "15.4" -> "16.3" # forces replacement
    }}

  # aws_instance.bastion will be updated in-place
  ~ resource "aws_instance" "bastion" {{
        id = "{instance}"
    }}
Plan: 1 to add, 1 to change, 1 to destroy.
"""
    return b.paste("terraform_plan_output", text)


def docker_build_log(r: random.Random) -> Paste:
    b = _Build()
    layers = [b.stay(_digest(r)) for _ in range(2)]
    py = b.stay(f"3.{r.randint(10, 13)}.{r.randint(0, 9)}")
    text = f"""#5 [base 1/4] FROM docker.io/library/python:{py}-slim@{layers[0]}
#5 CACHED
#8 [build 3/4] RUN pip install --no-cache-dir -r requirements.txt
#8 12.41 ERROR: Could not find a version that satisfies the requirement torch==2.5.1+cu124
#8 ERROR: process "/bin/sh -c pip install --no-cache-dir -r requirements.txt" did not complete successfully: exit code: 1
------
 > [build 3/4] RUN pip install --no-cache-dir -r requirements.txt:
#8 12.40 Looking in indexes: https://pypi.org/simple
------
writing image {layers[1]} done
"""
    return b.paste("docker_build_log", text)


def pytest_output(r: random.Random) -> Paste:
    b = _Build()
    ts = b.stay(str(1733000000000 + r.randint(0, 10**9)))
    port = r.choice((8000, 8080, 5000))
    text = f"""============================= test session starts ==============================
platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0
rootdir: /app
collected 48 items

tests/test_api.py ......F.                                               [ 16%]

=================================== FAILURES ===================================
____________________________ test_token_refresh ________________________________
/usr/local/lib/python3.12/site-packages/httpx/_client.py:1014: in send
    raise exc
E   httpx.ConnectError: [Errno 111] Connection refused (http://127.0.0.1:{port}/auth/refresh)
E   assert response.json()["expires_at"] == {ts}
=========================== short test summary info ============================
FAILED tests/test_api.py::test_token_refresh - httpx.ConnectError
"""
    return b.paste("pytest_output", text)


def openapi_security_spec(r: random.Random) -> Paste:
    b = _Build()
    example_jwt = b.stay("Bearer <token>")
    server = b.stay(r.choice(("https://api.example.com/v1", "https://sandbox.example.org")))
    text = f"""Does this OpenAPI 3.1 fragment declare the API key header correctly? Swagger UI doesn't send it.
servers:
  - url: {server}
components:
  securitySchemes:
    ApiKeyAuth:
      type: apiKey
      in: header
      name: X-API-Key
      description: "Your key from the dashboard, e.g. `{b.stay("YOUR_API_KEY_HERE")}`"
    BearerAuth:
      type: http
      scheme: bearer
      bearerFormat: JWT
      description: "Send `Authorization: {example_jwt}`"
  schemas:
    Customer:
      properties:
        email: {{type: string, format: email, example: {b.stay(_example_email(r))}}}
        id: {{type: string, format: uuid, example: {b.stay(_uuid(r))}}}
"""
    return b.paste("openapi_security_spec", text)


def secret_named_settings(r: random.Random) -> Paste:
    """Settings whose names sound secret and whose values are not: lengths, lifetimes, paths, names, algorithms."""
    b = _Build()
    kms = b.stay(f"arn:aws:kms:eu-west-1:{_digits(r, 12)}:key/{_uuid(r)}")
    lines = [
        b.stay(f"PASSWORD_MIN_LENGTH={r.randint(10, 16)}"),
        b.stay(f"password_reset_timeout: {r.choice((3600, 86400, 172800))}"),
        b.stay(f"token_ttl_seconds = {r.choice((900, 1800, 3600))}"),
        b.stay("POSTGRES_PASSWORD_FILE=/run/secrets/pg_password"),
        b.stay("api_key_header: X-API-Key"),
        b.stay(f'secret_name = "prod/{_company(r)}/database"'),
        b.stay("ssh_key_path: ~/.ssh/id_ed25519"),
        b.stay('JWT_ALGORITHM = "RS256"'),
        b.stay("token_endpoint: https://login.example.com/oauth2/v2.0/token"),
        f"KMS_KEY_ARN={kms}",
    ]
    r.shuffle(lines)
    text = "Which of these belong in the config map and which in the Secret? From our settings module:\n" + "\n".join(
        lines
    )
    return b.paste("secret_named_settings", text + "\n")


def code_reading_secrets(r: random.Random) -> Paste:
    """Code that handles secrets by name without holding any."""
    b = _Build()
    kept = [
        b.stay('password = os.environ["DB_PASSWORD"]'),
        b.stay("api_key = settings.STRIPE_SECRET_KEY"),
        b.stay('token = request.headers.get("Authorization", "").removeprefix("Bearer ")'),
        b.stay('secret = getpass.getpass("Vault password: ")'),
        b.stay("conn = psycopg.connect(host=host, user=user, password=password)"),
        b.stay("client = OpenAI(api_key=api_key)"),
    ]
    r.shuffle(kept)
    body = "\n    ".join(kept)
    text = f"""mypy says "str | None" is not "str" on the connect line, how do I narrow it properly?

def connect(host: str, user: str) -> None:
    {body}
"""
    return b.paste("code_reading_secrets", text)


def sql_schema_migration(r: random.Random) -> Paste:
    b = _Build()
    rev = b.stay(_hex(r, 12))
    text = f"""Alembic autogenerate keeps recreating this table (revision {rev}):
CREATE TABLE api_keys (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_email text NOT NULL REFERENCES users(email),
    key_prefix char(8) NOT NULL,
    key_hash bytea NOT NULL,
    password_changed_at timestamptz,
    token_expires_at timestamptz DEFAULT now() + interval '{r.choice((30, 60, 90))} days'
);
CREATE UNIQUE INDEX api_keys_prefix_idx ON api_keys (key_prefix);
"""
    b.stay("key_hash bytea NOT NULL")
    b.stay("user_email text NOT NULL REFERENCES users(email)")
    return b.paste("sql_schema_migration", text)


def env_example_file(r: random.Random) -> Paste:
    b = _Build()
    values = [
        b.stay(r.choice(("sk_live_...", "<your-stripe-key>", "REPLACE_ME"))),
        b.stay(r.choice(("SG.xxxxxxxx", "YOUR_API_KEY_HERE", "<your-sendgrid-key>"))),
        b.stay(r.choice(("change-me-to-a-long-random-string", "<random 64 hex chars>", "********"))),
    ]
    mail = b.stay(_example_email(r))
    text = f"""# .env.example -- copy to .env and fill in
APP_ENV=local
APP_URL=http://localhost:8000
DB_PASSWORD=
STRIPE_SECRET_KEY={values[0]}
SENDGRID_API_KEY={values[1]}
JWT_SECRET={values[2]}
MAIL_FROM={mail}
SENTRY_DSN=
"""
    return b.paste("env_example_file", text)


_CARRYING: tuple[Callable[[random.Random], Paste], ...] = (
    terraform_tfvars,
    ansible_group_vars,
    github_actions_env,
    helm_values,
    systemd_unit,
    java_properties,
    spring_application_yml,
    django_settings,
    rails_database_yml,
    php_env_wpconfig,
    sdk_init_snippets,
    python_dict_literal,
    json_log_auth_headers,
    http_request_dump,
    curl_commands,
    db_cli_history,
    connection_uris,
    markdown_creds_table,
    k8s_secret,
    kubeconfig,
    package_registry_configs,
    powershell_session,
    windows_wsl_traceback,
    shell_prompt_session,
    node_stack_trace,
    csv_customer_pii,
    payments_debug_rows,
    support_ticket_prose,
    hr_payroll_export,
    sepa_payment_xml,
    chat_bot_config,
    aws_credentials_file,
    gcp_service_account_json,
    azure_appsettings,
    provider_dotenv,
    docker_compose_env,
    pem_keys_paste,
    putty_ppk,
    cli_flag_secrets,
    browser_storage_dump,
    git_config_remotes,
    netscape_cookies,
    sms_gateway_log,
    pgpass_mycnf,
    jupyter_cell_json,
    maven_nuget_xml,
    docker_config_json,
    email_headers,
    named_assignments_mixed,
    chat_prose_secrets,
    secrets_manager_json,
    graphql_login_body,
    sql_statements,
    nginx_conf,
    dockerfile_env,
    crontab_lines,
    rust_go_panic_paths,
    vscode_launch_json,
    loan_application_json,
)
NEAR_MISS_ONLY: tuple[Callable[[random.Random], Paste], ...] = (
    package_lock_excerpt,
    python_go_lock_hashes,
    readme_placeholders,
    k8s_manifest_refs,
    git_log_output,
    ci_secret_refs,
    stripe_test_fixtures,
    terraform_plan_output,
    docker_build_log,
    pytest_output,
    env_example_file,
    openapi_security_spec,
    secret_named_settings,
    code_reading_secrets,
    sql_schema_migration,
)


def _interleaved() -> list[Callable[[random.Random], Paste]]:
    """Every fifth shape carries only near-misses, so any prefix of the cycle keeps about a fifth of them."""
    carrying, near = list(_CARRYING), list(NEAR_MISS_ONLY)
    order: list[Callable[[random.Random], Paste]] = []
    while carrying or near:
        order += [carrying.pop(0) for _ in range(min(4, len(carrying)))]
        if near:
            order.append(near.pop(0))
    return order


SHAPES: dict[str, Callable[[random.Random], Paste]] = {fn.__name__: fn for fn in _interleaved()}


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    """``n`` pastes cycling through SHAPES in order; each paste has its own generator seeded from (seed, index),
    so the same arguments always give the same corpus."""
    names = list(SHAPES)
    return [SHAPES[names[i % len(names)]](random.Random(seed * 1_000_003 + i)) for i in range(n)]


def _summary(pastes: list[Paste]) -> dict:
    from collections import Counter

    kinds = Counter(kind for p in pastes for kind, _ in p.must_go)
    return {
        "pastes": len(pastes),
        "shapes": len({p.shape for p in pastes}),
        "near_miss_only": sum(1 for p in pastes if not p.must_go),
        "must_go": dict(sorted(kinds.items())),
        "must_go_total": sum(kinds.values()),
        "must_stay_total": sum(len(p.must_stay) for p in pastes),
    }


if __name__ == "__main__":
    print(json.dumps(_summary(generate()), indent=2))
