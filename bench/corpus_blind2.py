# Pastes are verbatim text, and real pastes have long lines: wrapping them would change what is measured.
# ruff: noqa: E501
"""A blind, held-out corpus of developer pastes for measuring a secret/PII scrubber.

Written without looking at the scrubber, its catalogue, its tests or the earlier corpora, so that no rule was
fitted to it. Every secret is assembled at run time from random generators in the providers' published formats.

Kinds that must go:
- ``password``: a password in a named assignment, CLI flag or header (not inside a URL/DSN).
- ``connection_string_password``: the password part of a URI, JDBC/ODBC/ADO.NET string or DSN.
- ``api_key``: a provider's static key (Stripe, OpenAI, AWS secret, SendGrid, Azure AccountKey...).
- ``token``: a bearer/session/bot/personal-access token, JWT, cookie session or Vault token.
- ``private_key``: the body of a PEM, OpenSSH or PuTTY private key.
- ``email``, ``phone`` (valid per libphonenumber), ``card`` (Luhn-valid, never a published test number),
  ``iban`` (mod-97 and national checks valid), ``ssn`` (US SSN in an issued range).
- ``home_path_user``: a home directory with its user name (``/home/priya``, ``C:\\Users\\mkowalski``) or the user in a
  shell prompt (``priya@devbox``).

Some values are deliberately neither kind, so a scrubber may keep or remove them without being scored: private IP
addresses (``10.0.0.5`` is the same in millions of networks), public identifiers that are not credentials (Sentry DSN
client keys, which are meant for browsers; Twilio account SIDs; GCP ``private_key_id``; Confluent key names), person
names, and user names outside a home path or prompt.

About a fifth of the shapes carry near-misses only (lockfiles, digests, placeholders, example domains, documented
example keys), so the share of near-misses kept is measured on pastes where removing anything is a mistake.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import phonenumbers
from stdnum import iban as std_iban
from stdnum import luhn
from stdnum.us import ssn as std_ssn

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

B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + string.digits

# Published test numbers and documented examples: a scrubber should keep these.
TEST_CARDS = ("4242 4242 4242 4242", "4111 1111 1111 1111", "5555555555554444", "378282246310005")
AWS_EXAMPLE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

FIRST = (
    "priya",
    "mateusz",
    "aiko",
    "oluwaseun",
    "lucia",
    "henrik",
    "fatima",
    "diego",
    "mei",
    "tomasz",
    "amara",
    "siddharth",
    "ingrid",
    "kwame",
    "yusuf",
    "chloe",
    "rafael",
    "noor",
    "bjorn",
    "leilani",
    "dmitri",
    "sofia",
)
LAST = (
    "raman",
    "kowalski",
    "tanaka",
    "adeyemi",
    "fernandez",
    "lindqvist",
    "haddad",
    "morales",
    "zhang",
    "nowak",
    "okafor",
    "iyer",
    "bergstrom",
    "mensah",
    "demir",
    "dubois",
    "oliveira",
    "rahimi",
    "nakamura",
    "kealoha",
)
WORDS = (
    "summer",
    "winter",
    "falcon",
    "harbor",
    "copper",
    "maple",
    "tiger",
    "orchid",
    "nebula",
    "granite",
    "velvet",
    "cactus",
    "meadow",
    "rocket",
    "saffron",
    "glacier",
    "lantern",
    "pepper",
    "quartz",
    "willow",
)
MAIL_DOMAINS = ("gmail.com", "outlook.com", "yahoo.co.uk", "proton.me", "web.de", "orange.fr", "icloud.com")
COMPANY_DOMAINS = ("acme-logistics.io", "brightpath.co", "nordwind-gmbh.de", "tallyho.app", "kestrel-health.com")
HOSTS = ("devbox", "ws-042", "mbp-2023", "buildhost", "thinkpad", "raspberrypi", "ip-10-0-3-17")
PHONE_REGIONS = ("US", "GB", "FR", "DE", "JP", "IN", "BR", "ES", "AU", "NL", "IT", "CA")
IBAN_COUNTRIES = {
    "DE": "8n10n",
    "GB": "4a14n",
    "NL": "4a10n",
    "FR": "10n11c2n",
    "ES": "20n",
    "BE": "12n",
    "IT": "1a10n12c",
    "CH": "5n12c",
    "AT": "16n",
    "PL": "24n",
    "IE": "4a14n",
}


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]] = field(default_factory=list)
    must_stay: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- random building blocks


def chars(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def person(r: random.Random) -> tuple[str, str]:
    return r.choice(FIRST), r.choice(LAST)


def username(r: random.Random) -> str:
    first, last = person(r)
    return r.choice((first, f"{first[0]}{last}", f"{first}.{last}", f"{first}{r.randint(1, 99)}", last))


def real_email(r: random.Random) -> str:
    first, last = person(r)
    local = r.choice((f"{first}.{last}", f"{first}{last[0]}", f"{first[0]}.{last}{r.randint(1, 99)}", first))
    return f"{local}@{r.choice(MAIL_DOMAINS + COMPANY_DOMAINS)}"


def example_email(r: random.Random) -> str:
    return f"{r.choice(('jane.doe', 'user', 'alice', 'bob', 'admin', 'noreply'))}@{r.choice(('example.com', 'example.org', 'example.net'))}"


def password(r: random.Random) -> str:
    """A password in one of the styles people really use."""
    w1, w2 = r.choice(WORDS), r.choice(WORDS)
    style = r.randrange(9)
    if style == 0:
        return f"{w1.capitalize()}{r.randint(1970, 2026)}{r.choice('!?#*')}"
    if style == 1:
        return f"{w1.capitalize()}.{r.randint(2019, 2026)}"
    if style == 2:
        return f"{w1}.{w2}.{r.choice(WORDS)}"
    if style == 3:
        return chars(r, B62 + "!#%^&*()-_+=", r.randint(14, 24))
    if style == 4:
        return r.choice("#$%*{") + chars(r, B62, r.randint(10, 18)) + r.choice(("}", "!", "9", ""))
    if style == 5:
        return f"{w1[0].upper()}{w1[1:]}@{r.randint(100, 999)}{w2}"
    if style == 6:
        return chars(r, HEX, 32)
    if style == 7:
        return f"{w1}-{w2}-{r.randint(10, 99)}"
    return base64.b64encode(r.randbytes(18)).decode()


def url_safe_password(r: random.Random) -> str:
    return r.choice((f"{r.choice(WORDS).capitalize()}{r.randint(10, 9999)}", chars(r, B62, r.randint(12, 28))))


def session_token(r: random.Random) -> str:
    return chars(r, B64URL, r.randint(800, 1200))


def jwt(r: random.Random) -> str:
    def seg(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")

    claims = {
        "sub": str(uuid.UUID(int=r.getrandbits(128), version=4)),
        "iat": 1700000000 + r.randrange(10**7),
        "exp": 1760000000 + r.randrange(10**7),
        "scope": r.choice(("read write", "admin", "openid profile")),
    }
    sig = base64.urlsafe_b64encode(r.randbytes(32)).decode().rstrip("=")
    return f"{seg({'alg': 'HS256', 'typ': 'JWT'})}.{seg(claims)}.{sig}"


def card(r: random.Random) -> str:
    while True:
        prefix, length = r.choice(
            (("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16))
        )
        body = prefix + chars(r, string.digits, length - len(prefix) - 1)
        number = body + luhn.calc_check_digit(body)
        if number not in {c.replace(" ", "") for c in TEST_CARDS}:
            break
    style = r.randrange(3)
    if style == 0:
        return number
    sep = " " if style == 1 else "-"
    groups = (4, 6, 5) if length == 15 else (4, 4, 4, 4)
    out, i = [], 0
    for g in groups:
        out.append(number[i : i + g])
        i += g
    return sep.join(out)


def _bban(r: random.Random, spec: str) -> str:
    out, num = [], ""
    for ch in spec:
        if ch.isdigit():
            num += ch
            continue
        alphabet = {"n": string.digits, "a": string.ascii_uppercase, "c": string.ascii_uppercase + string.digits}[ch]
        out.append(chars(r, alphabet, int(num)))
        num = ""
    return "".join(out)


def iban(r: random.Random) -> str:
    country = r.choice(sorted(IBAN_COUNTRIES))
    while True:
        bban = _bban(r, IBAN_COUNTRIES[country])
        check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
        value = f"{country}{check:02d}{bban}"
        if std_iban.is_valid(value):
            break
    if r.random() < 0.5:
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


def ssn(r: random.Random) -> str:
    while True:
        value = f"{r.randint(1, 899):03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
        if std_ssn.is_valid(value):
            return value if r.random() < 0.85 else value.replace("-", " ")


def phone(r: random.Random) -> str:
    region = r.choice(PHONE_REGIONS)
    kind = r.choice((phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE))
    example = phonenumbers.example_number_for_type(region, kind)
    national = str(example.national_number)
    while True:
        keep = max(2, len(national) - 6)
        candidate = phonenumbers.PhoneNumber(
            country_code=example.country_code,
            national_number=int(national[:keep] + chars(r, string.digits, len(national) - keep)),
            italian_leading_zero=example.italian_leading_zero,
        )
        if phonenumbers.is_valid_number(candidate):
            break
    fmt = r.choice(
        (
            phonenumbers.PhoneNumberFormat.NATIONAL,
            phonenumbers.PhoneNumberFormat.INTERNATIONAL,
            phonenumbers.PhoneNumberFormat.INTERNATIONAL,
            phonenumbers.PhoneNumberFormat.E164,
        )
    )
    return phonenumbers.format_number(candidate, fmt)


# ---------------------------------------------------------------- near-miss building blocks


def git_sha(r: random.Random, n: int = 40) -> str:
    return chars(r, HEX, n)


def a_uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def sha256_hex(r: random.Random) -> str:
    return hashlib.sha256(r.randbytes(16)).hexdigest()


def sri_sha512(r: random.Random) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(r.randbytes(16)).digest()).decode()


def version(r: random.Random) -> str:
    return f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 30)}"


def placeholder(r: random.Random, what: str = "token") -> str:
    return r.choice(
        (
            f"<your-{what}>",
            f"<{what.upper()}>",
            "xxxxxxxxxxxxxxxx",
            "${" + what.upper() + "}",
            f"YOUR_{what.upper()}_HERE",
            "********",
            "REPLACE_ME",
        )
    )


# ---------------------------------------------------------------- provider formats (as published by each provider)


def stripe_live(r: random.Random) -> str:
    return r.choice(("sk_live_", "rk_live_")) + chars(r, B62, r.choice((24, 99)))


def github_pat(r: random.Random) -> str:
    if r.random() < 0.5:
        return r.choice(("ghp_", "gho_", "ghs_")) + chars(r, B62, 36)
    return "github_pat_" + chars(r, B62, 22) + "_" + chars(r, B62, 59)


def gitlab_pat(r: random.Random) -> str:
    return "glpat-" + chars(r, B64URL, 20)


def slack_bot(r: random.Random) -> str:
    digits = string.digits
    return f"{r.choice(('xoxb', 'xoxp'))}-{chars(r, digits, 12)}-{chars(r, digits, 13)}-{chars(r, B62, 24)}"


def openai_key(r: random.Random) -> str:
    return "sk-proj-" + chars(r, B64URL, 156)


def anthropic_key(r: random.Random) -> str:
    return "sk-ant-api03-" + chars(r, B64URL, 93) + "AA"


def aws_key_id(r: random.Random) -> str:
    return r.choice(("AKIA", "ASIA")) + chars(r, string.ascii_uppercase + "234567", 16)


def aws_secret(r: random.Random) -> str:
    return chars(r, B62 + "+/", 40)


def sendgrid_key(r: random.Random) -> str:
    return "SG." + chars(r, B64URL, 22) + "." + chars(r, B64URL, 43)


def twilio_api_key(r: random.Random) -> str:
    return "SK" + chars(r, HEX, 32)


def npm_token(r: random.Random) -> str:
    return "npm_" + chars(r, B62, 36)


def pypi_token(r: random.Random) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + chars(r, B64URL, r.randint(60, 150))


def hf_token(r: random.Random) -> str:
    return "hf_" + chars(r, string.ascii_letters, 34)


def digitalocean_token(r: random.Random) -> str:
    return "dop_v1_" + chars(r, HEX, 64)


def shopify_token(r: random.Random) -> str:
    return r.choice(("shpat_", "shpss_", "shpca_")) + chars(r, HEX, 32)


def linear_key(r: random.Random) -> str:
    return "lin_api_" + chars(r, B62, 40)


def notion_token(r: random.Random) -> str:
    if r.random() < 0.5:
        return "secret_" + chars(r, B62, 43)
    return "ntn_" + chars(r, string.digits, 11) + chars(r, B62, 35)


def vault_token(r: random.Random) -> str:
    return "hvs." + "CAESI" + chars(r, B64URL, r.randint(85, 100))


def grafana_token(r: random.Random) -> str:
    return "glsa_" + chars(r, B62, 32) + "_" + chars(r, HEX, 8)


def newrelic_key(r: random.Random) -> str:
    return "NRAK-" + chars(r, UPPER_ALNUM, 27)


def discord_bot(r: random.Random) -> str:
    bot_id = base64.b64encode(str(r.randint(10**17, 10**19 - 1)).encode()).decode().rstrip("=")
    return f"{bot_id}.{chars(r, B64URL, 6)}.{chars(r, B64URL, 38)}"


def telegram_bot(r: random.Random) -> str:
    return f"{r.randint(10**8, 10**10 - 1)}:AA{chars(r, B64URL, 33)}"


def databricks_token(r: random.Random) -> str:
    return "dapi" + chars(r, HEX, 32)


def groq_key(r: random.Random) -> str:
    return "gsk_" + chars(r, B62, 52)


def replicate_token(r: random.Random) -> str:
    return "r8_" + chars(r, B62, 37)


def mailgun_key(r: random.Random) -> str:
    return f"{chars(r, HEX, 32)}-{chars(r, HEX, 8)}-{chars(r, HEX, 8)}"


def azure_account_key(r: random.Random) -> str:
    return base64.b64encode(r.randbytes(64)).decode()


def sas_signature(r: random.Random) -> str:
    return base64.b64encode(r.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")


def pem_body(r: random.Random, nbytes: int) -> str:
    raw = base64.b64encode(r.randbytes(nbytes)).decode()
    return "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))


def openssh_body(r: random.Random) -> str:
    raw = base64.b64encode(b"openssh-key-v1\x00" + r.randbytes(380)).decode()
    return "\n".join(raw[i : i + 70] for i in range(0, len(raw), 70))


def ssh_public(r: random.Random) -> str:
    return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + chars(r, B62 + "+/", 43)


# ---------------------------------------------------------------- assembling a paste


class Builder:
    """Collects what must go and what must stay while a shape formats its text."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.go: list[tuple[str, str]] = []
        self.stay: list[str] = []

    def secret(self, kind: str, value: str) -> str:
        assert kind in KINDS, kind
        self.go.append((kind, value))
        return value

    def keep(self, value: str) -> str:
        self.stay.append(value)
        return value

    def paste(self, shape: str, text: str) -> Paste:
        return Paste(
            shape=shape, text=text, must_go=list(dict.fromkeys(self.go)), must_stay=list(dict.fromkeys(self.stay))
        )

    # shorthands for the commonest values
    def pw(self) -> str:
        return self.secret("password", password(self.r))

    def url_pw(self) -> str:
        return self.secret("connection_string_password", url_safe_password(self.r))

    def email(self) -> str:
        return self.secret("email", real_email(self.r))

    def home_user(self, prefix: str, user: str | None = None, sep: str = "/") -> str:
        return self.secret("home_path_user", f"{prefix}{sep}{user or username(self.r)}")


# ---------------------------------------------------------------- shapes carrying secrets or PII


def terraform_tfvars(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# terraform.tfvars  (prod) — why does plan say the password changed every time?
region            = "eu-west-{r.randint(1, 3)}"
db_instance_class = "db.t3.{r.choice(("medium", "large"))}"
db_username       = "app_admin"
db_password       = "{b.pw()}"
cloudflare_api_token = "{b.secret("api_key", chars(r, B64URL, 40))}"
datadog_api_key      = "{b.secret("api_key", chars(r, HEX, 32))}"
vpc_id            = "{b.keep("vpc-" + chars(r, HEX, 17))}"
ami               = "{b.keep("ami-" + chars(r, HEX, 17))}"
tags = {{
  owner = "{b.email()}"
}}
'''
    return b.paste("terraform_tfvars", text)


def ansible_group_vars(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    text = f'''---
# group_vars/webservers.yml (not vaulted yet, I know)
ansible_user: deploy
ansible_become_pass: {b.pw()}
mysql_root_password: "{b.pw()}"
app_secret_key: '{b.secret("api_key", chars(r, B62, 50))}'
ssh_key_path: "{b.home_user("/home", user)}/.ssh/id_ed25519"
admin_contacts:
  - name: {user}
    email: {b.email()}
    phone: "{b.secret("phone", phone(r))}"
nginx_version: "{b.keep(version(r))}"
'''
    return b.paste("ansible_group_vars", text)


def github_actions_env(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""name: release
on:
  push:
    tags: ["v*"]
env:
  NODE_AUTH_TOKEN: {b.secret("token", npm_token(r))}
  TWINE_PASSWORD: {b.secret("token", pypi_token(r))}
  SLACK_WEBHOOK: https://hooks.slack.com/services/T{chars(r, UPPER_ALNUM, 8)}/B{chars(r, UPPER_ALNUM, 10)}/{b.secret("token", chars(r, B62, 24))}
jobs:
  publish:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/checkout@{b.keep(git_sha(r))}
      - uses: actions/setup-node@v4
        with:
          registry-url: https://registry.npmjs.org
      - run: npm publish
        env:
          GH_TOKEN: {b.keep("${{ secrets.GITHUB_TOKEN }}")}
"""
    return b.paste("github_actions_env", text)


def helm_values(r: random.Random) -> Paste:
    b = Builder(r)
    pw = b.url_pw()
    text = f'''# values-prod.yaml
image:
  repository: ghcr.io/{r.choice(LAST)}/api
  tag: "{b.keep(version(r))}"
  digest: "{b.keep("sha256:" + sha256_hex(r))}"
postgresql:
  auth:
    postgresPassword: {b.pw()}
    password: "{b.pw()}"
externalDatabase:
  url: postgresql://api:{pw}@pg-primary.db.svc.cluster.local:5432/api?sslmode=require
redis:
  auth:
    password: {b.pw()}
sentry:
  dsn: https://{chars(r, HEX, 32)}@o{r.randint(10**5, 10**6)}.ingest.sentry.io/{r.randint(10**6, 10**7)}
podAnnotations:
  checksum/config: {b.keep(sha256_hex(r))}
'''
    return b.paste("helm_values", text)


def systemd_unit(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    text = f"""[Unit]
Description=Billing worker
After=network-online.target

[Service]
User={user}
WorkingDirectory={b.home_user("/home", user)}/billing
Environment="DATABASE_URL=mysql://billing:{b.url_pw()}@127.0.0.1:3306/billing"
Environment=STRIPE_SECRET_KEY={b.secret("api_key", stripe_live(r))}
Environment="SMTP_PASSWORD={b.pw()}" "SMTP_USER=billing"
ExecStart=/usr/bin/python3 -m billing.worker
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
    return b.paste("systemd_unit_env", text)


def java_properties(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""# src/main/resources/application-prod.properties
spring.datasource.url=jdbc:postgresql://db.internal:5432/orders?user=orders&password={b.url_pw()}&ssl=true
spring.datasource.hikari.maximum-pool-size=20
spring.mail.host=smtp.sendgrid.net
spring.mail.username=apikey
spring.mail.password={b.secret("api_key", sendgrid_key(r))}
app.jwt.signing-key={b.secret("api_key", base64.b64encode(r.randbytes(48)).decode())}
keystore.password={b.pw()}
management.endpoints.web.exposure.include=health,info
app.build.commit={b.keep(git_sha(r))}
"""
    return b.paste("java_properties", text)


def spring_application_yml(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""spring:
  datasource:
    url: jdbc:sqlserver://sql01.corp.local:1433;databaseName=Inventory;user=inv_app;password={b.url_pw()};encrypt=true
  rabbitmq:
    addresses: amqps://inventory:{b.url_pw()}@rabbit.corp.local:5671/prod
  security:
    oauth2:
      client:
        registration:
          okta:
            client-id: {b.keep("0oa" + chars(r, B62, 17))}
            client-secret: {b.secret("api_key", chars(r, B64URL, 40))}
  data:
    redis:
      password: '{b.pw()}'
logging:
  file:
    name: {b.keep("${LOG_PATH:/var/log/inventory}")}/app.log
"""
    return b.paste("spring_application_yml", text)


def django_settings(r: random.Random) -> Paste:
    b = Builder(r)
    name = " ".join(p.capitalize() for p in person(r))
    text = f'''# settings/production.py
SECRET_KEY = "{b.secret("api_key", chars(r, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50))}"
DEBUG = False
ADMINS = [("{name}", "{b.email()}")]
DATABASES = {{
    "default": {{
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "shop",
        "USER": "shop",
        "PASSWORD": "{b.pw()}",
        "HOST": "10.0.{r.randint(0, 9)}.{r.randint(2, 250)}",
    }}
}}
EMAIL_HOST_PASSWORD = '{b.pw()}'
AWS_ACCESS_KEY_ID = "{b.secret("api_key", aws_key_id(r))}"
AWS_SECRET_ACCESS_KEY = "{b.secret("api_key", aws_secret(r))}"
DEFAULT_FROM_EMAIL = "{b.keep(example_email(r))}"
CSRF_TRUSTED_ORIGINS = ["https://shop.example.com"]
'''
    return b.paste("django_settings", text)


def rails_database_yml(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""# config/database.yml
default: &default
  adapter: postgresql
  encoding: unicode
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>

development:
  <<: *default
  database: myapp_development
  password: {b.keep('<%= ENV["DATABASE_PASSWORD"] %>')}

production:
  <<: *default
  url: postgres://myapp:{b.url_pw()}@myapp-db.{chars(r, string.ascii_lowercase + string.digits, 12)}.us-east-1.rds.amazonaws.com/myapp
  password: {b.pw()}

# config/credentials.yml.enc decrypted with `rails credentials:show`
secret_key_base: {b.secret("api_key", chars(r, HEX, 128))}
"""
    return b.paste("rails_database_yml", text)


def php_wp_config(r: random.Random) -> Paste:
    b = Builder(r)
    salt_alphabet = B62 + "!#%^&*()-_[]{}<>~+=,.;:/?|"
    salts = "\n".join(
        f"define( '{k}', '{b.secret('api_key', chars(r, salt_alphabet, 64))}' );"
        for k in ("AUTH_KEY", "SECURE_AUTH_KEY", "LOGGED_IN_KEY")
    )
    text = f'''<?php
// wp-config.php — site shows "Error establishing a database connection"
define( 'DB_NAME', 'wp_{r.choice(WORDS)}' );
define( 'DB_USER', 'wp_admin' );
define( 'DB_PASSWORD', '{b.pw()}' );
define( 'DB_HOST', 'localhost' );
define("WP_MAIL_SMTP_PASS", "{b.pw()}");
{salts}
$table_prefix = 'wp_';
'''
    return b.paste("php_wp_config", text)


def laravel_env(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''APP_NAME=Laravel
APP_ENV=production
APP_KEY=base64:{b.secret("api_key", base64.b64encode(r.randbytes(32)).decode())}
APP_URL=https://crm.{r.choice(COMPANY_DOMAINS)}
DB_CONNECTION=mysql
DB_PASSWORD={b.pw()}
MAIL_USERNAME={b.email()}
MAIL_PASSWORD="{b.pw()}"
PUSHER_APP_SECRET={b.secret("api_key", chars(r, HEX, 20))}
SHOPIFY_ACCESS_TOKEN={b.secret("token", shopify_token(r))}
AWS_BUCKET=
REDIS_PASSWORD=null
'''
    return b.paste("laravel_env", text)


def go_sdk_init(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''package main

import (
	"github.com/stripe/stripe-go/v76"
	"github.com/sashabaranov/go-openai"
)

func main() {{
	stripe.Key = "{b.secret("api_key", stripe_live(r))}"
	client := openai.NewClient("{b.secret("api_key", openai_key(r))}")
	dsn := "host=pg.internal user=ledger password={b.url_pw()} dbname=ledger sslmode=disable"
	_ = dsn
	// panic: runtime error at {b.home_user("/Users")}/go/src/ledger/main.go:{r.randint(10, 300)}
}}
'''
    return b.paste("go_sdk_init", text)


def rust_sdk_init(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''use aws_sdk_s3::config::Credentials;

let creds = Credentials::new(
    "{b.secret("api_key", aws_key_id(r))}",
    "{b.secret("api_key", aws_secret(r))}",
    None, None, "hardcoded",
);
let pool = PgPoolOptions::new()
    .connect("postgres://svc:{b.url_pw()}@localhost/app").await?;
let discord = Client::builder("{b.secret("token", discord_bot(r))}", GatewayIntents::all());
// error[E0308]: mismatched types --> {b.home_user("/home")}/code/bot/src/main.rs:{r.randint(10, 99)}:5
'''
    return b.paste("rust_sdk_init", text)


def node_sdk_init(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''// lib/clients.ts
import Anthropic from "@anthropic-ai/sdk";
import {{ LinearClient }} from "@linear/sdk";
import {{ Client as Notion }} from "@notionhq/client";

export const anthropic = new Anthropic({{ apiKey: "{b.secret("api_key", anthropic_key(r))}" }});
export const linear = new LinearClient({{ apiKey: '{b.secret("api_key", linear_key(r))}' }});
export const notion = new Notion({{ auth: `{b.secret("token", notion_token(r))}` }});
export const groqKey = process.env.GROQ_API_KEY ?? "{b.secret("api_key", groq_key(r))}";
const mongo = new MongoClient("mongodb+srv://app-user:{b.url_pw()}@cluster0.{chars(r, string.ascii_lowercase + string.digits, 5)}.mongodb.net/?retryWrites=true");
// fallback for local dev only
const fallback = {b.keep("process.env.ANTHROPIC_API_KEY")};
'''
    return b.paste("node_sdk_init", text)


def python_dict_literal(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''CONFIG = {{
    "replicate": {{"api_token": "{b.secret("token", replicate_token(r))}"}},
    "databricks": {{"host": "https://adb-{r.randint(10**15, 10**16)}.{r.randint(1, 19)}.azuredatabricks.net",
                   "token": "{b.secret("token", databricks_token(r))}"}},
    'mailgun': {{'api_key': '{b.secret("api_key", mailgun_key(r))}', 'domain': 'mg.{r.choice(COMPANY_DOMAINS)}'}},
    "smtp": dict(user="alerts", password="{b.pw()}", port=587),
    "run_id": "{b.keep(a_uuid(r))}",
    "example_key": "{b.keep("sk-...your key...")}",
}}
'''
    return b.paste("python_dict_literal", text)


def json_log_auth(r: random.Random) -> Paste:
    b = Builder(r)
    lines = []
    for _ in range(r.randint(2, 4)):
        entry = {
            "ts": f"2025-0{r.randint(1, 9)}-1{r.randint(0, 9)}T0{r.randint(0, 9)}:{r.randint(10, 59)}:07.{r.randint(100, 999)}Z",
            "level": r.choice(("info", "warn", "error")),
            "request_id": b.keep(a_uuid(r)),
            "method": "POST",
            "path": "/v1/charges",
            "headers": {
                "authorization": "Bearer " + b.secret("token", jwt(r)),
                "x-api-key": b.secret("api_key", chars(r, B62, 40)),
                "user-agent": f"okhttp/{b.keep(version(r))}",
            },
            "user": {"email": b.email()},
        }
        lines.append(json.dumps(entry))
    return b.paste("json_log_auth_headers", "\n".join(lines) + "\n")


def http_request_dump(r: random.Random) -> Paste:
    b = Builder(r)
    user = r.choice(("admin", "ops", "svc_report"))
    pw = password(r)
    basic = base64.b64encode(f"{user}:{pw}".encode()).decode()
    text = f'''> GET /api/v2/reports?from=2025-01-01 HTTP/1.1
> Host: reports.{r.choice(COMPANY_DOMAINS)}
> Authorization: Basic {b.secret("password", basic)}
> Cookie: _ga=GA1.2.{r.randint(10**8, 10**9)}.{r.randint(10**9, 2 * 10**9)}; session={b.secret("token", session_token(r))}; theme=dark
> X-CSRF-Token: {b.secret("token", chars(r, B64URL, 43))}
> Accept: */*
>
< HTTP/1.1 401 Unauthorized
< ETag: "{b.keep(chars(r, HEX, 32))}"
< WWW-Authenticate: Basic realm="reports"
'''
    return b.paste("http_request_dump", text)


def db_cli_history(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    host = r.choice(HOSTS)
    prompt = b.secret("home_path_user", f"{user}@{host}")
    text = f"""{prompt}:~$ history | tail -8
  501  mysql -u root -p{b.pw()} -h 127.0.0.1 shop
  502  PGPASSWORD='{b.pw()}' psql -h db.internal -U reporting -d analytics
  503  redis-cli -h cache.internal -a '{b.pw()}' --no-auth-warning INFO
  504  mongosh "mongodb://admin:{b.url_pw()}@mongo-0.mongo:27017/admin?authSource=admin"
  505  twine upload -u __token__ -p {b.secret("token", pypi_token(r))} dist/*
  506  curl -su ops:{b.pw()} https://grafana.internal/api/health
  507  mysqldump --user=backup --password={b.pw()} --all-databases > /tmp/all.sql
  508  git log --oneline -1   # {b.keep(git_sha(r, 7))}
"""
    return b.paste("db_cli_history", text)


def connection_uri_list(r: random.Random) -> Paste:
    b = Builder(r)
    at_pw = f"{r.choice(WORDS).capitalize()}@{r.randint(10, 99)}{r.choice(WORDS)}"
    text = f"""Which of these is the right format for SQLAlchemy? I tried all of them:

postgresql+psycopg://etl:{b.url_pw()}@warehouse.internal:5432/dw
redis://:{b.secret("connection_string_password", url_safe_password(r))}@cache.internal:6379/0
rediss://default:{b.url_pw()}@{r.choice(WORDS)}-{r.randint(1000, 9999)}.upstash.io:6379
mysql://root:{b.secret("connection_string_password", at_pw)}@localhost:3306/app
amqp://guest:guest@localhost:5672//
mssql+pyodbc://sa:{b.url_pw()}@sqlserver/master?driver=ODBC+Driver+18+for+SQL+Server
Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:srv.database.windows.net,1433;Uid=app;Pwd={b.url_pw()};Encrypt=yes;
Server=myServer;Database=myDb;User Id=sa;Password={b.url_pw()};TrustServerCertificate=True
oracle://scott:{b.url_pw()}@oradb:1521/?service_name=ORCLPDB1
the docs say {b.keep("postgresql://USER:PASSWORD@HOST:5432/DB")} but that gives me a DNS error
"""
    return b.paste("connection_uri_list", text)


def markdown_credentials_table(r: random.Random) -> Paste:
    b = Builder(r)
    rows = []
    for svc in r.sample(("Staging DB", "Grafana", "Jenkins", "pgAdmin", "RabbitMQ UI", "Kibana", "Airflow"), 4):
        rows.append(f"| {svc} | {r.choice(('admin', 'ops', username(r)))} | `{b.pw()}` | {b.email()} |")
    text = "## Shared logins (team wiki)\n\n| Service | User | Password | Owner |\n|---|---|---|---|\n"
    text += "\n".join(rows)
    text += f"\n| Prod DB | app | {b.keep('*see 1Password*')} | {b.keep(example_email(r))} |\n\nCan you turn this into a YAML file?\n"
    return b.paste("markdown_credentials_table", text)


def ini_pypirc_odbc(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""; ~/.pypirc
[distutils]
index-servers = pypi testpypi

[pypi]
username = __token__
password = {b.secret("token", pypi_token(r))}

; /etc/odbc.ini
[warehouse]
Driver = PostgreSQL Unicode
Servername = dw.internal
Username = analyst
Password = {b.pw()}
Port = 5432

[pgadmin]
master_password={b.pw()}
"""
    return b.paste("ini_pypirc_odbc", text)


def toml_secrets(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# .streamlit/secrets.toml
openai_api_key = "{b.secret("api_key", openai_key(r))}"
hf_token = '{b.secret("token", hf_token(r))}'

[connections.snowflake]
account = "{chars(r, string.ascii_lowercase, 7)}-{chars(r, string.ascii_lowercase, 7)}"
user = "ANALYTICS_SVC"
password = """{b.pw()}"""
warehouse = "COMPUTE_WH"

[connections.postgresql]
url = "postgresql://dash:{b.url_pw()}@db.{chars(r, string.ascii_lowercase, 20)}.supabase.co:5432/postgres"

[tool.poetry.dependencies]
python = "{b.keep("^3.11")}"
'''
    return b.paste("toml_secrets", text)


def powershell_env(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    home = b.home_user("C:\\Users", user, "\\")
    text = f'''PS {home}\\source\\repos\\Api> $env:AZURE_OPENAI_API_KEY = "{b.secret("api_key", chars(r, HEX, 32))}"
PS C:\\Users\\{user}\\source\\repos\\Api> $env:ConnectionStrings__Default = "Server=(localdb)\\MSSQLLocalDB;Database=Api;User Id=api;Password={b.url_pw()};"
PS C:\\Users\\{user}\\source\\repos\\Api> [Environment]::SetEnvironmentVariable("GITHUB_TOKEN", "{b.secret("token", github_pat(r))}", "User")
PS C:\\Users\\{user}\\source\\repos\\Api> $cred = New-Object PSCredential("admin", (ConvertTo-SecureString "{b.pw()}" -AsPlainText -Force))
PS C:\\Users\\{user}\\source\\repos\\Api> dotnet run
Unhandled exception. System.InvalidOperationException: No service for type 'IMailer' has been registered.
'''
    return b.paste("powershell_env", text)


def windows_paths(r: random.Random) -> Paste:
    b = Builder(r)
    u1, u2, u3 = username(r), username(r), username(r)
    lower_home = b.home_user("c:\\users", u1, "\\")
    upper_home = b.home_user("C:\\Users", u1, "\\")
    text = f'''Traceback (most recent call last):
  File "{lower_home}\\appdata\\local\\programs\\python\\python311\\lib\\site-packages\\torch\\__init__.py", line 141, in <module>
    raise err
OSError: [WinError 126] The specified module could not be found. Error loading "{upper_home}\\AppData\\Local\\Programs\\Python\\Python311\\lib\\site-packages\\torch\\lib\\fbgemm.dll"

Same thing from WSL:
  File "{b.home_user("/mnt/c/Users", u2)}/Projects/vision/train.py", line 12
and on the Silverblue box: {b.home_user("/var/home", u3)}/.local/lib/python3.12/site-packages
(installed torch {b.keep("2.3.1+cu121")})
'''
    return b.paste("windows_paths", text)


def shell_prompt_session(r: random.Random) -> Paste:
    b = Builder(r)
    user, host = username(r), r.choice(HOSTS)
    prompt = b.secret("home_path_user", f"{user}@{host}")
    text = f"""{prompt}:~/projects/ingest$ ls -la .env*
-rw-r--r-- 1 {user} {user}  612 Mar  3 10:14 .env
-rw-r--r-- 1 {user} {user}  401 Mar  3 10:14 .env.example
{prompt}:~/projects/ingest$ cat .env
KAFKA_SASL_PASSWORD={b.pw()}
VAULT_TOKEN={b.secret("token", vault_token(r))}
{prompt}:~/projects/ingest$ cat .env.example
KAFKA_SASL_PASSWORD={b.keep("<kafka-password>")}
VAULT_TOKEN={b.keep("hvs.XXXXXXXXXXXXXXXXXXXXXXXX")}
{prompt}:~/projects/ingest$ python -m ingest
Error: {b.home_user("/home", user)}/projects/ingest/.venv/lib/python3.12/site-packages/aiokafka/conn.py: SASL authentication failed
"""
    return b.paste("shell_prompt_session", text)


def python_traceback_home(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    home = b.home_user("/home", user)
    mac = b.home_user("/Users")
    text = f'''Traceback (most recent call last):
  File "{home}/work/etl/run.py", line 88, in <module>
    main()
  File "{home}/work/etl/run.py", line 61, in main
    conn = psycopg2.connect(dsn)
  File "{home}/.pyenv/versions/3.10.13/lib/python3.10/site-packages/psycopg2/__init__.py", line 122, in connect
    conn = _connect(dsn, connection_factory=connection_factory, **kwasync)
psycopg2.OperationalError: connection to server at "db.internal" (10.2.0.14), port 5432 failed: FATAL:  password authentication failed for user "etl"
dsn was: dbname=etl user=etl password={b.url_pw()} host=db.internal

(works on my laptop at {mac}/work/etl with the same code, commit {b.keep(git_sha(r, 12))})
'''
    return b.paste("python_traceback_home", text)


def csv_customers(r: random.Random) -> Paste:
    b = Builder(r)
    rows = ["customer_id,full_name,email,phone,card_number,iban,ssn,signup_date"]
    for i in range(r.randint(3, 5)):
        first, last = person(r)
        signup = f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        mail = f"{r.choice((first, first[0]))}.{last}{r.choice(('', str(r.randint(1, 99))))}@{r.choice(MAIL_DOMAINS)}"
        rows.append(
            ",".join(
                (
                    str(10_000 + r.randrange(90_000)),
                    f"{first.capitalize()} {last.capitalize()}",
                    b.secret("email", mail),
                    f'"{b.secret("phone", phone(r))}"',
                    f'"{b.secret("card", card(r))}"',
                    b.secret("iban", iban(r).replace(" ", "")),
                    b.secret("ssn", ssn(r)),
                    b.keep(signup) if i == 0 else signup,
                )
            )
        )
    text = "Why does pandas read the phone column as float? Here's the head of the file:\n\n" + "\n".join(rows) + "\n"
    return b.paste("csv_customers", text)


def sql_insert_pii(r: random.Random) -> Paste:
    b = Builder(r)
    values = []
    for _ in range(r.randint(2, 4)):
        first, last = person(r)
        values.append(
            f"  ('{first.capitalize()}', '{last.capitalize()}', '{b.email()}', '{b.secret('phone', phone(r))}', "
            f"'{b.secret('ssn', ssn(r))}', '{b.secret('iban', iban(r))}')"
        )
    text = (
        "-- seed.sql: this fails with 'value too long for type character varying(20)'\n"
        "INSERT INTO employees (first_name, last_name, email, phone, ssn, payroll_iban) VALUES\n"
        + ",\n".join(values)
        + ";\n"
        + f"-- migration {b.keep('20240311_114502_add_payroll')} applied by flyway {b.keep(version(r))}\n"
    )
    return b.paste("sql_insert_pii", text)


def chat_bot_tokens(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# bot.py — the Telegram part works, Discord says "Improper token has been passed"
import os, discord, telegram
from slack_bolt import App

TELEGRAM_TOKEN = "{b.secret("token", telegram_bot(r))}"
DISCORD_TOKEN = "{b.secret("token", discord_bot(r))}"
app = App(token="{b.secret("token", slack_bot(r))}",
          signing_secret="{b.secret("api_key", chars(r, HEX, 32))}")
GUILD_ID = {b.keep(str(r.randint(10**17, 10**18)))}
'''
    return b.paste("chat_bot_tokens", text)


def gcp_service_account(r: random.Random) -> Paste:
    b = Builder(r)
    project = f"{r.choice(WORDS)}-{r.choice(WORDS)}-{r.randint(100000, 999999)}"
    body = b.secret("private_key", pem_body(r, 1200).replace("\n", "\\n"))
    key_id = chars(r, HEX, 40)
    text = f'''{{
  "type": "service_account",
  "project_id": "{project}",
  "private_key_id": "{key_id}",
  "private_key": "-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n",
  "client_email": "ci-deployer@{project}.iam.gserviceaccount.com",
  "client_id": "{r.randint(10**20, 10**21)}",
  "auth_uri": "https://accounts.google.com/o/oauth2/auth",
  "token_uri": "https://oauth2.googleapis.com/token"
}}
google.auth.exceptions.RefreshError: ('invalid_grant: Invalid JWT Signature.', ...)
'''
    return b.paste("gcp_service_account_json", text)


def azure_connection_strings(r: random.Random) -> Paste:
    b = Builder(r)
    account = chars(r, string.ascii_lowercase + string.digits, 12)
    text = f'''{{
  "IsEncrypted": false,
  "Values": {{
    "AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName={account};AccountKey={b.secret("api_key", azure_account_key(r))};EndpointSuffix=core.windows.net",
    "ServiceBus": "Endpoint=sb://{account}-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={b.secret("api_key", base64.b64encode(r.randbytes(32)).decode())}",
    "BlobSas": "https://{account}.blob.core.windows.net/uploads?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https&sig={b.secret("token", sas_signature(r))}",
    "CosmosDb": "AccountEndpoint=https://{account}.documents.azure.com:443/;AccountKey={b.secret("api_key", azure_account_key(r))};",
    "LocalDev": "{b.keep("UseDevelopmentStorage=true")}",
    "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"
  }}
}}
'''
    return b.paste("azure_local_settings_json", text)


def aws_credentials_file(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""$ cat ~/.aws/credentials
[default]
aws_access_key_id = {b.secret("api_key", aws_key_id(r))}
aws_secret_access_key = {b.secret("api_key", aws_secret(r))}

[prod-admin]
aws_access_key_id={b.secret("api_key", aws_key_id(r))}
aws_secret_access_key={b.secret("api_key", aws_secret(r))}
aws_session_token={b.secret("token", chars(r, B62 + "+/", r.randint(300, 420)))}

[docs-example]
aws_access_key_id = {b.keep(AWS_EXAMPLE_KEY_ID)}
aws_secret_access_key = {b.keep(AWS_EXAMPLE_SECRET)}
$ aws sts get-caller-identity --profile prod-admin
An error occurred (ExpiredToken) when calling the GetCallerIdentity operation
"""
    return b.paste("aws_credentials_file", text)


def gitlab_ci_variables(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# .gitlab-ci.yml
variables:
  DOCKER_AUTH_CONFIG: '{{"auths":{{"registry.gitlab.com":{{"auth":"{b.secret("password", base64.b64encode(("ci:" + password(r)).encode()).decode())}"}}}}}}'
  DO_TOKEN: "{b.secret("token", digitalocean_token(r))}"
  GITLAB_TOKEN: {b.secret("token", gitlab_pat(r))}
  IMAGE: $CI_REGISTRY_IMAGE:$CI_COMMIT_SHORT_SHA

deploy:
  image: digitalocean/doctl:{b.keep(version(r))}
  script:
    - doctl auth init -t "$DO_TOKEN"
    - git push https://oauth2:{b.secret("token", gitlab_pat(r))}@gitlab.com/{r.choice(LAST)}/infra.git HEAD:main
'''
    return b.paste("gitlab_ci_variables", text)


def browser_devtools_storage(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''> localStorage.getItem("auth")
'{{"accessToken":"{b.secret("token", jwt(r))}","refreshToken":"{b.secret("token", chars(r, B64URL, 64))}","user":{{"id":"{b.keep(a_uuid(r))}","email":"{b.email()}"}}}}'
> document.cookie
'connect.sid={b.secret("token", "s%3A" + chars(r, B64URL, 32) + "." + chars(r, B64URL, 43))}; _gid=GA1.2.{r.randint(10**8, 10**9)}.{r.randint(10**9, 2 * 10**9)}'
Why does the refresh call return 403?
'''
    return b.paste("browser_devtools_storage", text)


def k8s_secret_pem(r: random.Random) -> Paste:
    b = Builder(r)
    indented = b.secret("private_key", "\n".join("    " + line for line in pem_body(r, 1190).split("\n")))
    text = f"""apiVersion: v1
kind: Secret
metadata:
  name: api-tls
type: kubernetes.io/tls
stringData:
  db-password: {b.pw()}
  tls.key: |
    -----BEGIN RSA PRIVATE KEY-----
{indented}
    -----END RSA PRIVATE KEY-----
  tls.crt: |
    -----BEGIN CERTIFICATE-----
    {b.keep(chars(r, B62, 64))}
    -----END CERTIFICATE-----
"""
    return b.paste("k8s_secret_pem", text)


def openssh_key_cat(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    prompt = b.secret("home_path_user", f"{user}@{r.choice(HOSTS)}")
    text = f"""{prompt}:~$ cat ~/.ssh/id_ed25519
-----BEGIN OPENSSH PRIVATE KEY-----
{b.secret("private_key", openssh_body(r))}
-----END OPENSSH PRIVATE KEY-----
{prompt}:~$ cat ~/.ssh/id_ed25519.pub
{b.keep(ssh_public(r))} {user}@laptop
{prompt}:~$ ssh -T git@github.com
git@github.com: Permission denied (publickey).
"""
    return b.paste("openssh_key_cat", text)


def putty_key(r: random.Random) -> Paste:
    b = Builder(r)
    priv = "\n".join(chars(r, B62 + "+/", 64) for _ in range(r.randint(3, 6)))
    text = f"""PuTTY-User-Key-File-3: ssh-rsa
Encryption: none
Comment: rsa-key-2024{r.randint(1000, 1231)}
Public-Lines: 2
{b.keep(chars(r, B62 + "+/", 64))}
{chars(r, B62 + "+/", 40)}
Private-Lines: {priv.count(chr(10)) + 1}
{b.secret("private_key", priv)}
Private-MAC: {chars(r, HEX, 64)}

WinSCP says "Server refused our key" with this .ppk, what's wrong?
"""
    return b.paste("putty_ppk", text)


def observability_config(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# grafana provisioning + newrelic + vault agent, all in one compose override
services:
  grafana-sync:
    environment:
      GRAFANA_SA_TOKEN: "{b.secret("token", grafana_token(r))}"
      GF_SECURITY_ADMIN_PASSWORD: {b.pw()}
  newrelic-infra:
    environment:
      NRIA_LICENSE_KEY: {b.secret("api_key", chars(r, HEX, 36) + "NRAL")}
      NEW_RELIC_API_KEY: {b.secret("api_key", newrelic_key(r))}
  vault-agent:
    command: ["vault", "login", "{b.secret("token", vault_token(r))}"]
    image: hashicorp/vault@{b.keep("sha256:" + sha256_hex(r))}
'''
    return b.paste("observability_compose_override", text)


def notebook_cell(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''In [3]:
import os
os.environ["OPENAI_API_KEY"] = "{b.secret("api_key", openai_key(r))}"
os.environ['ANTHROPIC_API_KEY'] = '{b.secret("api_key", anthropic_key(r))}'
from huggingface_hub import login
login(token="{b.secret("token", hf_token(r))}")
client = Groq(api_key="{b.secret("api_key", groq_key(r))}")

---------------------------------------------------------------------------
AuthenticationError                       Traceback (most recent call last)
File {b.home_user("/Users")}/miniforge3/envs/llm/lib/python3.11/site-packages/openai/_base_client.py:1037, in SyncAPIClient._request
AuthenticationError: Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: sk-proj-********', 'code': 'invalid_api_key'}}}}
'''
    return b.paste("notebook_cell", text)


def ruby_initializer(r: random.Random) -> Paste:
    b = Builder(r)
    sid = "AC" + chars(r, HEX, 32)
    text = f'''# config/initializers/notifications.rb
Twilio.configure do |config|
  config.account_sid = "{sid}"
  config.auth_token = "{b.secret("api_key", chars(r, HEX, 32))}"
end
TWILIO_API_KEY = ["{b.secret("api_key", twilio_api_key(r))}", "{b.secret("api_key", chars(r, B62, 32))}"]
ActionMailer::Base.smtp_settings = {{
  user_name: "apikey",
  password: "{b.secret("api_key", sendgrid_key(r))}",
  address: "smtp.sendgrid.net",
}}
Stripe.api_key = ENV.fetch("STRIPE_KEY") {{ "{b.secret("api_key", stripe_live(r))}" }}
Stripe.api_version = "{b.keep("2024-06-20")}"
'''
    return b.paste("ruby_initializer", text)


def doctl_config(r: random.Random) -> Paste:
    b = Builder(r)
    user = username(r)
    text = f"""$ cat {b.home_user("/home", user)}/.config/doctl/config.yaml
access-token: {b.secret("token", digitalocean_token(r))}
context: default
auth-contexts:
  personal: {b.secret("token", digitalocean_token(r))}
output: text
$ doctl kubernetes cluster kubeconfig save {b.keep(a_uuid(r))}
Error: GET https://api.digitalocean.com/v2/kubernetes/clusters: 401 Unable to authenticate you
"""
    return b.paste("doctl_config", text)


def support_ticket_prose(r: random.Random) -> Paste:
    b = Builder(r)
    first, last = person(r)
    text = (
        f"Can you help me write a polite reply to this ticket? Customer is {first.capitalize()} {last.capitalize()} "
        f"({b.email()}, mobile {b.secret('phone', phone(r))}). She says she was charged twice on the card ending "
        f"in {r.randint(1000, 9999)} — actually she pasted the whole number, {b.secret('card', card(r))}, and asks "
        f"for the refund to go to {b.secret('iban', iban(r))} instead. Her account login is {first}{r.randint(1, 99)} "
        f"and she put her password in the ticket too: {b.pw()}. Our template says to reply from "
        f"{b.keep('support@example.com')} and reference order {b.keep('ORD-' + str(r.randint(10**6, 10**7)))}.\n"
    )
    return b.paste("support_ticket_prose", text)


def dockerfile_args(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""FROM python:{b.keep("3.12.4-slim-bookworm")}@{b.keep("sha256:" + sha256_hex(r))}
ARG PIP_INDEX_URL=https://__token__:{b.secret("connection_string_password", chars(r, B64URL, 32))}@pkgs.dev.azure.com/{r.choice(LAST)}/_packaging/feed/pypi/simple/
ENV SENTRY_AUTH_TOKEN={b.secret("token", "sntrys_" + chars(r, B64URL, 120))}
ENV NPM_CONFIG_//registry.npmjs.org/:_authToken={b.secret("token", npm_token(r))}
RUN echo "machine github.com login x-access-token password {b.secret("token", github_pat(r))}" > /root/.netrc
COPY . /app
"""
    return b.paste("dockerfile_args", text)


def nginx_basic_auth(r: random.Random) -> Paste:
    b = Builder(r)
    creds = base64.b64encode(f"{r.choice(('grafana', 'admin', 'kibana'))}:{password(r)}".encode()).decode()
    text = f"""location /upstream/ {{
    proxy_pass http://10.0.{r.randint(0, 9)}.{r.randint(2, 250)}:3000/;
    proxy_set_header Authorization "Basic {b.secret("password", creds)}";
    proxy_set_header X-Api-Key {b.secret("api_key", chars(r, B62, 32))};
    proxy_set_header X-Request-Id $request_id;
}}
# /etc/nginx/.htpasswd
deploy:$apr1${chars(r, B62, 8)}${chars(r, B62 + "./", 22)}
"""
    return b.paste("nginx_basic_auth", text)


def git_remote_urls(r: random.Random) -> Paste:
    b = Builder(r)
    org = r.choice(LAST)
    text = f"""$ git remote -v
origin  https://{r.choice(FIRST)}:{b.secret("token", github_pat(r))}@github.com/{org}/platform.git (fetch)
upstream        https://x-token-auth:{b.secret("token", chars(r, B64URL, 40))}@bitbucket.org/{org}/platform.git (fetch)
$ cat ~/.git-credentials
https://{r.choice(FIRST)}:{b.secret("connection_string_password", url_safe_password(r))}@git.{r.choice(COMPANY_DOMAINS)}
$ git log -1 --format='%H %an <%ae>'
{b.keep(git_sha(r))} dependabot[bot] <{b.keep("49699333+dependabot[bot]@users.noreply.github.com")}>
"""
    return b.paste("git_remote_urls", text)


# ---------------------------------------------------------------- shapes carrying near-misses only


def package_lock_excerpt(r: random.Random) -> Paste:
    b = Builder(r)
    entries = []
    for name in r.sample(("lodash", "axios", "debug", "ms", "semver", "chalk", "ws", "undici"), 3):
        v = version(r)
        entries.append(
            f'''    "node_modules/{name}": {{
      "version": "{b.keep(v)}",
      "resolved": "https://registry.npmjs.org/{name}/-/{name}-{v}.tgz",
      "integrity": "{b.keep(sri_sha512(r))}"
    }}'''
        )
    text = '{\n  "name": "web",\n  "lockfileVersion": 3,\n  "packages": {\n' + ",\n".join(entries) + "\n  }\n}\n"
    return b.paste("package_lock_excerpt", "npm ci fails with EINTEGRITY on one of these:\n" + text)


def go_sum_cargo_lock(r: random.Random) -> Paste:
    b = Builder(r)
    h1 = "h1:" + base64.b64encode(r.randbytes(32)).decode()
    text = f'''go.sum:
github.com/jackc/pgx/v5 v{b.keep(version(r))} {b.keep(h1)}
github.com/jackc/pgx/v5 v{version(r)}/go.mod h1:{base64.b64encode(r.randbytes(32)).decode()}

Cargo.lock:
[[package]]
name = "tokio"
version = "1.{r.randint(30, 40)}.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "{b.keep(sha256_hex(r))}"

verifying github.com/jackc/pgx/v5: checksum mismatch — which one is wrong?
'''
    return b.paste("go_sum_cargo_lock", text)


def pip_hashes(r: random.Random) -> Paste:
    b = Builder(r)
    lines = [
        f"{pkg}=={b.keep(version(r))} \\\n    --hash=sha256:{b.keep(sha256_hex(r))}"
        for pkg in r.sample(("requests", "urllib3", "certifi", "idna", "charset-normalizer", "pydantic"), 3)
    ]
    text = "# requirements.txt (pip-compile --generate-hashes)\n" + "\n".join(lines)
    text += "\nERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n"
    return b.paste("pip_requirements_hashes", text)


def git_log_output(r: random.Random) -> Paste:
    b = Builder(r)
    lines = [
        f"commit {b.keep(git_sha(r))}\nAuthor: {name} <{b.keep(mail)}>\nDate:   Mon Mar {r.randint(1, 28)} 10:{r.randint(10, 59)}:00 2025 +0100\n\n    {msg}\n"
        for name, mail, msg in (
            ("Jane Doe", "jane.doe@example.com", "Bump version to " + version(r)),
            ("renovate[bot]", "29139614+renovate[bot]@users.noreply.github.com", "chore(deps): update actions/cache"),
        )
    ]
    text = "git bisect points here, which change broke the build?\n\n" + "\n".join(lines)
    text += f"\nMerge: {b.keep(git_sha(r, 7))} {git_sha(r, 7)}\n"
    return b.paste("git_log_output", text)


def docker_images_output(r: random.Random) -> Paste:
    b = Builder(r)
    rows = [
        f"{repo:<32}{tag:<12}{b.keep(chars(r, HEX, 12))}   {r.randint(2, 9)} days ago   {r.randint(50, 900)}MB"
        for repo, tag in (("ghcr.io/acme/api", version(r)), ("postgres", "16-alpine"), ("redis", "7.2"))
    ]
    text = "$ docker images\nREPOSITORY                      TAG         IMAGE ID       CREATED       SIZE\n"
    text += "\n".join(rows)
    text += (
        f"\n$ docker inspect --format '{{{{.RepoDigests}}}}' redis:7.2\n[redis@{b.keep('sha256:' + sha256_hex(r))}]\n"
    )
    return b.paste("docker_images_output", text)


def env_example_placeholders(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""# .env.example — copy to .env and fill in
DATABASE_URL={b.keep("postgres://postgres:${POSTGRES_PASSWORD}@localhost:5432/app_dev")}
OPENAI_API_KEY={b.keep("sk-...")}
GITHUB_TOKEN={b.keep("ghp_" + "X" * 36)}
STRIPE_SECRET_KEY={b.keep("sk_live_" + "x" * 24)}
SLACK_BOT_TOKEN={b.keep("xoxb-your-bot-token")}
SMTP_PASSWORD={b.keep(placeholder(r, "password"))}
JWT_SECRET={b.keep("${JWT_SECRET}")}
ADMIN_EMAIL={b.keep(example_email(r))}
HF_TOKEN={b.keep("hf_" + "*" * 10)}
"""
    return b.paste("env_example_placeholders", text)


def aws_docs_example(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""From the AWS docs, I set these and still get InvalidClientTokenId:

export AWS_ACCESS_KEY_ID={b.keep(AWS_EXAMPLE_KEY_ID)}
export AWS_SECRET_ACCESS_KEY={b.keep(AWS_EXAMPLE_SECRET)}
export AWS_DEFAULT_REGION=us-west-2
aws iam get-role --role-name {b.keep("arn:aws:iam::123456789012:role/S3Access")}
aws s3 ls s3://{b.keep("amzn-s3-demo-bucket")}/ --request-payer requester
"""
    return b.paste("aws_docs_example", text)


def stripe_test_mode_docs(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""Testing checkout locally with the documented test cards:
- success: {b.keep(TEST_CARDS[0])}
- visa debit: {b.keep(TEST_CARDS[1])}
- mastercard: {b.keep(TEST_CARDS[2])}, amex {b.keep(TEST_CARDS[3])}, any CVC, expiry 12/34
Webhook event id {b.keep("evt_" + chars(r, B62, 24))}, payment intent {b.keep("pi_" + chars(r, B62, 24))}
Why does the webhook say "No signatures found matching the expected signature for payload"?
"""
    return b.paste("stripe_test_mode_docs", text)


def k8s_manifest_refs(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""        env:
          - name: DB_PASSWORD
            valueFrom:
              secretKeyRef:
                name: api-db
                key: password
          - name: API_TOKEN
            value: {b.keep("{{ .Values.api.token | quote }}")}
          - name: REDIS_URL
            value: {b.keep("redis://:$(REDIS_PASSWORD)@redis:6379/0")}
        image: registry.internal/api@{b.keep("sha256:" + sha256_hex(r))}
      uid: {b.keep(a_uuid(r))}
"""
    return b.paste("k8s_manifest_refs", text)


def code_reading_secrets(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""def login(request):
    password = {b.keep('request.form["password"]')}
    api_key = {b.keep('os.environ.get("STRIPE_API_KEY")')}
    token = {b.keep("secrets.token_urlsafe(32)")}
    if not check_password_hash(user.password_hash, password):
        raise Unauthorized()
    db_password = {b.keep("settings.DATABASE_PASSWORD")}
    key = {b.keep('getpass.getpass("Passphrase: ")')}

CREATE TABLE users (id UUID PRIMARY KEY, email TEXT, password_hash TEXT, api_key CHAR(64));
"""
    return b.paste("code_reading_secrets", text)


def ci_log_masked(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""Run actions/cache@{b.keep(git_sha(r))}
Cache restored from key: {b.keep("Linux-pip-" + sha256_hex(r))}
Run docker login ghcr.io -u $GITHUB_ACTOR --password-stdin
  docker login ghcr.io -u $GITHUB_ACTOR --password-stdin <<< "***"
  env:
    CR_PAT: ***
WARNING! Your password will be stored unencrypted in /home/runner/.docker/config.json.
Error: buildx failed with: ERROR: failed to solve: {b.keep("sha256:" + sha256_hex(r))}: not found
Job id {b.keep(a_uuid(r))}
"""
    return b.paste("ci_log_masked", text)


def terraform_var_refs(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''resource "aws_db_instance" "main" {{
  engine_version      = "{b.keep("16." + str(r.randint(1, 4)))}"
  username            = "app"
  password            = {b.keep("var.db_password")}
  kms_key_id          = {b.keep("data.aws_kms_key.rds.arn")}
}}
output "db_password" {{
  value     = {b.keep("random_password.db.result")}
  sensitive = true
}}
# state lineage {b.keep(a_uuid(r))}, serial {r.randint(1, 400)}
'''
    return b.paste("terraform_var_refs", text)


def kafka_jaas_properties(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''# client.properties for kafka-console-consumer
bootstrap.servers=pkc-{chars(r, string.ascii_lowercase + string.digits, 5)}.eu-central-1.aws.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{chars(r, UPPER_ALNUM, 16)}" password="{b.secret("api_key", chars(r, B62 + "+/", 64))}";
schema.registry.basic.auth.user.info={chars(r, UPPER_ALNUM, 16)}:{b.secret("api_key", chars(r, B62 + "+/", 64))}
ssl.truststore.password={b.pw()}
group.id={b.keep("orders-consumer-" + a_uuid(r))}
'''
    return b.paste("kafka_jaas_properties", text)


def maven_settings_xml(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""<!-- ~/.m2/settings.xml : 401 on deploy to Nexus -->
<settings>
  <servers>
    <server>
      <id>nexus-releases</id>
      <username>deployer</username>
      <password>{b.pw()}</password>
    </server>
    <server>
      <id>github</id>
      <username>{r.choice(FIRST)}</username>
      <password>{b.secret("token", github_pat(r))}</password>
    </server>
    <server>
      <id>ossrh</id>
      <password>{b.keep("${env.OSSRH_PASSWORD}")}</password>
    </server>
  </servers>
  <profiles><profile><properties>
    <gpg.passphrase>{b.pw()}</gpg.passphrase>
  </properties></profile></profiles>
</settings>
"""
    return b.paste("maven_settings_xml", text)


def postman_environment(r: random.Random) -> Paste:
    b = Builder(r)
    env = {
        "id": b.keep(a_uuid(r)),
        "name": "Production",
        "values": [
            {
                "key": "baseUrl",
                "value": f"https://api.{r.choice(COMPANY_DOMAINS)}",
                "type": "default",
                "enabled": True,
            },
            {"key": "apiKey", "value": b.secret("api_key", chars(r, B62, 48)), "type": "secret", "enabled": True},
            {"key": "adminPassword", "value": b.pw(), "type": "secret", "enabled": True},
            {"key": "accessToken", "value": b.secret("token", jwt(r)), "type": "default", "enabled": True},
            {"key": "testUserEmail", "value": b.email(), "type": "default", "enabled": True},
        ],
        "_postman_variable_scope": "environment",
    }
    return b.paste("postman_environment_json", json.dumps(env, indent=2) + "\n")


def docker_inspect_env(r: random.Random) -> Paste:
    b = Builder(r)
    env = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"POSTGRES_PASSWORD={b.pw()}",
        f"MINIO_ROOT_PASSWORD={b.pw()}",
        f"N8N_ENCRYPTION_KEY={b.secret('api_key', chars(r, B62, 32))}",
        f"DATABASE_URL=postgresql://n8n:{b.url_pw()}@postgres:5432/n8n",
        f"NODE_VERSION={b.keep(version(r))}",
    ]
    text = "$ docker inspect n8n --format '{{json .Config.Env}}' | jq\n" + json.dumps(env, indent=2) + "\n"
    return b.paste("docker_inspect_env", text)


def positional_credentials_code(r: random.Random) -> Paste:
    b = Builder(r)
    text = f'''import requests, smtplib, psycopg2

resp = requests.get("https://jira.{r.choice(COMPANY_DOMAINS)}/rest/api/2/search",
                    auth=("{b.email()}", "{b.secret("token", "ATATT3xFfGF0" + chars(r, B64URL, 180))}"))
server = smtplib.SMTP_SSL("smtp.gmail.com", 465)
server.login("{b.email()}", "{b.secret("password", " ".join(chars(r, string.ascii_lowercase, 4) for _ in range(4)))}")
conn = psycopg2.connect(host="db.internal", user="report", password="{b.pw()}", dbname="sales")
// Java, same problem:
Connection c = DriverManager.getConnection("jdbc:mysql://db:3306/sales", "report", "{b.pw()}");
'''
    return b.paste("positional_credentials_code", text)


def ansible_inventory_ini(r: random.Random) -> Paste:
    b = Builder(r)
    hosts = "\n".join(
        f"web{i} ansible_host=10.1.{r.randint(0, 9)}.{r.randint(2, 250)} ansible_user=ubuntu ansible_password={b.pw()} ansible_become_password={b.pw()}"
        for i in range(1, r.randint(3, 4))
    )
    text = f"""# inventory/hosts.ini
[web]
{hosts}

[db]
db1 ansible_host=10.1.9.10 ansible_ssh_private_key_file={b.home_user("/home")}/.ssh/deploy_rsa

[all:vars]
ansible_python_interpreter=/usr/bin/python3
"""
    return b.paste("ansible_inventory_ini", text)


def yaml_user_list(r: random.Random) -> Paste:
    b = Builder(r)
    users = "\n".join(
        f"  - name: {username(r)}\n    password: {b.pw()}\n    tags: {r.choice(('administrator', 'monitoring', 'management'))}"
        for _ in range(r.randint(2, 4))
    )
    text = f"""# rabbitmq definitions.yaml (converted from JSON) — users can't log in after import
users:
{users}
  - name: guest
    password_hash: {b.keep(base64.b64encode(r.randbytes(36)).decode())}
    hashing_algorithm: rabbit_password_hashing_sha256
vhosts:
  - name: /
"""
    return b.paste("yaml_user_list", text)


def openapi_security_schemes(r: random.Random) -> Paste:
    b = Builder(r)
    text = f"""components:
  securitySchemes:
    ApiKeyAuth:
      type: apiKey
      in: header
      name: {b.keep("X-API-Key")}
    BearerAuth:
      type: http
      scheme: bearer
      bearerFormat: JWT
paths:
  /v1/orders:
    get:
      parameters:
        - in: header
          name: Authorization
          example: {b.keep("Bearer <access_token>")}
        - in: query
          name: api_key
          example: {b.keep("YOUR_API_KEY")}
      x-request-id-example: {b.keep(a_uuid(r))}
Can the generator produce a client that reads the key from an env var?
"""
    return b.paste("openapi_security_schemes", text)


def tracing_ids_log(r: random.Random) -> Paste:
    b = Builder(r)
    lines = [
        f"{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)} WARN trace_id={b.keep(chars(r, HEX, 32))} span_id={chars(r, HEX, 16)} "
        f"etag={b.keep(hashlib.sha1(r.randbytes(8)).hexdigest())} nonce={b.keep(base64.b64encode(r.randbytes(16)).decode())} retrying upload"
        for _ in range(3)
    ]
    text = "OpenTelemetry shows retries but no error, logs:\n" + "\n".join(lines) + "\n"
    return b.paste("tracing_ids_log", text)


SECRET_SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    "terraform_tfvars": terraform_tfvars,
    "ansible_group_vars": ansible_group_vars,
    "github_actions_env": github_actions_env,
    "helm_values": helm_values,
    "systemd_unit_env": systemd_unit,
    "java_properties": java_properties,
    "spring_application_yml": spring_application_yml,
    "django_settings": django_settings,
    "rails_database_yml": rails_database_yml,
    "php_wp_config": php_wp_config,
    "laravel_env": laravel_env,
    "go_sdk_init": go_sdk_init,
    "rust_sdk_init": rust_sdk_init,
    "node_sdk_init": node_sdk_init,
    "python_dict_literal": python_dict_literal,
    "json_log_auth_headers": json_log_auth,
    "http_request_dump": http_request_dump,
    "db_cli_history": db_cli_history,
    "connection_uri_list": connection_uri_list,
    "markdown_credentials_table": markdown_credentials_table,
    "ini_pypirc_odbc": ini_pypirc_odbc,
    "toml_secrets": toml_secrets,
    "powershell_env": powershell_env,
    "windows_paths": windows_paths,
    "shell_prompt_session": shell_prompt_session,
    "python_traceback_home": python_traceback_home,
    "csv_customers": csv_customers,
    "sql_insert_pii": sql_insert_pii,
    "chat_bot_tokens": chat_bot_tokens,
    "gcp_service_account_json": gcp_service_account,
    "azure_local_settings_json": azure_connection_strings,
    "aws_credentials_file": aws_credentials_file,
    "gitlab_ci_variables": gitlab_ci_variables,
    "browser_devtools_storage": browser_devtools_storage,
    "k8s_secret_pem": k8s_secret_pem,
    "openssh_key_cat": openssh_key_cat,
    "putty_ppk": putty_key,
    "observability_compose_override": observability_config,
    "notebook_cell": notebook_cell,
    "ruby_initializer": ruby_initializer,
    "doctl_config": doctl_config,
    "support_ticket_prose": support_ticket_prose,
    "dockerfile_args": dockerfile_args,
    "nginx_basic_auth": nginx_basic_auth,
    "git_remote_urls": git_remote_urls,
    "kafka_jaas_properties": kafka_jaas_properties,
    "maven_settings_xml": maven_settings_xml,
    "postman_environment_json": postman_environment,
    "docker_inspect_env": docker_inspect_env,
    "positional_credentials_code": positional_credentials_code,
    "ansible_inventory_ini": ansible_inventory_ini,
    "yaml_user_list": yaml_user_list,
}

NEAR_MISS_SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    "package_lock_excerpt": package_lock_excerpt,
    "go_sum_cargo_lock": go_sum_cargo_lock,
    "pip_requirements_hashes": pip_hashes,
    "git_log_output": git_log_output,
    "docker_images_output": docker_images_output,
    "env_example_placeholders": env_example_placeholders,
    "aws_docs_example": aws_docs_example,
    "stripe_test_mode_docs": stripe_test_mode_docs,
    "k8s_manifest_refs": k8s_manifest_refs,
    "code_reading_secrets": code_reading_secrets,
    "ci_log_masked": ci_log_masked,
    "terraform_var_refs": terraform_var_refs,
    "openapi_security_schemes": openapi_security_schemes,
    "tracing_ids_log": tracing_ids_log,
}

SHAPES: dict[str, Callable[[random.Random], Paste]] = {**SECRET_SHAPES, **NEAR_MISS_SHAPES}


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    """``n`` pastes cycling through every shape in a seed-shuffled order; the same seed gives the same pastes.

    >>> [p.shape for p in generate(1, 3)] == [p.shape for p in generate(1, 3)]
    True
    """
    r = random.Random(seed)
    names = sorted(SHAPES)
    r.shuffle(names)
    return [SHAPES[names[i % len(names)]](r) for i in range(n)]


def _summary(pastes: list[Paste]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(KINDS, 0)
    for p in pastes:
        for kind, _ in p.must_go:
            counts[kind] += 1
    counts["must_stay"] = sum(len(p.must_stay) for p in pastes)
    counts["near_miss_only_pastes"] = sum(not p.must_go for p in pastes)
    return counts


if __name__ == "__main__":
    print(json.dumps(_summary(generate()), indent=2))
