"""A seeded generator of realistic chat text with fake secrets and PII of every kind the scrubber knows.

Every secret is assembled at run time from a prefix and a random body, so the repository never holds a
string that a secret scanner would flag. Used by the scrubber's tests and by ``bench.bench_scrub``.

>>> text, found = generate(seed=1, size=2000)
>>> all(secret in text for _, secret in found)
True
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEXLOWER = "0123456789abcdef"


def _body(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """A random body guaranteed to hold an upper-case letter, a lower-case letter and a digit, like real keys."""
    while True:
        body = _body(rng, alphabet, n)
        if any(c.isupper() for c in body) and any(c.islower() for c in body) and any(c.isdigit() for c in body):
            return body


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- fake secrets, one factory per kind -----------------------------------------------------------------


def openai_key(rng):
    style = rng.choice(["legacy", "proj", "svcacct", "proj"])
    if style == "legacy":
        return "sk" + "-" + _mixed(rng, ALNUM, 20) + "T3Blbk" + "FJ" + _mixed(rng, ALNUM, 20)
    return "sk" + f"-{style}-" + _mixed(rng, URLSAFE, rng.choice([74, 156]))


def anthropic_key(rng):
    return "sk" + "-ant-" + rng.choice(["api03", "admin01"]) + "-" + _mixed(rng, URLSAFE, 93) + "AA"


def hf_token(rng):
    return "hf" + "_" + _mixed(rng, string.ascii_letters + string.digits, 34)


def github_token(rng):
    prefix = rng.choice(["ghp", "gho", "ghu", "ghs", "ghr", "github_pat"])
    if prefix == "github_pat":
        return "github" + "_pat_" + _mixed(rng, ALNUM, 22) + "_" + _mixed(rng, ALNUM, 59)
    return prefix + "_" + _mixed(rng, ALNUM, 36)


def aws_access_key(rng):
    return rng.choice(["AK", "AS"]) + "IA" + _body(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)


def aws_secret_key(rng):
    return _mixed(rng, B64, 40)


def slack_token(rng):
    style = rng.choice(["bot", "user", "app", "hook"])
    if style == "bot":
        return (
            "xo"
            + "xb-"
            + _body(rng, string.digits, 12)
            + "-"
            + _body(rng, string.digits, 13)
            + "-"
            + _mixed(rng, ALNUM, 24)
        )
    if style == "user":
        return (
            "xo"
            + "xp-"
            + _body(rng, string.digits, 12)
            + "-"
            + _body(rng, string.digits, 12)
            + "-"
            + _body(rng, string.digits, 13)
            + "-"
            + _body(rng, HEXLOWER, 32)
        )
    if style == "app":
        return (
            "xa"
            + "pp-1-"
            + "A0"
            + _body(rng, UPPER_ALNUM, 9)
            + "-"
            + _body(rng, string.digits, 13)
            + "-"
            + _body(rng, HEXLOWER, 64)
        )
    return "T" + _body(rng, UPPER_ALNUM, 10) + "/B" + _body(rng, UPPER_ALNUM, 10) + "/" + _mixed(rng, ALNUM, 24)


def stripe_key(rng):
    prefix = rng.choice(["sk", "rk", "pk"]) + "_" + rng.choice(["live", "test"]) + "_"
    return prefix + _mixed(rng, ALNUM, rng.choice([24, 99]))


def google_api_key(rng):
    return "AI" + "za" + _mixed(rng, URLSAFE, 35)


def telegram_bot_token(rng):
    return str(rng.randint(10**8, 10**10 - 1)) + ":" + "AA" + _mixed(rng, URLSAFE, 33)


def jwt(rng):
    header = {"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}
    payload = {
        "sub": str(rng.randint(1, 10**9)),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
        "role": rng.choice(["admin", "user"]),
    }
    return ".".join(
        [_b64url(json.dumps(header).encode()), _b64url(json.dumps(payload).encode()), _b64url(rng.randbytes(32))]
    )


def bearer(rng):
    return _mixed(rng, ALNUM + "._-", rng.randint(24, 48))


def url_password(rng):
    return _mixed(rng, ALNUM + "!*_~-", rng.randint(10, 24))


def env_secret(rng):
    return _mixed(rng, ALNUM + "!_-", rng.randint(12, 32))


def private_key(rng):
    label = rng.choice(["RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"])
    lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(rng.randint(4, 12))]
    return "-----BEGIN " + label + "-----\n" + "\n".join(lines) + "\n-----END " + label + "-----"


_FIRST = ["alice", "bob", "carol", "dmitri", "erin", "farah", "gustavo", "hiro", "ines", "jamal", "kwame", "lena"]
_LAST = ["nguyen", "smith", "garcia", "kowalski", "okafor", "tanaka", "muller", "rossi", "haddad", "silva"]
_DOMAINS = ["acme-corp.io", "mail.northwind.de", "gmail.com", "fastmail.fm", "uni-heidelberg.de", "bigco.co.uk"]


def email(rng):
    local = f"{rng.choice(_FIRST)}{rng.choice(['.', '_', ''])}{rng.choice(_LAST)}{rng.randint(1, 99)}"
    return f"{local}@{rng.choice(_DOMAINS)}"


def ip(rng):
    if rng.random() < 0.2:
        groups = ["2a0" + str(rng.randint(1, 9))]
        groups += [format(rng.randint(0, 0xFFFF), "x") for _ in range(rng.randint(2, 4))]
        return ":".join(groups) + "::" + format(rng.randint(1, 0xFFFF), "x")
    first = rng.choice([10, 34, 52, 81, 151, 172, 185, 192, 213])
    second = 168 if first == 192 else rng.randint(0, 255)
    return f"{first}.{second}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def phone(rng):
    d = lambda n: _body(rng, string.digits, n)  # noqa: E731
    style = rng.randrange(10)
    if style == 6:
        return f"07{rng.choice('123589')}{d(2)} {d(6)}"  # UK mobile
    if style == 7:
        return f"0{rng.choice('67')} {d(2)} {d(2)} {d(2)} {d(2)}"  # FR mobile
    if style == 8:
        return f"0{rng.choice('789')}0-{d(4)}-{d(4)}"  # JP mobile
    if style == 9:
        return f"030 {rng.randint(2, 9)}{d(7)}"  # DE Berlin
    if style == 0:
        return f"+1 {rng.randint(201, 989)} {d(3)} {d(4)}"
    if style == 1:
        return f"({rng.randint(201, 989)}) {d(3)}-{d(4)}"
    if style == 2:
        return f"+44 20 {d(4)} {d(4)}"
    if style == 3:
        return f"+49 30 {d(7)}"
    if style == 4:
        return f"+33 {rng.randint(1, 9)} {d(2)} {d(2)} {d(2)} {d(2)}"
    return f"{rng.randint(201, 989)}-{d(3)}-{d(4)}"


def home_path(rng):
    user = rng.choice(_FIRST) + rng.choice(["", str(rng.randint(1, 99)), "." + rng.choice(_LAST)])
    return rng.choice(["/home/", "/Users/", "C:\\Users\\", "c:\\users\\", "/mnt/c/Users/", "/var/home/"]) + user


def user_name(rng):
    return rng.choice(_FIRST) + rng.choice(["", str(rng.randint(1, 99)), "_" + rng.choice(_LAST)])


def basic_auth(rng):
    return base64.b64encode(f"{rng.choice(_FIRST)}:{url_password(rng)}".encode()).decode()


def cli_secret(rng):
    return _mixed(rng, ALNUM + "!_", rng.randint(10, 20))


def api_token(rng):
    """A token of a provider format from the catalogue data (one whose row ichor types as api_token)."""
    from ichor import scrub_catalogue

    from .regex_sample import sample

    rows = [
        r
        for r in scrub_catalogue.rows()
        if r.kind == "api_token" and not r.named and r.source == "gitleaks" and "(?P<secret>" not in r.pattern_text
    ]
    while True:
        row = rng.choice(rows)
        text, _ = sample(row.pattern_text, rng)
        # A token carries its row's keyword (facebook's is a word nearby, not part of the token: skip those);
        # a random sample can come out all zeros, real tokens don't.
        if any(k in text.lower() for k in row.keywords) and len(set(text)) > 8:
            return text


def _luhn_complete(rng, prefix: str, length: int) -> str:
    from stdnum import luhn

    body = prefix + _body(rng, string.digits, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


def card(rng):
    prefix, length = rng.choice(
        [("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16)]
    )
    digits = _luhn_complete(rng, prefix, length)
    if length == 15:
        return " ".join([digits[:4], digits[4:10], digits[10:]])
    sep = rng.choice([" ", "-", ""])
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4))


def iban(rng):
    from stdnum.iso7064 import mod_97_10

    country, bban = rng.choice(
        [
            ("DE", _body(rng, string.digits, 18)),
            ("GB", "".join(rng.choice(string.ascii_uppercase) for _ in range(4)) + _body(rng, string.digits, 14)),
            ("NL", "".join(rng.choice(string.ascii_uppercase) for _ in range(4)) + _body(rng, string.digits, 10)),
        ]
    )
    check = mod_97_10.calc_check_digits(bban + country)
    compact = country + check + bban
    return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4)) if rng.random() < 0.5 else compact


def ssn(rng):
    area = rng.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


FACTORIES: dict[str, Callable[[random.Random], str]] = {
    "private_key": private_key,
    "openai_key": openai_key,
    "anthropic_key": anthropic_key,
    "hf_token": hf_token,
    "github_token": github_token,
    "aws_access_key": aws_access_key,
    "aws_secret_key": aws_secret_key,
    "slack_token": slack_token,
    "stripe_key": stripe_key,
    "google_api_key": google_api_key,
    "telegram_bot_token": telegram_bot_token,
    "jwt": jwt,
    "bearer": bearer,
    "url_password": url_password,
    "env_secret": env_secret,
    "email": email,
    "ip": ip,
    "phone": phone,
    "home_path": home_path,
    "user_name": user_name,
    "basic_auth": basic_auth,
    "cli_secret": cli_secret,
    "api_token": api_token,
    "card": card,
    "iban": iban,
    "ssn": ssn,
}


# --- the sentences they appear in ----------------------------------------------------------------------
# {s} is the secret; each template is something a user or an agent plausibly writes in a coding chat.

CONTEXTS: dict[str, list[str]] = {
    "openai_key": [
        "export OPENAI_API_KEY={s}",
        'client = OpenAI(api_key="{s}")',
        "my key is {s} and it still says 401",
        'curl https://api.openai.com/v1/models -H "Authorization: Bearer {s}"',
        '{{"openai": {{"key": "{s}"}}}}',
    ],
    "anthropic_key": [
        "ANTHROPIC_API_KEY={s} hermes chat",
        'anthropic.Anthropic(api_key="{s}")',
        "here's the key: {s} (rotating it tomorrow)",
    ],
    "hf_token": [
        "huggingface-cli login --token {s}",
        'login(token="{s}")',
        "HF_TOKEN={s} python train.py",
        "push failed with token {s}: 403",
    ],
    "github_token": [
        "git clone https://{s}@github.com/acme/infra.git",
        "GITHUB_TOKEN={s}",
        'gh auth login --with-token <<< "{s}"',
        "the PAT is {s}",
    ],
    "aws_access_key": ["aws_access_key_id = {s}", "export AWS_ACCESS_KEY_ID={s}", "access key {s} was denied"],
    "aws_secret_key": [
        "aws_secret_access_key = {s}",
        "export AWS_SECRET_ACCESS_KEY={s}",
        '"SecretAccessKey": "{s}",',
        "aws secret: {s}",
    ],
    "slack_token": ["SLACK_BOT_TOKEN={s}", "slack token {s} got revoked?", 'token="{s}"'],
    "stripe_key": ["stripe.api_key = '{s}'", "STRIPE_SECRET_KEY={s}", "charge failed for key {s}"],
    "google_api_key": [
        "https://maps.googleapis.com/maps/api/geocode/json?address=x&key={s}",
        "GOOGLE_API_KEY={s}",
        "gemini key {s} doesn't work",
    ],
    "telegram_bot_token": ["TELEGRAM_BOT_TOKEN={s}", "https://api.telegram.org/bot{s}/getMe", "bot token is {s}"],
    "jwt": ["Cookie: session={s}", "the token {s} expires too early", 'jwt.decode("{s}", key)'],
    "bearer": [
        "Authorization: Bearer {s}",
        'curl -H "Authorization: Bearer {s}" https://api.internal/v2/jobs',
        "headers = {{'Authorization': 'Bearer {s}'}}",
    ],
    "url_password": [
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        "REDIS_URL=redis://:{s}@cache.internal:6379/0",
        "amqp://svc:p@ss{s}@mq.internal:5672/",
        "redis://default:{s}@cache.prod:6379/0",
        "mongo mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/test",
        "https://deploy:{s}@registry.acme.io/v2/",
    ],
    "env_secret": [
        "DB_PASSWORD={s}",
        'export SESSION_SECRET="{s}"',
        "password: {s}",
        '"client_secret": "{s}",',
        "JWT_SIGNING_KEY='{s}'",
        'smtp_password = "{s}"',
        'client = Groq(api_key="{s}")',
        "//registry.npmjs.org/:_authToken={s}",
        "jdbc:postgresql://db:5432/app?user=app&password={s}",
        '{{"ConnectionStrings": {{"Default": "Server=db;Database=app;User Id=sa;Password={s};"}}}}',
        "./manage.py run --password={s}",
        'curl -H "X-API-Key: {s}" https://api.acme.io/v1',
        "  db-password: {s}",
        "DB_PASSWORD=Summer.{s}",
        "SESSION_TOKEN={s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}{s}",
        "PASSWORD=#{s}",
        "password: '*{s}'",
        "'secret_key' => '{s}',",
    ],
    "private_key": ["here is the deploy key:\n{s}\n", "cat ~/.ssh/id_rsa\n{s}", "```\n{s}\n```"],
    "email": ["contact {s} for access", "Author: Jane Doe <{s}>", 'git config user.email "{s}"', "cc: {s}"],
    "ip": ["ssh deploy@{s}", "connection refused from {s}:443", "the VPS is at {s}", "curl http://{s}:8080/health"],
    "phone": ["call me at {s} if it breaks", "on-call: {s}", "Phone: {s}", "(ring {s} after 6pm)"],
    "user_name": [
        "{s}@devbox:~$ make test",
        "[{s}@web-01 app]$ sudo systemctl restart api",
        "{s}@laptop:/srv/app$ ls",
    ],
    "basic_auth": ["Authorization: Basic {s}", 'curl -H "Authorization: Basic {s}" https://ci.acme.io/api'],
    "cli_secret": [
        "curl -u admin:{s} https://ci.acme.io/api/json",
        "mysql -h db.internal -u root -p{s} app",
        "twine upload -u __token__ -p {s} dist/*",
        "sshpass -p '{s}' ssh deploy@build",
        "huggingface-cli upload --token {s} org/model .",
    ],
    "api_token": ["TOKEN: {s}", "export PROVIDER_KEY={s}", "the key {s} is rejected", "auth = '{s}'"],
    "card": ["card {s} exp 12/29", "charge {s} failed", "pay with {s}"],
    "iban": ["IBAN: {s}", "wire it to {s} please", "account {s}"],
    "ssn": ["SSN: {s}", "her social is {s}", "ssn={s}"],
    "home_path": [
        'File "{s}/projects/app/main.py", line 12, in <module>',
        "cd {s}/code && make",
        "config lives in {s}/.config/hermes",
        "ls -la {s}/Downloads",
    ],
}

# --- near-misses: realistic text that must come out untouched ------------------------------------------


def _uuid(rng):
    h = _body(rng, HEXLOWER, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


NEAR_MISS_FACTORIES: dict[str, Callable[[random.Random], str]] = {
    "version": lambda rng: rng.choice(
        ["numpy=={}.{}.{}", "version {}.{}.{}.4", "v{}.{}.{}", "Python 3.{}.{}{}", "pip install torch=={}.{}.{}"]
    ).format(*(rng.randint(0, 30) for _ in range(3))),
    "git_sha": lambda rng: rng.choice(["commit {}", "git checkout {}", "fixed in {}"]).format(
        _body(rng, HEXLOWER, rng.choice([7, 8, 12, 40]))
    ),
    "sha256": lambda rng: rng.choice(["sha256:{}", "{}  model.safetensors", "checksum {}"]).format(
        _body(rng, HEXLOWER, 64)
    ),
    "uuid": lambda rng: f"request id {_uuid(rng)} failed",
    "sk_word": lambda rng: rng.choice(
        [
            "see the task-list",
            "a risk-free refactor",
            "my desk-lamp-controller-firmware",
            "the sk-learn-compatible-estimator-wrapper",
            "the mask-rcnn-benchmark-repository",
        ]
    ),
    "example_url": lambda rng: rng.choice(
        [
            "https://example.com/docs/getting-started",
            "http://www.example.com/a?b=c",
            "https://user@example.com/repo.git",
        ]
    ),
    "localhost_url": lambda rng: rng.choice(
        ["http://localhost:{}/api", "postgres://localhost:{}/app", "redis://127.0.0.1:{}/0"]
    ).format(rng.randint(1024, 65535)),
    "system_path": lambda rng: rng.choice(
        ["/usr/local/bin/python3", "/home", "~/projects/ichor", "/var/log/syslog", "/opt/homebrew/bin", "ls /home/"]
    ),
    "css_colour": lambda rng: f"color: #{_body(rng, HEXLOWER, 6)}; background: #{_body(rng, HEXLOWER, 3)};",
    "identifier": lambda rng: rng.choice(
        [
            "getUserAccountSettingsForTenantById",
            "hf_hub_download",
            "max_tokens=512",
            "pad_token = tokenizer.eos_token",
            'api_key = os.environ["OPENAI_API_KEY"]',
            "export OPENAI_API_KEY=$OPENAI_API_KEY",
            "token = response",
            'eos_token="</s>"',
            "the bearer of bad news",
            "AUTH_TOKEN=${AUTH_TOKEN}",
            "Bearer authentication",
            "sort_key = name",
            "password: ********",
        ]
    ),
    "base64_id": lambda rng: rng.choice(["dGhpcyBpcyBhIHRlc3Q=", "aGVsbG8gd29ybGQ=", "SGVybWVzQWdlbnQ="]),
    "numbers": lambda rng: rng.choice(
        [
            "on 2024-0{}-1{}",
            "at 12:3{}:4{}",
            "in 19{}{}",
            "order #1234{}{}78",
            "ticket 98765{}{}210",
            "pi is 3.14{}{}9",
            "1,234,5{}{}",
        ]
    ).format(rng.randint(1, 9), rng.randint(0, 9)),
    "safe_ip": lambda rng: rng.choice(
        [
            "127.0.0.1",
            "0.0.0.0:8000",
            "192.0.2.{}",
            "198.51.100.{}",
            "203.0.113.{}",
            "::1",
            "2001:db8::{}",
            "netmask 255.255.255.0",
        ]
    ).format(rng.randint(1, 254)),
    "placeholder": lambda rng: rng.choice(
        [
            "OPENAI_API_KEY=sk-...your key...",
            "GITHUB_TOKEN=ghp_" + "X" * 36,
            "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB",
            "aws_access_key_id = AKIA" + "IOSFODNN7" + "EXAMPLE",
            "contact user@example.com or admin@test.example.org",
            "API_KEY=<your-api-key>",
            "password: ${{ secrets.DB_PASSWORD }}",
            "HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "token: '{{ vault_token }}'",
            "export STRIPE_KEY=sk_test_...",
        ]
    ),
    "test_card": lambda rng: (
        rng.choice(["4242 4242 4242 4242", "4000 0566 5566 5556", "5555 5555 5555 4444", "3782 822463 10005"])
        + rng.choice([" exp 12/34", " (Stripe test card)", ""])
    ),
    "long_number": lambda rng: rng.choice(["order 4{} shipped", "tracking 1Z{}", "invoice #{}"]).format(
        _body(rng, string.digits, 15)
    ),
    "cli": lambda rng: rng.choice(
        [
            "docker run -p 8080:8080 api",
            "ssh -p 2222 deploy@localhost",
            "mkdir -p build/out",
            "mysql -u root -p app",
            "pytest -p no:cacheprovider",
            "gpg --passphrase-file ~/.pw",
            "curl -u $USER:$TOKEN https://ci/api",
            "kubectl get secret db -o yaml",
        ]
    ),
    "code": lambda rng: rng.choice(
        [
            "x = a[1::2]",
            "std::vector<int> v;",
            "git@github.com:acme/ichor.git",
            "icon@2x.png",
            "npm i @types/node react@18.2.0",
            "diff: @@ -12,7 +12,8 @@",
            "MAC 00:1A:2B:3C:4D:5E",
        ]
    ),
}

FILLER = [
    "Sure — the failing import comes from the lazy loader; move it inside `main()` and rerun.",
    "I ran the tests again and 3 of 41 still fail on CI, only on Python 3.11.",
    "```python\ndef load(path):\n    with open(path) as f:\n        return [json.loads(line) for line in f]\n```",
    "$ make test\n.......................F..\nFAILED tests/test_store.py::test_concurrent_writers - AssertionError",
    "2026-11-30 15:02:11,532 INFO worker[3] processed 128 items in 0.42s",
    "No, use pnpm instead of npm for this monorepo; the lockfile is pnpm-lock.yaml.",
    "The migration adds a column and backfills it in batches of 1000 rows to keep the lock short.",
    "Traceback (most recent call last):\n  File \"app/main.py\", line 12, in <module>\nKeyError: 'model'",
    "docker run --rm -p 8080:8080 -v $PWD:/app ghcr.io/acme/api:latest",
    "Let me check the config first, then I'll patch the retry logic in `client.py`.",
    "kubectl get pods -n staging | grep api\napi-7d9f8b6c5-x2x4q   1/1   Running   0   3h",
    "That's wrong — the function should return None when the cache is empty, not raise.",
]


@dataclass(frozen=True)
class Embedded:
    kind: str
    secret: str
    start: int
    end: int


def embed(kind: str, rng: random.Random) -> tuple[str, str]:
    """One chunk of chat text holding a fresh fake secret of ``kind``; returns ``(chunk, secret)``."""
    secret = FACTORIES[kind](rng)
    template = rng.choice(CONTEXTS[kind])
    if kind == "slack_token" and secret.startswith("T"):
        template = "SLACK_WEBHOOK=https://hooks.slack.com/services/{s}"
    if kind == "home_path" and secret[1:3] == ":\\":
        template = template.replace("/", "\\")
    return template.format(s=secret), secret


def near_miss(rng: random.Random, category: str | None = None) -> str:
    return NEAR_MISS_FACTORIES[category or rng.choice(sorted(NEAR_MISS_FACTORIES))](rng)


def generate_spans(seed: int = 0, size: int = 1_000_000, kinds=None) -> tuple[str, list[Embedded]]:
    """About ``size`` characters of chat text; roughly one chunk in three holds a secret, cycling through kinds."""
    rng = random.Random(seed)
    kinds = list(kinds or FACTORIES)
    parts, found, length, turn = [], [], 0, 0
    while length < size:
        roll = rng.random()
        if roll < 0.35:
            kind = kinds[turn % len(kinds)]
            turn += 1
            chunk, secret = embed(kind, rng)
            offset = chunk.index(secret)
            found.append(Embedded(kind, secret, length + offset, length + offset + len(secret)))
        elif roll < 0.55:
            chunk = near_miss(rng)
        else:
            chunk = rng.choice(FILLER)
        parts.append(chunk + "\n")
        length += len(chunk) + 1
    return "".join(parts), found


def generate(seed: int = 0, size: int = 1_000_000, kinds=None) -> tuple[str, list[tuple[str, str]]]:
    """``(text, [(kind, secret_text), ...])``: the corpus and every fake secret or PII item embedded in it."""
    text, found = generate_spans(seed, size, kinds)
    return text, [(e.kind, e.secret) for e in found]
