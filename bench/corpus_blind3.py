"""A held-out corpus of developer pastes for the scrubber, written without looking at the scrubber or earlier corpora.

Every secret and every piece of PII is assembled at run time from a seeded generator, so the source holds no
real-looking literal and the corpus is the same for the same seed.

Kinds that must go: password, api_key, token, private_key, connection_string_password, email, phone, card, iban,
ssn, home_path_user. Private IP addresses are deliberately not a kind: they identify no person and are often what
the question is about ("why can't 10.0.3.7 reach the DB?"), so they are neither required to go nor to stay.

About a fifth of the pastes come from near-miss-only shapes (nothing must go), so the kept share means something.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

import phonenumbers

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B32 = string.ascii_uppercase + "234567"


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]] = field(default_factory=list)
    must_stay: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- random building blocks


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


WORDS = [
    "harbor",
    "maple",
    "falcon",
    "orbit",
    "cobalt",
    "willow",
    "ember",
    "quartz",
    "tundra",
    "saffron",
    "lantern",
    "pepper",
    "violet",
    "granite",
    "meadow",
    "copper",
    "thunder",
    "biscuit",
    "nimbus",
    "juniper",
    "walrus",
    "pixel",
]
SEASONS = ["Summer", "Winter", "Spring", "Autumn", "Monday", "Welcome", "Dragon", "Sunshine"]
FIRST = ["priya", "marcus", "akira", "sofia", "liam", "chen", "fatima", "olek", "noura", "diego", "ingrid", "tomasz"]
LAST = ["raman", "okafor", "tanaka", "moreau", "kowalski", "haddad", "lindqvist", "alvarez", "nguyen", "brennan"]
MAIL_DOMAINS = ["gmail.com", "outlook.com", "proton.me", "yahoo.co.uk", "fastmail.fm", "web.de", "orange.fr"]
ORG_DOMAINS = ["northwind-logistics.io", "brightpath.health", "kestrel-ai.dev", "lumenbank.co", "tidewater.app"]
HOSTS = ["devbox", "ws-042", "mbp-m2", "build-runner-3", "thinkpad", "prod-bastion"]


def password(rng: random.Random) -> str:
    style = rng.randrange(8)
    w, w2 = rng.choice(WORDS), rng.choice(WORDS)
    if style == 0:
        return f"{rng.choice(SEASONS)}{rng.randint(2019, 2026)}{rng.choice('!#?*')}"
    if style == 1:
        return f"{rng.choice(SEASONS)}.{rng.randint(2019, 2026)}"
    if style == 2:
        return f"{w.capitalize()}-{w2}-{rng.randint(10, 99)}"
    if style == 3:
        return rng.choice("#${") + chars(rng, ALNUM, rng.randint(10, 16)) + rng.choice("}!%")
    if style == 4:
        return chars(rng, ALNUM + "!@#%^&*", rng.randint(14, 24))
    if style == 5:
        return f"{w}.{w2}.{rng.randint(1, 999)}"
    if style == 6:
        return f"{w.capitalize()}{rng.randint(100, 9999)}"
    return f"{w[:3]}{rng.randint(10, 99)}{w2.upper()[:4]}{rng.choice('$&+')}"


def url_password(rng: random.Random) -> str:
    """A password as people put it in URLs, sometimes with a raw @ in it."""
    pw = password(rng).replace("/", "").replace("?", "").replace("#", "H").replace("%", "p")
    return pw + "@" + str(rng.randint(1, 99)) if rng.random() < 0.3 else pw


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST), rng.choice(LAST)


def email(rng: random.Random) -> str:
    first, last = person(rng)
    local = rng.choice([f"{first}.{last}", f"{first}{rng.randint(1, 99)}", f"{first[0]}{last}"])
    return f"{local}@{rng.choice(MAIL_DOMAINS + ORG_DOMAINS)}"


def username(rng: random.Random) -> str:
    first, last = person(rng)
    return rng.choice([first, f"{first}.{last}", f"{first[0]}{last}", first.capitalize()])


def luhn_complete(prefix_digits: str) -> str:
    total = 0
    for i, d in enumerate(reversed(prefix_digits)):
        n = int(d)
        if i % 2 == 0:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return prefix_digits + str((10 - total % 10) % 10)


def card(rng: random.Random) -> str:
    brand = rng.randrange(3)
    if brand == 2:  # Amex, 15 digits, 4-6-5
        digits = luhn_complete(rng.choice(["34", "37"]) + chars(rng, string.digits, 12))
        return f"{digits[:4]} {digits[4:10]} {digits[10:]}"
    prefix = "4" if brand == 0 else str(rng.randint(51, 55))
    digits = luhn_complete(prefix + chars(rng, string.digits, 15 - len(prefix)))
    if digits == "4242424242424242":
        return card(rng)
    sep = rng.choice([" ", "-", ""])
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4))


IBAN_BBAN = {  # country: (bban builder)
    "DE": lambda r: chars(r, string.digits, 18),
    "NL": lambda r: r.choice(["ABNA", "INGB", "RABO", "TRIO"]) + chars(r, string.digits, 10),
    "GB": lambda r: r.choice(["NWBK", "BARC", "LOYD", "MIDL"]) + chars(r, string.digits, 14),
    "CH": lambda r: chars(r, string.digits, 17),
    "AT": lambda r: chars(r, string.digits, 16),
}


def iban(rng: random.Random, spaced: bool | None = None) -> str:
    country = rng.choice(sorted(IBAN_BBAN))
    bban = IBAN_BBAN[country](rng)
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    raw = f"{country}{98 - int(numeric) % 97:02d}{bban}"
    if spaced is None:
        spaced = rng.random() < 0.5
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4)) if spaced else raw


def ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def phone(rng: random.Random) -> str:
    """A number valid in its national plan (by libphonenumber's metadata), written as people there write it."""
    while True:
        number = _phone_candidate(rng)
        regions = [None] if number.startswith("+") else ["GB", "FR", "JP", "US"]
        if any(phonenumbers.is_valid_number(phonenumbers.parse(number, region)) for region in regions):
            return number


def _phone_candidate(rng: random.Random) -> str:
    d = lambda n: chars(rng, string.digits, n)  # noqa: E731
    kind = rng.randrange(7)
    if kind == 0:  # UK mobile
        n = "7" + rng.choice("4579") + d(8)
        return rng.choice([f"0{n[:4]} {n[4:]}", f"+44 {n[:4]} {n[4:]}"])
    if kind == 1:  # France mobile
        n = rng.choice("67") + d(8)
        pairs = " ".join(n[i : i + 2] for i in range(1, 9, 2))
        return rng.choice([f"0{n[0]} {pairs}", f"+33 {n[0]} {pairs}"])
    if kind == 2:  # Japan mobile
        return f"0{rng.choice(['90', '80', '70'])}-{d(4)}-{d(4)}"
    if kind == 3:  # US / NANP, avoiding 555 fiction numbers
        area = rng.choice(["212", "312", "415", "617", "646", "720", "512", "206"])
        exch = str(rng.randint(201, 999))
        while exch == "555" or exch[1:] == "11":
            exch = str(rng.randint(201, 999))
        return rng.choice([f"({area}) {exch}-{d(4)}", f"+1 {area}-{exch}-{d(4)}", f"{area}.{exch}.{d(4)}"])
    if kind == 4:  # Germany mobile
        return f"+49 {rng.choice(['151', '160', '170', '176'])} {d(8)}"
    if kind == 5:  # India mobile
        return f"+91 {rng.choice('9876')}{d(4)} {d(5)}"
    return f"+61 4{d(2)} {d(3)} {d(3)}"  # Australia mobile


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt(rng: random.Random) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(rng.randint(10**5, 10**9)), "iat": 1_760_000_000 + rng.randint(0, 10**7), "scope": "api"}
    return f"{header}.{b64url(json.dumps(claims).encode())}.{chars(rng, B64URL, 43)}"


def session_token(rng: random.Random) -> str:
    return chars(rng, B64URL, rng.randint(800, 1200))


def pem_body(rng: random.Random, nbytes: int) -> str:
    raw = b64(rng.randbytes(nbytes))
    return "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))


def pem_key(rng: random.Random) -> tuple[str, str]:
    """(whole block, body): the body is what must go."""
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY"])
    body = pem_body(rng, 1190 if "RSA" in label else (121 if "EC" in label else 1216))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


def openssh_key(rng: random.Random) -> tuple[str, str]:
    raw = b64(b"openssh-key-v1\x00" + rng.randbytes(380))
    body = "\n".join(raw[i : i + 70] for i in range(0, len(raw), 70))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----", body


# Provider key formats as their vendors publish them; each returns a fresh random key.
PROVIDERS: dict[str, Callable[[random.Random], str]] = {
    "stripe": lambda r: r.choice(["sk_live_", "rk_live_"]) + chars(r, ALNUM, r.choice([24, 99])),
    "github_pat": lambda r: "ghp_" + chars(r, ALNUM, 36),
    "github_fine": lambda r: "github_pat_" + chars(r, ALNUM, 22) + "_" + chars(r, ALNUM, 59),
    "gitlab": lambda r: "glpat-" + chars(r, B64URL, 20),
    "slack_bot": lambda r: f"xoxb-{chars(r, string.digits, 12)}-{chars(r, string.digits, 13)}-{chars(r, ALNUM, 24)}",
    "openai": lambda r: "sk-proj-" + chars(r, B64URL, 156),
    "anthropic": lambda r: "sk-ant-api03-" + chars(r, B64URL, 93) + "AA",
    "sendgrid": lambda r: f"SG.{chars(r, B64URL, 22)}.{chars(r, B64URL, 43)}",
    "npm": lambda r: "npm_" + chars(r, ALNUM, 36),
    "pypi": lambda r: "pypi-AgEIcHlwaS5vcmc" + chars(r, B64URL, 140),
    "huggingface": lambda r: "hf_" + chars(r, string.ascii_letters, 34),
    "digitalocean": lambda r: "dop_v1_" + chars(r, HEX, 64),
    "shopify": lambda r: "shpat_" + chars(r, HEX, 32),
    "linear": lambda r: "lin_api_" + chars(r, ALNUM, 40),
    "notion": lambda r: r.choice(
        ["secret_" + chars(r, ALNUM, 43), "ntn_" + chars(r, string.digits, 11) + chars(r, ALNUM, 35)]
    ),
    "vault": lambda r: "hvs." + chars(r, B64URL, 90),
    "grafana": lambda r: f"glsa_{chars(r, ALNUM, 32)}_{chars(r, HEX, 8)}",
    "newrelic": lambda r: "NRAK-" + chars(r, string.ascii_uppercase + string.digits, 27),
    "mailgun": lambda r: "key-" + chars(r, HEX, 32),
    "databricks": lambda r: "dapi" + chars(r, HEX, 32),
    "groq": lambda r: "gsk_" + chars(r, ALNUM, 52),
    "replicate": lambda r: "r8_" + chars(r, ALNUM, 37),
    "twilio_key": lambda r: "SK" + chars(r, HEX, 32),
    "doppler": lambda r: "dp.st.prd." + chars(r, ALNUM, 43),
}


def provider_key(rng: random.Random, name: str | None = None) -> tuple[str, str]:
    name = name or rng.choice(sorted(PROVIDERS))
    return name, PROVIDERS[name](rng)


def aws_pair(rng: random.Random) -> tuple[str, str]:
    return "AKIA" + chars(rng, B32, 16), chars(rng, ALNUM + "+/", 40)


def git_sha(rng: random.Random) -> str:
    return chars(rng, HEX, 40)


def uuid(rng: random.Random) -> str:
    h = chars(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def version(rng: random.Random) -> str:
    return f"{rng.randint(0, 5)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"


def example_email(rng: random.Random) -> str:
    local = rng.choice(["jane.doe", "admin", "noreply", "you", "alice"])
    return f"{local}@{rng.choice(['example.com', 'example.org', 'example.net'])}"


PLACEHOLDERS = [
    "<your-token>",
    "${DB_PASSWORD}",
    "{{ .Values.db.password }}",
    "sk-...",
    "xxxxxxxxxxxxxxxx",
    "YOUR_API_KEY_HERE",
    "<password>",
    "<db-password>",
    "REPLACE_ME",
    "${{ secrets.DEPLOY_TOKEN }}",
    "%(DB_PASS)s",
    "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "sk-...your key...",
]


# ---------------------------------------------------------------- shapes with something that must go


def terraform_tfvars(rng: random.Random) -> Paste:
    pw, tok = password(rng), provider_key(rng, "digitalocean")[1]
    region, sha = rng.choice(["eu-west-1", "us-east-2", "ap-south-1"]), git_sha(rng)
    text = (
        f'region          = "{region}"\ninstance_type   = "t3.medium"\ndb_username     = "app"\n'
        f'db_password     = "{pw}"\ndo_token        = "{tok}"\nami_commit      = "{sha}"\n'
        '\n# terraform plan says: Error: Invalid value for variable "db_password"\n'
    )
    return Paste("terraform_tfvars", text, [("password", pw), ("api_key", tok)], [region, sha])


def ansible_group_vars(rng: random.Random) -> Paste:
    pw, pw2, user = password(rng), password(rng), username(rng)
    text = (
        "---\n# group_vars/dbservers.yml (not vaulted yet, I know)\npostgresql_version: 15\n"
        f'postgresql_users:\n  - name: {user}\n    password: "{pw}"\n    role_attr_flags: CREATEDB\n'
        f"mysql_root_password: '{pw2}'\nansible_become_pass: \"{{{{ vault_become_pass }}}}\"\n"
    )
    return Paste("ansible_group_vars", text, [("password", pw), ("password", pw2)], ["{{ vault_become_pass }}"])


def github_actions_env(rng: random.Random) -> Paste:
    tok, sha = provider_key(rng, "npm")[1], git_sha(rng)
    text = (
        "name: release\non: push\njobs:\n  publish:\n    runs-on: ubuntu-latest\n    env:\n"
        "      NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n"
        f"      FALLBACK_NPM_TOKEN: {tok}\n    steps:\n"
        f"      - uses: actions/checkout@{sha}\n      - run: npm publish\n"
    )
    return Paste("github_actions_env", text, [("api_key", tok)], ["${{ secrets.NPM_TOKEN }}", sha])


def helm_values(rng: random.Random) -> Paste:
    pw, redis_pw, digest = password(rng), url_password(rng), chars(rng, HEX, 64)
    text = (
        "image:\n  repository: ghcr.io/acme/api\n"
        f"  digest: sha256:{digest}\npostgresql:\n  auth:\n    username: api\n    password: {pw}\n"
        f"redis:\n  url: redis://:{redis_pw}@redis-master.cache.svc:6379/0\n"
    )
    go = [("password", pw), ("connection_string_password", redis_pw)]
    return Paste("helm_values", text, go, [f"sha256:{digest}"])


def systemd_unit(rng: random.Random) -> Paste:
    key, pw, user = provider_key(rng, "sendgrid")[1], password(rng), username(rng)
    text = (
        "[Unit]\nDescription=mailer worker\nAfter=network.target\n\n[Service]\n"
        f"User={user}\nWorkingDirectory=/home/{user}/mailer\n"
        f'Environment="SENDGRID_API_KEY={key}"\nEnvironment=SMTP_PASS={pw}\n'
        f"ExecStart=/home/{user}/mailer/.venv/bin/python -m mailer\nRestart=always\n"
    )
    return Paste("systemd_unit", text, [("api_key", key), ("password", pw), ("home_path_user", user)], [])


def java_properties(rng: random.Random) -> Paste:
    pw, jdbc_pw = password(rng), password(rng).replace("&", "")
    text = (
        "server.port=8443\nspring.datasource.url=jdbc:postgresql://db.internal:5432/orders"
        f"?user=orders&password={jdbc_pw}&ssl=true\n"
        f"mail.smtp.password={pw}\nlogging.level.root=INFO\n"
    )
    go = [("connection_string_password", jdbc_pw), ("password", pw)]
    return Paste("java_properties", text, go, ["jdbc:postgresql://db.internal:5432/orders"])


def spring_application_yml(rng: random.Random) -> Paste:
    pw, secret = password(rng), chars(rng, ALNUM, 48)
    text = (
        "spring:\n  datasource:\n    url: jdbc:mysql://mysql:3306/shop\n    username: shop\n"
        f"    password: {pw}\n  security:\n    oauth2:\n      client:\n        registration:\n"
        f"          github:\n            client-id: Iv1.{chars(rng, HEX, 16)}\n            client-secret: {secret}\n"
    )
    return Paste(
        "spring_application_yml", text, [("password", pw), ("api_key", secret)], ["jdbc:mysql://mysql:3306/shop"]
    )


def django_settings(rng: random.Random) -> Paste:
    secret = "django-insecure-" + chars(rng, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)
    pw, mail = password(rng), email(rng)
    text = (
        "# settings.py\nimport os\n\n"
        f"SECRET_KEY = '{secret}'\nDEBUG = True\nADMINS = [('Ops', '{mail}')]\nDATABASES = {{\n"
        "    'default': {\n        'ENGINE': 'django.db.backends.postgresql',\n        'NAME': 'crm',\n"
        f"        'USER': 'crm',\n        'PASSWORD': '{pw}',\n        'HOST': 'localhost',\n    }}\n}}\n"
        "EMAIL_HOST_PASSWORD = os.environ['EMAIL_HOST_PASSWORD']\n"
    )
    go = [("token", secret), ("password", pw), ("email", mail)]
    return Paste("django_settings", text, go, ["os.environ['EMAIL_HOST_PASSWORD']", "django.db.backends.postgresql"])


def rails_database_yml(rng: random.Random) -> Paste:
    pw, url_pw = password(rng), url_password(rng)
    text = (
        "default: &default\n  adapter: postgresql\n  encoding: unicode\n"
        '  pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>\n\n'
        f"development:\n  <<: *default\n  database: blog_dev\n  password: {pw}\n\n"
        f"production:\n  <<: *default\n  url: postgresql://blog:{url_pw}@db.prod.internal/blog\n"
    )
    go = [("password", pw), ("connection_string_password", url_pw)]
    return Paste("rails_database_yml", text, go, ['<%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>'])


def wp_config_php(rng: random.Random) -> Paste:
    pw = password(rng).replace("'", "")
    salt = chars(rng, ALNUM + "!@#%^&*()-_[]{}<>~+=,.;:/?|", 64)
    text = (
        "<?php\ndefine( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp_admin' );\n"
        f"define( 'DB_PASSWORD', '{pw}' );\ndefine( 'DB_HOST', 'localhost' );\n"
        f"define( 'AUTH_KEY',         '{salt}' );\ndefine( 'WP_DEBUG', true );\n"
    )
    return Paste("wp_config_php", text, [("password", pw), ("token", salt)], ["define( 'DB_NAME', 'wordpress' );"])


def php_dotenv(rng: random.Random) -> Paste:
    pw, key, mail = password(rng), "base64:" + b64(rng.randbytes(32)), email(rng)
    stripe = provider_key(rng, "stripe")[1]
    text = (
        "APP_NAME=Laravel\nAPP_ENV=local\n"
        f"APP_KEY={key}\nDB_CONNECTION=mysql\nDB_PASSWORD={pw}\nMAIL_FROM_ADDRESS={mail}\n"
        f"STRIPE_SECRET={stripe}\nSTRIPE_KEY=pk_test_{'x' * 24}\n"
    )
    go = [("token", key), ("password", pw), ("email", mail), ("api_key", stripe)]
    return Paste("php_dotenv", text, go, ["APP_NAME=Laravel"])


def go_sdk_init(rng: random.Random) -> Paste:
    name, key = provider_key(rng, rng.choice(["openai", "anthropic", "groq"]))
    text = (
        'package main\n\nimport (\n\t"context"\n\t"log"\n)\n\nfunc main() {\n'
        f'\tclient := newClient(option.WithAPIKey("{key}"), option.WithMaxRetries(3))\n'
        "\tresp, err := client.Chat(context.Background(), req)\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n}\n"
        "// panics with 401 Unauthorized, why?\n"
    )
    return Paste("go_sdk_init", text, [("api_key", key)], ["option.WithMaxRetries(3)"])


def rust_sdk_init(rng: random.Random) -> Paste:
    access, secret = aws_pair(rng)
    text = (
        "let creds = Credentials::new(\n"
        f'    "{access}",\n    "{secret}",\n    None, None, "hardcoded",\n);\n'
        'let config = aws_config::from_env().region("eu-central-1").credentials_provider(creds).load().await;\n'
    )
    return Paste("rust_sdk_init", text, [("api_key", access), ("api_key", secret)], ['region("eu-central-1")'])


def node_sdk_init(rng: random.Random) -> Paste:
    name, key = provider_key(rng, rng.choice(["linear", "notion", "shopify", "replicate"]))
    text = (
        "const { Client } = require('./client');\n\n"
        f"const client = new Client({{ auth: '{key}', timeoutMs: 10_000 }});\n"
        "client.query().then(console.log).catch((e) => console.error(e.status, e.body));\n"
    )
    return Paste("node_sdk_init", text, [("api_key", key)], ["timeoutMs: 10_000"])


def python_dict_literal(rng: random.Random) -> Paste:
    pw, tok, mail = password(rng), provider_key(rng)[1], email(rng)
    text = (
        ">>> cfg\n{'host': 'smtp.mailgun.org', 'port': 587, "
        f"'user': '{mail}', 'password': '{pw}', 'api_token': '{tok}', 'retries': 3}}\n"
    )
    return Paste(
        "python_dict_literal", text, [("email", mail), ("password", pw), ("api_key", tok)], ["smtp.mailgun.org"]
    )


def json_log_auth_header(rng: random.Random) -> Paste:
    token, req = jwt(rng), uuid(rng)
    line = {
        "ts": "2026-03-14T09:12:44.118Z",
        "level": "error",
        "request_id": req,
        "method": "GET",
        "path": "/v2/invoices",
        "headers": {"authorization": f"Bearer {token}", "user-agent": "okhttp/4.12.0"},
        "status": 401,
    }
    return Paste("json_log_auth_header", json.dumps(line), [("token", token)], [req, "okhttp/4.12.0"])


def http_request_dump(rng: random.Random) -> Paste:
    user, pw = rng.choice(FIRST), password(rng).replace(":", "")
    basic = b64(f"{user}:{pw}".encode())
    session = session_token(rng)
    text = (
        "POST /api/v1/export HTTP/1.1\r\nHost: internal.acme-corp.net\r\n"
        f"Authorization: Basic {basic}\r\nCookie: theme=dark; session={session}\r\n"
        'Content-Type: application/json\r\nContent-Length: 42\r\n\r\n{"format":"csv"}\r\n'
    )
    return Paste("http_request_dump", text, [("password", basic), ("token", session)], ["theme=dark"])


def psql_mysql_cli(rng: random.Random) -> Paste:
    pw, pw2, user = password(rng), password(rng).replace("'", ""), username(rng)
    text = (
        f"{user}@{rng.choice(HOSTS)}:~$ mysql -h 10.0.4.12 -u root -p{pw} shop\n"
        "ERROR 2003 (HY000): Can't connect to MySQL server on '10.0.4.12:3306' (110)\n"
        f"{user}@{rng.choice(HOSTS)}:~$ PGPASSWORD='{pw2}' psql -h db -U app -c 'select 1'\n"
        'psql: error: connection to server at "db" (172.18.0.3), port 5432 failed: timeout expired\n'
    )
    return Paste("psql_mysql_cli", text, [("password", pw), ("password", pw2), ("home_path_user", user)], ["HY000"])


def shell_history(rng: random.Random) -> Paste:
    redis_pw, mongo_pw, pypi = password(rng), url_password(rng), provider_key(rng, "pypi")[1]
    text = (
        f" 1012  redis-cli -h cache.internal -a '{redis_pw}' --no-auth-warning ping\n"
        f' 1013  mongosh "mongodb+srv://admin:{mongo_pw}@cluster0.ab1cd.mongodb.net/test"\n'
        f" 1014  twine upload -u __token__ -p {pypi} dist/*\n 1015  history | tail\n"
    )
    go = [("password", redis_pw), ("connection_string_password", mongo_pw), ("api_key", pypi)]
    return Paste("shell_history", text, go, ["dist/*"])


def driver_uris(rng: random.Random) -> Paste:
    pws = [url_password(rng) for _ in range(4)]
    text = (
        "tried all of these, none connect:\n"
        f"AMQP_URL=amqp://guest:{pws[0]}@rabbit:5672/%2F\n"
        f"CLICKHOUSE=clickhouse://default:{pws[1]}@ch.internal:9000/events\n"
        f"sqlalchemy.url = mssql+pyodbc://sa:{pws[2]}@sqlsrv/app?driver=ODBC+Driver+18+for+SQL+Server\n"
        f"NEO4J_URI=neo4j+s://neo4j:{pws[3]}@a1b2c3.databases.neo4j.io\n"
        "EXAMPLE_URL=postgres://USER:PASSWORD@HOST:5432/DB\n"
    )
    go = [("connection_string_password", p) for p in pws]
    return Paste("driver_uris", text, go, ["postgres://USER:PASSWORD@HOST:5432/DB"])


def azure_connection_strings(rng: random.Random) -> Paste:
    account_key, sql_pw = b64(rng.randbytes(64)), password(rng).replace(";", "")
    sig = b64(rng.randbytes(32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    text = (
        '{\n  "ConnectionStrings": {\n'
        '    "Storage": "DefaultEndpointsProtocol=https;AccountName=acmeprod;'
        f'AccountKey={account_key};EndpointSuffix=core.windows.net",\n'
        '    "Sql": "Server=tcp:acme.database.windows.net,1433;Initial Catalog=app;'
        f'User ID=appuser;Password={sql_pw};Encrypt=True;"\n'
        "  },\n"
        f'  "BlobSas": "https://acmeprod.blob.core.windows.net/exports?sv=2022-11-02&ss=b&sp=rl&se=2026-12-31&sig={sig}"\n}}\n'
    )
    go = [("api_key", account_key), ("connection_string_password", sql_pw), ("token", sig)]
    return Paste("azure_connection_strings", text, go, ["core.windows.net", "sv=2022-11-02"])


def markdown_credentials_table(rng: random.Random) -> Paste:
    rows = [
        (rng.choice(["staging db", "grafana", "jenkins", "pgadmin"]), username(rng), password(rng)) for _ in range(3)
    ]
    body = "\n".join(f"| {svc} | {user} | `{pw}` |" for svc, user, pw in rows)
    text = f"## Shared logins (do not share!)\n\n| service | user | password |\n|---|---|---|\n{body}\n"
    return Paste(
        "markdown_credentials_table", text, [("password", pw) for _, _, pw in rows], ["| service | user | password |"]
    )


def toml_ini_config(rng: random.Random) -> Paste:
    pw, hf = password(rng), provider_key(rng, "huggingface")[1]
    text = (
        '# ~/.config/tool/config.toml\n[database]\nhost = "127.0.0.1"\nport = 5432\n'
        f'password = "{pw}"\n\n[hub]\ntoken = "{hf}"\nrevision = "main"\n\n'
        "; and the old .ini\n[smtp]\nserver = smtp.example.com\nuser = bot@example.com\n"
    )
    return Paste("toml_ini_config", text, [("password", pw), ("api_key", hf)], ["smtp.example.com", "bot@example.com"])


def powershell_env(rng: random.Random) -> Paste:
    key, user, pw = (
        provider_key(rng, rng.choice(["anthropic", "openai", "github_fine"]))[1],
        username(rng),
        password(rng),
    )
    home = rng.choice([f"C:\\Users\\{user}", f"c:\\users\\{user.lower()}"])
    shown_user = user if home.startswith("C:") else user.lower()
    text = (
        f'PS {home}\\src\\bot> $env:API_KEY = "{key}"\n'
        f"PS {home}\\src\\bot> $cred = New-Object PSCredential('svc', "
        f"(ConvertTo-SecureString '{pw}' -AsPlainText -Force))\n"
        f"PS {home}\\src\\bot> python .\\main.py\nTraceback (most recent call last):\n"
        f'  File "{home}\\src\\bot\\main.py", line 12, in <module>\n'
    )
    return Paste("powershell_env", text, [("api_key", key), ("password", pw), ("home_path_user", shown_user)], [])


def wsl_and_var_home_paths(rng: random.Random) -> Paste:
    user, user2 = username(rng), username(rng)
    text = (
        f"cp /mnt/c/Users/{user}/Downloads/export.csv ./data/\n"
        f"cp: cannot stat '/mnt/c/Users/{user}/Downloads/export.csv': No such file or directory\n"
        f"ls -la /var/home/{user2}/.local/share/containers/\n"
    )
    return Paste("wsl_and_var_home_paths", text, [("home_path_user", user), ("home_path_user", user2)], ["./data/"])


def python_stacktrace_home(rng: random.Random) -> Paste:
    user = username(rng)
    base = rng.choice([f"/home/{user}", f"/Users/{user}"])
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{base}/work/etl/run.py", line 88, in <module>\n    main()\n'
        f'  File "{base}/work/etl/.venv/lib/python3.12/site-packages/pandas/io/parsers/readers.py",'
        " line 1026, in read_csv\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'input.csv'\n"
    )
    return Paste("python_stacktrace_home", text, [("home_path_user", user)], ["python3.12", "readers.py"])


def customer_csv(rng: random.Random) -> Paste:
    rows, go = [], []
    for i in range(3):
        first, last = person(rng)
        mail, tel, acct = f"{first}.{last}@{rng.choice(MAIL_DOMAINS)}", phone(rng), iban(rng, spaced=False)
        rows.append(f'{1000 + i},{first.capitalize()},{last.capitalize()},{mail},"{tel}",{acct}')
        go += [("email", mail), ("phone", tel), ("iban", acct)]
    text = "id,first_name,last_name,email,phone,iban\n" + "\n".join(rows) + "\n\nwhy does pandas read iban as float?\n"
    return Paste("customer_csv", text, go, ["id,first_name,last_name,email,phone,iban"])


def payment_debug_log(rng: random.Random) -> Paste:
    number, mail = card(rng), email(rng)
    text = (
        f"2026-02-02 11:04:19 DEBUG checkout: charging card={number} exp=08/29 cvc=*** email={mail}\n"
        "2026-02-02 11:04:19 DEBUG checkout: test card 4242 4242 4242 4242 works in staging\n"
        "2026-02-02 11:04:20 ERROR checkout: card_declined (do_not_honor)\n"
    )
    return Paste(
        "payment_debug_log", text, [("card", number), ("email", mail)], ["4242 4242 4242 4242", "do_not_honor"]
    )


def hr_onboarding_sql(rng: random.Random) -> Paste:
    first, last = person(rng)
    num, tel, acct, mail = ssn(rng), phone(rng), iban(rng), email(rng)
    text = (
        "INSERT INTO employees (first_name, last_name, ssn, phone, iban, email, start_date) VALUES\n"
        f"  ('{first.capitalize()}', '{last.capitalize()}', '{num}', '{tel}', '{acct}', '{mail}', '2026-04-01');\n"
        "-- ERROR:  value too long for type character varying(11)\n"
    )
    go = [("ssn", num), ("phone", tel), ("iban", acct), ("email", mail)]
    return Paste("hr_onboarding_sql", text, go, ["character varying(11)"])


def support_ticket_prose(rng: random.Random) -> Paste:
    first, last = person(rng)
    pw, tel, mail = password(rng), phone(rng), email(rng)
    text = (
        f"Customer {first.capitalize()} {last.capitalize()} called from {tel} saying login fails. "
        "She said her password "
        f"is {pw} and that she also tried the reset link sent to {mail}. Can you write a reply template?"
    )
    return Paste("support_ticket_prose", text, [("phone", tel), ("password", pw), ("email", mail)], [])


def chat_bot_tokens(rng: random.Random) -> Paste:
    discord = f"{b64url(str(rng.randint(10**17, 10**18)).encode())}.{chars(rng, B64URL, 6)}.{chars(rng, B64URL, 38)}"
    telegram = f"{rng.randint(10**8, 10**10)}:AA{chars(rng, B64URL, 33)}"
    slack = provider_key(rng, "slack_bot")[1]
    text = (
        "import discord, telegram\n\n"
        f'DISCORD_TOKEN = "{discord}"\nbot = telegram.Bot("{telegram}")\n'
        f'slack = WebClient(token="{slack}")\n# all three bots go silent after an hour\n'
    )
    return Paste("chat_bot_tokens", text, [("token", discord), ("token", telegram), ("token", slack)], [])


def gcp_service_account(rng: random.Random) -> Paste:
    block, body = pem_key(rng)
    key_id, project = chars(rng, HEX, 40), f"{rng.choice(WORDS)}-{rng.randint(100000, 999999)}"
    doc = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": key_id,
        "private_key": block + "\n",
        "client_email": f"ci-deployer@{project}.iam.gserviceaccount.com",
        "client_id": str(rng.randint(10**20, 10**21)),
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    text = json.dumps(doc, indent=2)
    escaped_body = body.replace("\n", "\\n")
    return Paste(
        "gcp_service_account",
        text,
        [("private_key", escaped_body), ("api_key", key_id)],
        ["https://oauth2.googleapis.com/token"],
    )


def ssh_key_paste(rng: random.Random) -> Paste:
    block, body = openssh_key(rng)
    user = username(rng)
    text = (
        f"{user}@{rng.choice(HOSTS)}:~/.ssh$ cat id_ed25519\n{block}\n"
        f'{user}@{rng.choice(HOSTS)}:~/.ssh$ ssh -T git@github.com\nLoad key "id_ed25519": invalid format\n'
    )
    return Paste("ssh_key_paste", text, [("private_key", body), ("home_path_user", user)], ["git@github.com"])


def tls_secret_k8s(rng: random.Random) -> Paste:
    block, body = pem_key(rng)
    db_pw = password(rng)
    key_b64 = b64(block.encode())
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-tls\ntype: kubernetes.io/tls\ndata:\n"
        f'  tls.key: {key_b64}\nstringData:\n  db-password: "{db_pw}"\n'
    )
    return Paste("tls_secret_k8s", text, [("private_key", key_b64), ("password", db_pw)], ["kubernetes.io/tls"])


def provider_keys_env(rng: random.Random) -> Paste:
    names = rng.sample(sorted(PROVIDERS), 4)
    keys = [(n, PROVIDERS[n](rng)) for n in names]
    body = "\n".join(f"{n.upper()}_KEY={k}" for n, k in keys)
    text = f"# .env.local (committed by accident, rotating now)\n{body}\nLOG_LEVEL=debug\n"
    return Paste("provider_keys_env", text, [("api_key", k) for _, k in keys], ["LOG_LEVEL=debug"])


def curl_invocations(rng: random.Random) -> Paste:
    user, pw = rng.choice(FIRST), password(rng).replace("'", "").replace(":", "")
    key, gl = provider_key(rng, rng.choice(["newrelic", "grafana", "mailgun"]))[1], provider_key(rng, "gitlab")[1]
    text = (
        f"curl -u {user}:'{pw}' https://jenkins.acme.internal/job/build/api/json\n"
        f"curl -H 'X-API-Key: {key}' https://api.vendor.io/v1/events\n"
        f'curl --header "PRIVATE-TOKEN: {gl}" https://gitlab.acme.internal/api/v4/projects\n'
    )
    return Paste("curl_invocations", text, [("password", pw), ("api_key", key), ("token", gl)], ["/api/v4/projects"])


def vault_cli_output(rng: random.Random) -> Paste:
    tok, accessor = provider_key(rng, "vault")[1], chars(rng, B64URL, 24)
    text = (
        "$ vault login -method=userpass username=ci\nSuccess! You are now authenticated.\n\n"
        f"Key                  Value\n---                  -----\ntoken                {tok}\n"
        f'token_accessor       {accessor}\ntoken_duration       768h\ntoken_policies       ["default" "ci"]\n'
    )
    return Paste("vault_cli_output", text, [("token", tok)], ["768h", '["default" "ci"]'])


def long_cookie_session(rng: random.Random) -> Paste:
    tok = session_token(rng)
    text = (
        "# requests keeps getting logged out, this is what I send\n"
        f"s.cookies.set('__Secure-next-auth.session-token', '{tok}', domain='app.acme.io')\n"
        "r = s.get('https://app.acme.io/api/me')\nprint(r.status_code)  # 401\n"
    )
    return Paste("long_cookie_session", text, [("token", tok)], ["__Secure-next-auth.session-token"])


def docker_run_flags(rng: random.Random) -> Paste:
    pw, root_pw = password(rng), password(rng)
    text = (
        "docker run -d --name pg -p 5432:5432 "
        f"-e POSTGRES_PASSWORD='{pw}' postgres:16.3\n"
        f"docker exec -it mariadb mariadb -uroot --password={root_pw} -e 'SHOW DATABASES'\n"
    )
    return Paste("docker_run_flags", text, [("password", pw), ("password", root_pw)], ["postgres:16.3"])


def fraud_review_json(rng: random.Random) -> Paste:
    number, tel, mail, order = card(rng), phone(rng), email(rng), uuid(rng)
    doc = {
        "order_id": order,
        "customer": {"email": mail, "phone": tel},
        "payment": {"pan": number, "brand": "auto", "3ds": "failed"},
        "risk_score": round(rng.random(), 3),
    }
    text = "this webhook payload fails schema validation, what's wrong?\n" + json.dumps(doc, indent=2)
    return Paste("fraud_review_json", text, [("card", number), ("phone", tel), ("email", mail)], [order])


def payroll_spreadsheet_tsv(rng: random.Random) -> Paste:
    rows, go = [], []
    for _ in range(3):
        first, last = person(rng)
        num, acct, tel = ssn(rng), iban(rng, spaced=True), phone(rng)
        net = f"{rng.randint(3, 9)}{rng.randint(100, 999)}.00"
        rows.append(f"{first.capitalize()} {last.capitalize()}\t{num}\t{acct}\t{tel}\t{net}")
        go += [("ssn", num), ("iban", acct), ("phone", tel)]
    text = "=VLOOKUP returns #N/A on these rows, pasted from the sheet:\nName\tSSN\tIBAN\tPhone\tNet\n"
    return Paste("payroll_spreadsheet_tsv", text + "\n".join(rows) + "\n", go, ["=VLOOKUP"])


def pytest_fixture_real_customer(rng: random.Random) -> Paste:
    first, last = person(rng)
    num, number, mail = ssn(rng), card(rng), email(rng)
    text = (
        "@pytest.fixture\ndef customer():\n    # copied from prod so the bug reproduces\n    return Customer(\n"
        f'        name="{first.capitalize()} {last.capitalize()}",\n        ssn="{num}",\n'
        f'        card_number="{number}",\n        email="{mail}",\n        test_email="qa@example.com",\n    )\n'
    )
    return Paste(
        "pytest_fixture_real_customer", text, [("ssn", num), ("card", number), ("email", mail)], ["qa@example.com"]
    )


def sms_gateway_log(rng: random.Random) -> Paste:
    sid, auth = "AC" + chars(rng, HEX, 32), chars(rng, HEX, 32)
    tels = [phone(rng) for _ in range(2)]
    text = (
        f"client = Client('{sid}', '{auth}')\n"
        f"[sms] queued to={tels[0]} body='Your code is 482913' status=queued\n"
        f"[sms] queued to={tels[1]} status=undelivered error=30003\n"
    )
    return Paste("sms_gateway_log", text, [("token", auth), ("phone", tels[0]), ("phone", tels[1])], ["error=30003"])


def wire_transfer_email(rng: random.Random) -> Paste:
    first, last = person(rng)
    acct, tel, mail = iban(rng), phone(rng), email(rng)
    text = (
        "Can you parse this email with a regex and pull out the account?\n\n"
        f"> Hi, please send the refund to my account {acct} (holder: {first.capitalize()} {last.capitalize()}).\n"
        f"> Call me on {tel} or write to {mail}. Reference INV-{rng.randint(10000, 99999)}.\n"
    )
    return Paste("wire_transfer_email", text, [("iban", acct), ("phone", tel), ("email", mail)], [])


def maven_settings_xml(rng: random.Random) -> Paste:
    pw, pw2 = password(rng).replace("&", "+").replace("<", "!"), password(rng).replace("&", "+").replace("<", "!")
    text = (
        "<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>deploy</username>\n"
        f"      <password>{pw}</password>\n    </server>\n  </servers>\n</settings>\n\n<!-- web.config -->\n"
        f'<add key="SmtpPassword" value="{pw2}" />\n'
    )
    return Paste("maven_settings_xml", text, [("password", pw), ("password", pw2)], ["nexus-releases"])


def pgpass_netrc(rng: random.Random) -> Paste:
    pw, pw2 = password(rng).replace(":", ""), password(rng).replace(" ", "")
    text = (
        "$ cat ~/.pgpass\n"
        f"db.internal:5432:analytics:report_ro:{pw}\n"
        "$ cat ~/.netrc\n"
        f"machine artifactory.acme.internal login ci password {pw2}\n"
        "$ chmod 600 ~/.pgpass  # still asks for a password?\n"
    )
    return Paste("pgpass_netrc", text, [("password", pw), ("password", pw2)], ["chmod 600 ~/.pgpass"])


def dockerfile_env(rng: random.Random) -> Paste:
    pw, key = password(rng).replace('"', ""), provider_key(rng, rng.choice(["replicate", "groq", "huggingface"]))[1]
    text = (
        "FROM python:3.12-slim\nARG PIP_INDEX_URL\n"
        f'ENV DB_PASS="{pw}" \\\n    MODEL_API_KEY={key}\n'
        "COPY . /app\nRUN pip install -r /app/requirements.txt\n"
    )
    return Paste("dockerfile_env", text, [("password", pw), ("api_key", key)], ["python:3.12-slim"])


def jupyter_cell_json(rng: random.Random) -> Paste:
    key = provider_key(rng, rng.choice(["openai", "anthropic"]))[1]
    cell = {
        "cell_type": "code",
        "execution_count": rng.randint(1, 40),
        "metadata": {},
        "source": ["import openai\n", f'openai.api_key = "{key}"\n', "openai.models.list()"],
        "outputs": [],
    }
    text = "my .ipynb won't render on GitHub, here is the cell:\n" + json.dumps(cell, indent=1)
    return Paste("jupyter_cell_json", text, [("api_key", key)], ['"cell_type": "code"'])


def sql_create_user(rng: random.Random) -> Paste:
    pw, pw2 = password(rng).replace("'", ""), password(rng).replace("'", "")
    text = (
        f"CREATE USER 'etl'@'%' IDENTIFIED BY '{pw}';\nGRANT SELECT ON warehouse.* TO 'etl'@'%';\n"
        f"ALTER ROLE reporting WITH LOGIN PASSWORD '{pw2}' VALID UNTIL '2027-01-01';\n"
        "-- ERROR 1396 (HY000): Operation CREATE USER failed for 'etl'@'%'\n"
    )
    return Paste("sql_create_user", text, [("password", pw), ("password", pw2)], ["GRANT SELECT ON warehouse.*"])


def git_remote_token(rng: random.Random) -> Paste:
    tok = provider_key(rng, rng.choice(["github_pat", "github_fine", "gitlab"]))[1]
    user = username(rng)
    text = (
        "$ git remote -v\n"
        f"origin\thttps://{user}:{tok}@github.com/acme/infra.git (fetch)\n"
        f"origin\thttps://{user}:{tok}@github.com/acme/infra.git (push)\n"
        "$ git push\nremote: Permission to acme/infra.git denied.\n"
    )
    return Paste("git_remote_token", text, [("token", tok)], ["acme/infra.git"])


# ---------------------------------------------------------------- near-miss-only shapes (nothing must go)


def lockfile_excerpt(rng: random.Random) -> Paste:
    integrity = "sha512-" + b64(rng.randbytes(64))
    sha = chars(rng, HEX, 64)
    v = version(rng)
    text = (
        f'"node_modules/left-pad": {{\n  "version": "{v}",\n  "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-{v}.tgz",\n'
        f'  "integrity": "{integrity}"\n}},\n\n# poetry.lock\n[[package]]\nname = "idna"\nfiles = [\n'
        f'    {{file = "idna-3.7-py3-none-any.whl", hash = "sha256:{sha}"}},\n]\n'
    )
    return Paste("lockfile_excerpt", text, [], [integrity, f"sha256:{sha}", v])


def git_log_paste(rng: random.Random) -> Paste:
    shas = [git_sha(rng) for _ in range(2)]
    text = (
        f"commit {shas[0]}\nAuthor: Jane Doe <jane.doe@example.com>\nDate:   Tue Mar 3 10:12:01 2026 +0100\n\n"
        f"    fix token refresh race (see {shas[1][:12]})\n\n"
        "    Signed-off-by: Jane Doe <jane.doe@example.com>\n"
    )
    return Paste("git_log_paste", text, [], [shas[0], shas[1][:12], "jane.doe@example.com"])


def placeholder_env_example(rng: random.Random) -> Paste:
    picks = rng.sample(PLACEHOLDERS, 5)
    names = ["API_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "OPENAI_API_KEY", "SECRET"]
    body = "\n".join(f"{n}={p}" for n, p in zip(names, picks, strict=True))
    text = f"# .env.example -- copy to .env and fill in\n{body}\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n"
    return Paste("placeholder_env_example", text, [], picks + ["AKIAIOSFODNN7EXAMPLE"])


def k8s_manifest_ids(rng: random.Random) -> Paste:
    uid, digest, v = uuid(rng), chars(rng, HEX, 64), version(rng)
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n"
        f'  uid: {uid}\n  labels:\n    app.kubernetes.io/version: "{v}"\nspec:\n  template:\n    spec:\n'
        f"      containers:\n        - name: api\n          image: ghcr.io/acme/api@sha256:{digest}\n"
        "          env:\n            - name: DB_PASSWORD\n              valueFrom:\n                secretKeyRef:\n"
        "                  name: db-credentials\n                  key: password\n"
    )
    return Paste("k8s_manifest_ids", text, [], [uid, f"sha256:{digest}", v, "db-credentials"])


def docs_snippet_placeholders(rng: random.Random) -> Paste:
    mail = example_email(rng)
    text = (
        "From the README:\n\n```bash\nexport OPENAI_API_KEY=sk-...your key...\n"
        'curl -H "Authorization: Bearer <your-token>" https://api.example.com/v1/me\n'
        "psql postgres://USER:PASSWORD@HOST:5432/DB\n```\n"
        f"Then email {mail} for access. Test with card 4242 4242 4242 4242.\n"
    )
    return Paste(
        "docs_snippet_placeholders",
        text,
        [],
        ["sk-...your key...", "<your-token>", "USER:PASSWORD@HOST", mail, "4242 4242 4242 4242"],
    )


def code_reading_secrets_safely(rng: random.Random) -> Paste:
    text = (
        "import os\n\n"
        'token = os.environ["GITHUB_TOKEN"]\npassword = getpass.getpass("DB password: ")\n'
        'api_key = settings.get("api_key")\nheaders = {"Authorization": f"Bearer {token}"}\n'
        f"PASSWORD_RESET_TIMEOUT = {rng.choice([900, 3600, 86400])}\n"
    )
    return Paste(
        "code_reading_secrets_safely",
        text,
        [],
        [
            'os.environ["GITHUB_TOKEN"]',
            'getpass.getpass("DB password: ")',
            'settings.get("api_key")',
            'f"Bearer {token}"',
        ],
    )


def pip_freeze_and_versions(rng: random.Random) -> Paste:
    pins = [f"{p}=={version(rng)}" for p in ["requests", "urllib3", "cryptography", "pyjwt"]]
    build = chars(rng, HEX, 7)
    text = "$ pip freeze\n" + "\n".join(pins) + f"\n$ python -c 'import app; print(app.__build__)'\n{build}\n"
    return Paste("pip_freeze_and_versions", text, [], pins + [build])


SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    f.__name__: f
    for f in [
        terraform_tfvars,
        ansible_group_vars,
        github_actions_env,
        helm_values,
        systemd_unit,
        java_properties,
        spring_application_yml,
        django_settings,
        rails_database_yml,
        wp_config_php,
        php_dotenv,
        go_sdk_init,
        rust_sdk_init,
        node_sdk_init,
        python_dict_literal,
        json_log_auth_header,
        http_request_dump,
        psql_mysql_cli,
        shell_history,
        driver_uris,
        azure_connection_strings,
        markdown_credentials_table,
        toml_ini_config,
        powershell_env,
        wsl_and_var_home_paths,
        python_stacktrace_home,
        customer_csv,
        payment_debug_log,
        hr_onboarding_sql,
        support_ticket_prose,
        chat_bot_tokens,
        gcp_service_account,
        ssh_key_paste,
        tls_secret_k8s,
        provider_keys_env,
        curl_invocations,
        vault_cli_output,
        long_cookie_session,
        docker_run_flags,
        fraud_review_json,
        payroll_spreadsheet_tsv,
        pytest_fixture_real_customer,
        sms_gateway_log,
        wire_transfer_email,
        maven_settings_xml,
        pgpass_netrc,
        dockerfile_env,
        jupyter_cell_json,
        sql_create_user,
        git_remote_token,
        lockfile_excerpt,
        git_log_paste,
        placeholder_env_example,
        k8s_manifest_ids,
        docs_snippet_placeholders,
        code_reading_secrets_safely,
        pip_freeze_and_versions,
    ]
}
NEAR_MISS_ONLY = {
    "lockfile_excerpt",
    "git_log_paste",
    "placeholder_env_example",
    "k8s_manifest_ids",
    "docs_snippet_placeholders",
    "code_reading_secrets_safely",
    "pip_freeze_and_versions",
}
# Every fourth must-go paste is followed by a near-miss-only one, so about a fifth of a corpus has nothing to remove.
_SCHEDULE: list[str] = []
for _i, _name in enumerate(n for n in SHAPES if n not in NEAR_MISS_ONLY):
    _SCHEDULE.append(_name)
    if _i % 4 == 3:
        _SCHEDULE.append(sorted(NEAR_MISS_ONLY)[_i // 4 % len(NEAR_MISS_ONLY)])


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    """n pastes cycling through the shapes; the same seed gives the same corpus."""
    rng = random.Random(seed)
    return [SHAPES[_SCHEDULE[i % len(_SCHEDULE)]](rng) for i in range(n)]


def kind_counts(pastes: list[Paste]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for paste in pastes:
        for kind, _ in paste.must_go:
            counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


if __name__ == "__main__":
    corpus = generate()
    print(f"{len(corpus)} pastes, {len(SHAPES)} shapes, {sum(not p.must_go for p in corpus)} near-miss only")
    print(kind_counts(corpus), "must_stay:", sum(len(p.must_stay) for p in corpus))
