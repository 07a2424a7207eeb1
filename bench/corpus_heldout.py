"""A held-out corpus: realistic multi-line pastes, written before the scrubber was measured on them and never
used to tune it.

bench/corpus.py is in-sample: its templates were written next to the rules they test. This one uses other
shapes (whole .env files, .npmrc, kubeconfig, docker-compose, curl sessions, SDK snippets, stack traces, shell
sessions, config tables) with fresh values from its own generators. Each paste lists what must go (kind, value)
and what must stay (strings a scrubber should leave as they are). Values are assembled at run time.

>>> pastes = generate(seed=1, n=20)
>>> all(v in p.text for p in pastes for _, v in p.must_go)
True
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if len(set(alphabet) & set(string.digits)) == 0 or any(c.isdigit() for c in s):
            return s


def _password(rng: random.Random) -> str:
    words = ["Maple", "river", "Orbit", "quartz", "Tiger", "lemon", "Nova", "cobalt"]
    style = rng.randrange(4)
    if style == 0:
        return rng.choice(words) + rng.choice(".-_!") + str(rng.randint(1990, 2030))
    if style == 1:
        return _r(rng, ALNUM + "!#%&*+", rng.randint(14, 28))
    if style == 2:
        return rng.choice(words) + rng.choice(words).lower() + str(rng.randint(10, 99)) + rng.choice("!?$")
    return _r(rng, ALNUM, rng.randint(20, 40))


_PEOPLE = ["priya", "tomasz", "aiko", "mateo", "fatima", "oluwaseun", "sven", "mei", "dario", "noor"]
_SURNAMES = ["raman", "nowak", "sato", "lopez", "hassan", "adeyemi", "berg", "chen", "greco", "aziz"]
_MAIL = ["proton.me", "outlook.com", "corp-mail.net", "startup.dev", "uni-wien.ac.at", "web.de"]


def _person(rng):
    return rng.choice(_PEOPLE), rng.choice(_SURNAMES)


def _email(rng):
    first, last = _person(rng)
    return f"{first}.{last}{rng.choice(['', str(rng.randint(1, 9))])}@{rng.choice(_MAIL)}"


def _ip(rng):
    first = rng.choice([23, 45, 64, 91, 104, 138, 159, 176, 188])
    return f"{first}.{rng.randint(1, 254)}.{rng.randint(1, 254)}.{rng.randint(1, 254)}"


def _token(rng) -> str:
    """A provider token of a published format, from this module's own generators."""
    kind = rng.randrange(16)
    return [
        lambda: "glpat-" + _r(rng, URLSAFE, 20),
        lambda: "npm_" + _r(rng, ALNUM, 36),
        lambda: "SG." + _r(rng, URLSAFE, 22) + "." + _r(rng, URLSAFE, 43),
        lambda: "dop_v1_" + _r(rng, HEX, 64),
        lambda: "dapi" + _r(rng, HEX, 32),
        lambda: "SK" + _r(rng, HEX, 32),
        lambda: "pypi-AgEIcHlwaS5vcmc" + _r(rng, URLSAFE, 120),
        lambda: "gsk_" + _r(rng, ALNUM, 52),
        lambda: "r8_" + _r(rng, ALNUM, 37),
        lambda: "shpat_" + _r(rng, HEX, 32),
        lambda: "lin_api_" + _r(rng, ALNUM, 40),
        lambda: "ntn_" + _r(rng, string.digits, 11) + _r(rng, ALNUM, 35),
        lambda: "hvs." + _r(rng, URLSAFE, 95),
        lambda: "glsa_" + _r(rng, ALNUM, 32) + "_" + _r(rng, HEX, 8),
        lambda: "xoxb-" + _r(rng, string.digits, 11) + "-" + _r(rng, string.digits, 12) + "-" + _r(rng, ALNUM, 24),
        lambda: "sk-proj-" + _r(rng, URLSAFE, 58) + "T3BlbkFJ" + _r(rng, URLSAFE, 58),
    ][kind]()


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]] = field(default_factory=list)
    must_stay: list[str] = field(default_factory=list)


def _dotenv(rng):
    db_pw, secret, tok, mail = _password(rng), _r(rng, ALNUM, 48), _token(rng), _email(rng)
    text = (
        "# .env (local)\n"
        "NODE_ENV=development\n"
        "PORT=3000\n"
        f"DATABASE_URL=postgresql://app:{db_pw}@db.internal:5432/app?sslmode=require\n"
        f"SESSION_SECRET={secret}\n"
        f"PROVIDER_TOKEN={tok}\n"
        f"ADMIN_EMAIL={mail}\n"
        "LOG_LEVEL=debug\n"
        "FEATURE_FLAGS=search,checkout\n"
    )
    return Paste(
        "dotenv",
        text,
        [("password", db_pw), ("secret", secret), ("token", tok), ("email", mail)],
        ["NODE_ENV=development", "PORT=3000", "LOG_LEVEL=debug", "db.internal:5432/app?sslmode=require"],
    )


def _npmrc(rng):
    tok, basic = "npm_" + _r(rng, ALNUM, 36), _r(rng, ALNUM, 24)
    text = (
        "my .npmrc is\n"
        "registry=https://registry.npmjs.org/\n"
        f"//registry.npmjs.org/:_authToken={tok}\n"
        "@acme:registry=https://npm.pkg.github.com\n"
        f"//npm.pkg.github.com/:_password={base64.b64encode(basic.encode()).decode()}\n"
        "always-auth=true\n"
    )
    return Paste(
        "npmrc",
        text,
        [("token", tok), ("password", base64.b64encode(basic.encode()).decode())],
        ["registry=https://registry.npmjs.org/", "always-auth=true"],
    )


def _kubeconfig(rng):
    key_data = base64.b64encode(rng.randbytes(600)).decode()
    token = _r(rng, ALNUM + "._-", 60)
    user = rng.choice(_PEOPLE)
    text = (
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
        f"    certificate-authority-data: {base64.b64encode(b'-----BEGIN CERTIFICATE-----').decode()}\n"
        "    server: https://k8s.internal:6443\n  name: prod\n"
        f"users:\n- name: {user}-admin\n  user:\n"
        f"    client-key-data: {key_data}\n"
        f"    token: {token}\n"
    )
    return Paste(
        "kubeconfig",
        text,
        [("private_key", key_data), ("token", token)],
        ["server: https://k8s.internal:6443", "apiVersion: v1", "kind: Config"],
    )


def _k8s_secret(rng):
    pw = base64.b64encode(_password(rng).encode()).decode()
    api = base64.b64encode(_token(rng).encode()).decode()
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secrets\ntype: Opaque\ndata:\n"
        f"  db-password: {pw}\n  api-key: {api}\n"
    )
    return Paste("k8s_secret", text, [("password", pw), ("token", api)], ["name: app-secrets", "type: Opaque"])


def _compose(rng):
    pw, redis_pw, key = _password(rng), _r(rng, ALNUM, 20), _r(rng, ALNUM, 32)
    text = (
        "services:\n  db:\n    image: postgres:16\n    environment:\n"
        f"      POSTGRES_PASSWORD: {pw}\n      POSTGRES_USER: app\n"
        "  cache:\n    image: redis:7\n"
        f'    command: ["redis-server", "--requirepass", "{redis_pw}"]\n'
        "  api:\n    build: .\n    environment:\n"
        f"      - STRIPE_SECRET_KEY=sk_live_{key}\n"
        "      - REDIS_URL=redis://cache:6379/0\n"
        '    ports:\n      - "8080:8080"\n'
    )
    return Paste(
        "docker_compose",
        text,
        [("password", pw), ("password", redis_pw), ("token", "sk_live_" + key)],
        ["image: postgres:16", "redis://cache:6379/0", '"8080:8080"', "POSTGRES_USER: app"],
    )


def _curl(rng):
    tok, user_pw, apikey = _token(rng), _password(rng), _r(rng, HEX, 40)
    basic = base64.b64encode(f"ci-bot:{_r(rng, ALNUM, 18)}".encode()).decode()
    text = (
        f"$ curl -s -H 'X-Api-Key: {apikey}' https://api.vendor.io/v2/items?limit=50\n"
        '{"error": "unauthorized"}\n'
        f"$ curl -u ops:{user_pw} https://jenkins.internal/api/json\n"
        f'$ curl -H "Authorization: Basic {basic}" https://ci.internal/queue\n'
        f'$ curl -H "Authorization: Bearer {tok}" https://api.vendor.io/v2/me\n'
    )
    return Paste(
        "curl",
        text,
        [("token", apikey), ("password", user_pw), ("basic", basic), ("token", tok)],
        ["https://api.vendor.io/v2/items?limit=50", '{"error": "unauthorized"}'],
    )


def _sdk(rng):
    key, tok, pw = _token(rng), _r(rng, ALNUM, 40), _password(rng)
    text = (
        "```python\n"
        "import os\nfrom vendor import Client\n\n"
        f'client = Client(api_key="{key}", timeout=30)\n'
        f'engine = create_engine("mysql+pymysql://root:{pw}@10.0.4.12/shop")\n'
        f"session.headers.update({{'X-Auth-Token': '{tok}'}})\n"
        "model = os.environ.get('MODEL', 'small')\n"
        "```\n"
    )
    return Paste(
        "sdk_snippet",
        text,
        [("token", key), ("password", pw), ("token", tok), ("ip", "10.0.4.12")],
        ["timeout=30", "os.environ.get('MODEL', 'small')", "import os"],
    )


def _traceback(rng):
    first, last = _person(rng)
    home = rng.choice([f"/home/{first}", f"/Users/{first}{last}", f"C:\\Users\\{first}.{last}"])
    sep = "\\" if home.startswith("C:") else "/"
    pw = _password(rng)
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{home}{sep}code{sep}etl{sep}run.py", line 88, in <module>\n'
        "    main()\n"
        f'  File "{home}{sep}code{sep}etl{sep}db.py", line 14, in connect\n'
        f"    conn = psycopg2.connect(host='db', user='etl', password='{pw}')\n"
        'psycopg2.OperationalError: FATAL:  password authentication failed for user "etl"\n'
    )
    return Paste(
        "stack_trace",
        text,
        [("home_path", first), ("password", pw)],
        ["line 88, in <module>", "psycopg2.OperationalError", 'for user "etl"'],
    )


def _shell(rng):
    user = rng.choice(_PEOPLE)
    host = rng.choice(["devbox", "ws-07", "thinkpad", "build-2"])
    pw, ip = _password(rng), _ip(rng)
    text = (
        f"{user}@{host}:~/src/api$ mysql -h {ip} -u admin -p{pw} orders\n"
        "ERROR 2003 (HY000): Can't connect to MySQL server\n"
        f"{user}@{host}:~/src/api$ git log --oneline | head -3\n"
        "9fceb02 fix retry\n"
    )
    return Paste(
        "shell_prompt",
        text,
        [("user_name", user + "@"), ("password", pw), ("ip", ip)],
        ["ERROR 2003 (HY000)", "git log --oneline | head -3", "9fceb02 fix retry"],
    )


def _contact(rng):
    first, last = _person(rng)
    phone = rng.choice(
        [
            f"+44 7{rng.randint(400, 999)} {rng.randint(100000, 999999)}",
            f"06 {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
            f"080-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}",
            f"(0{rng.randint(20, 99)}) {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
            f"+1 ({rng.randint(201, 989)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
        ]
    )
    mail = _email(rng)
    text = (
        f"Hi, I'm {first.title()} {last.title()} from payroll.\n"
        f"Reach me at {mail} or on {phone}.\n"
        "Meeting moved to 2026-03-14 at 10:30, room 4.12.\n"
    )
    return Paste(
        "contact_note",
        text,
        [("email", mail), ("phone", phone)],
        ["2026-03-14 at 10:30", "room 4.12"],
    )


def _payment(rng):
    from stdnum import luhn

    body = rng.choice(["4", "53", "37"]) + "".join(
        rng.choice(string.digits) for _ in range(13 if rng.random() < 0.8 else 12)
    )
    number = body + luhn.calc_check_digit(body)
    shown = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
    ssn = f"{rng.randint(100, 665):03d}-{rng.randint(10, 99):02d}-{rng.randint(1000, 9999):04d}"
    text = (
        "Customer called about a failed charge.\n"
        f"Card on file: {shown}, exp 08/28. SSN for the credit check: {ssn}.\n"
        "Test in staging with 4242 4242 4242 4242 first. Ticket #48213, order 1002334.\n"
    )
    return Paste(
        "payment_note",
        text,
        [("card", shown), ("ssn", ssn)],
        ["4242 4242 4242 4242", "Ticket #48213", "order 1002334", "exp 08/28"],
    )


def _config_table(rng):
    pw, tok = _password(rng), _token(rng)
    text = (
        "| setting | value |\n|---|---|\n"
        "| region | eu-west-1 |\n"
        f"| smtp password | `{pw}` |\n"
        f"| deploy token | `{tok}` |\n"
        "| retries | 5 |\n"
    )
    return Paste(
        "config_table", text, [("password", pw), ("token", tok)], ["| region | eu-west-1 |", "| retries | 5 |"]
    )


def _placeholders(rng):
    text = (
        "Set these before running:\n"
        "OPENAI_API_KEY=sk-your-key-here\n"
        "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DBNAME\n"
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
        "Mail support@example.com if stuck. Docs: https://docs.example.org/setup\n"
        "password: ${DB_PASSWORD}\n"
    )
    return Paste(
        "placeholders",
        text,
        [],
        [
            "sk-your-key-here",
            "USER:PASSWORD@HOST",
            "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "support@example.com",
            "${DB_PASSWORD}",
        ],
    )


SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    "dotenv": _dotenv,
    "npmrc": _npmrc,
    "kubeconfig": _kubeconfig,
    "k8s_secret": _k8s_secret,
    "docker_compose": _compose,
    "curl": _curl,
    "sdk_snippet": _sdk,
    "stack_trace": _traceback,
    "shell_prompt": _shell,
    "contact_note": _contact,
    "payment_note": _payment,
    "config_table": _config_table,
    "placeholders": _placeholders,
}


def generate(seed: int = 0, n: int = 260) -> list[Paste]:
    """``n`` pastes cycling through every shape, with fresh values from ``seed``."""
    rng = random.Random(seed)
    shapes = sorted(SHAPES)
    return [SHAPES[shapes[i % len(shapes)]](rng) for i in range(n)]
