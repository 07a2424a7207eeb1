# ruff: noqa: E501
"""Blind held-out corpus of developer pastes for the scrubber, written without seeing the scrubber or earlier corpora.

Every secret is assembled at run time from a seeded generator, so no real-looking secret exists in this source.
Kinds used in ``must_go``: password, api_key, token, private_key, connection_string_password, email, phone, card,
iban, ssn, home_path_user. Private IPs are left out: they are routinely needed to debug and identify no one.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

ALNUM = string.ascii_letters + string.digits
WORDS = [
    "falcon",
    "river",
    "copper",
    "maple",
    "orbit",
    "velvet",
    "tundra",
    "cobalt",
    "harbor",
    "ember",
    "quartz",
    "lotus",
]
USERS = ["jdoe", "mkowalski", "aisha.r", "tnguyen", "pbrennan", "lfernandez", "skumar", "olga"]
NAMES = [("Marta", "Vidal"), ("Kenji", "Ito"), ("Priya", "Shah"), ("Lukas", "Weber"), ("Chloe", "Martin")]
DOMAINS = ["acmecorp.io", "brightlane.co.uk", "northwind-labs.de", "pixelfox.fr", "hollowtree.com"]


@dataclass
class Paste:
    shape: str
    text: str
    must_go: list[tuple[str, str]] = field(default_factory=list)
    must_stay: list[str] = field(default_factory=list)


def rs(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def hexs(r: random.Random, n: int) -> str:
    return rs(r, n, "0123456789abcdef")


def password(r: random.Random) -> str:
    style = r.randrange(6)
    w1, w2 = r.choice(WORDS), r.choice(WORDS)
    if style == 0:
        return f"{w1.capitalize()}{w2}{r.randint(10, 9999)}"
    if style == 1:
        return f"{w1}.{w2}.{r.randint(1, 99)}"
    if style == 2:
        return "#" + rs(r, 14, ALNUM + "!%^*")
    if style == 3:
        return "$" + rs(r, 12) + "!"
    if style == 4:
        return "{" + rs(r, 10) + "}" + str(r.randint(0, 9))
    return rs(r, 6) + "@" + rs(r, 6) + str(r.randint(10, 99))


def email(r: random.Random) -> str:
    first, last = r.choice(NAMES)
    return f"{first.lower()}.{last.lower()}{r.randint(1, 99)}@{r.choice(DOMAINS)}"


def luhn_card(r: random.Random) -> str:
    prefix = r.choice(["4", "51", "55", "37", "6011"])
    length = 15 if prefix == "37" else 16
    body = prefix + rs(r, length - len(prefix) - 1, string.digits)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return body + str((10 - total % 10) % 10)


def iban(r: random.Random) -> str:
    country, bban_len = r.choice([("DE", 18), ("FR", 23), ("GB", 18), ("NL", 14)])
    if country == "GB":
        bban = "NWBK" + rs(r, 14, string.digits)
    elif country == "NL":
        bban = "ABNA" + rs(r, 10, string.digits)
    else:
        bban = rs(r, bban_len, string.digits)
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def ssn(r: random.Random) -> str:
    area = r.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def phone(r: random.Random) -> str:
    return r.choice(
        [
            f"+1 (415) {r.randint(200, 999)}-{r.randint(1000, 9999)}",
            f"+44 7700 {r.randint(100000, 999999)}",
            f"+49 151 {r.randint(1000000, 9999999)}",
            f"+33 6 {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}",
            f"+91 98{r.randint(10000000, 99999999)}",
        ]
    )


def jwt(r: random.Random) -> str:
    return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + rs(r, 60) + "." + rs(r, 43, ALNUM + "-_")


def pem(r: random.Random, kind: str = "RSA PRIVATE KEY") -> str:
    body = "\n".join(rs(r, 64, ALNUM + "+/") for _ in range(8))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def provider_key(r: random.Random) -> str:
    return r.choice(
        [
            lambda: "sk_live_" + rs(r, 24),
            lambda: "ghp_" + rs(r, 36),
            lambda: "github_pat_" + rs(r, 22) + "_" + rs(r, 59),
            lambda: "glpat-" + rs(r, 20, ALNUM + "-_"),
            lambda: "sk-proj-" + rs(r, 48, ALNUM + "-_"),
            lambda: "sk-ant-api03-" + rs(r, 93, ALNUM + "-_") + "AA",
            lambda: "SG." + rs(r, 22, ALNUM + "-_") + "." + rs(r, 43, ALNUM + "-_"),
            lambda: "npm_" + rs(r, 36),
            lambda: "pypi-AgEIcHlwaS5vcmc" + rs(r, 60, ALNUM + "-_"),
            lambda: "hf_" + rs(r, 34),
            lambda: "dop_v1_" + hexs(r, 64),
            lambda: "shpat_" + hexs(r, 32),
            lambda: "lin_api_" + rs(r, 40),
            lambda: "ntn_" + rs(r, 46, string.digits + ALNUM),
            lambda: "hvs." + rs(r, 24),
            lambda: "glsa_" + rs(r, 32) + "_" + hexs(r, 8),
            lambda: "NRAK-" + rs(r, 27, string.ascii_uppercase + string.digits),
        ]
    )()


def near(r: random.Random) -> list[str]:
    sha = hexs(r, 40)
    uuid = f"{hexs(r, 8)}-{hexs(r, 4)}-4{hexs(r, 3)}-a{hexs(r, 3)}-{hexs(r, 12)}"
    return [sha, uuid, f"{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 20)}"]


# ---- shapes with secrets -------------------------------------------------------------------------------------------


def terraform_tfvars(r: random.Random) -> Paste:
    pw, key = password(r), provider_key(r)
    text = f'region = "eu-west-1"\ndb_password = "{pw}"\napi_token = "{key}"\nami = "ami-0abcdef1234567890"\n'
    return Paste("terraform_tfvars", text, [("password", pw), ("api_key", key)], ["ami-0abcdef1234567890"])


def ansible_vars(r: random.Random) -> Paste:
    pw = password(r)
    text = f'---\nmysql_root_user: root\nmysql_root_password: "{pw}"\nmysql_port: 3306\nvault_enabled: false\n'
    return Paste("ansible_vars", text, [("password", pw)], ["mysql_port: 3306"])


def gha_env(r: random.Random) -> Paste:
    key = provider_key(r)
    text = (
        "jobs:\n  deploy:\n    runs-on: ubuntu-22.04\n    env:\n"
        f"      DEPLOY_TOKEN: {key}\n      NPM_TOKEN: ${{{{ secrets.NPM_TOKEN }}}}\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
    )
    return Paste("gha_env", text, [("api_key", key)], ["${{ secrets.NPM_TOKEN }}", "actions/checkout@v4"])


def helm_values(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        f'postgresql:\n  auth:\n    username: app\n    password: {pw}\n    existingSecret: ""\nimage:\n  tag: 15.4.0\n'
    )
    return Paste("helm_values", text, [("password", pw)], ["15.4.0"])


def systemd_unit(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        "[Service]\nExecStart=/usr/bin/node /srv/app/server.js\n"
        f'Environment="REDIS_PASSWORD={pw}"\nEnvironment=NODE_ENV=production\nRestart=always\n'
    )
    return Paste("systemd_unit", text, [("password", pw)], ["NODE_ENV=production"])


def java_properties(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        "spring.datasource.url=jdbc:postgresql://10.0.3.12:5432/orders\nspring.datasource.username=orders_svc\n"
        f"spring.datasource.password={pw}\nserver.port=8080\n"
    )
    return Paste("java_properties", text, [("password", pw)], ["server.port=8080"])


def spring_yml(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        f"spring:\n  mail:\n    host: smtp.gmail.com\n    username: noreply@example.com\n    password: '{pw}'\n"
        "  jpa:\n    hibernate:\n      ddl-auto: validate\n"
    )
    return Paste("spring_yml", text, [("password", pw)], ["noreply@example.com", "smtp.gmail.com"])


def django_settings(r: random.Random) -> Paste:
    secret = rs(r, 50, ALNUM + "!@#%^&*(-_=+)")
    pw = password(r)
    text = (
        f"SECRET_KEY = '{secret}'\nDEBUG = False\nDATABASES = {{\n    'default': {{\n"
        "        'ENGINE': 'django.db.backends.postgresql',\n        'NAME': 'shop',\n"
        f"        'USER': 'shop',\n        'PASSWORD': '{pw}',\n        'HOST': 'db',\n    }}\n}}\n"
    )
    return Paste("django_settings", text, [("api_key", secret), ("password", pw)], ["django.db.backends.postgresql"])


def rails_database_yml(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        "production:\n  adapter: postgresql\n  database: app_production\n  username: app\n"
        f'  password: {pw}\n  pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>\n'
    )
    return Paste("rails_database_yml", text, [("password", pw)], ['ENV.fetch("RAILS_MAX_THREADS")'])


def wp_config(r: random.Random) -> Paste:
    pw = password(r)
    salt = rs(r, 64, ALNUM + "!@#$%^&*()-_[]{}<>~+=,.;:/?|")
    text = (
        f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp_admin' );\ndefine( 'DB_PASSWORD', '{pw}' );\n"
        f"define( 'AUTH_KEY', '{salt}' );\n$table_prefix = 'wp_';\n"
    )
    return Paste("wp_config", text, [("password", pw), ("api_key", salt)], ["$table_prefix = 'wp_';"])


def php_dotenv(r: random.Random) -> Paste:
    key = "base64:" + rs(r, 43, ALNUM + "+/") + "="
    pw = password(r)
    text = f"APP_NAME=Laravel\nAPP_KEY={key}\nDB_CONNECTION=mysql\nDB_PASSWORD={pw}\nMAIL_PASSWORD=null\n"
    return Paste("php_dotenv", text, [("api_key", key), ("password", pw)], ["MAIL_PASSWORD=null"])


def go_sdk_init(r: random.Random) -> Paste:
    key = "sk_live_" + rs(r, 24)
    text = (
        f'func main() {{\n\tstripe.Key = "{key}"\n\tparams := &stripe.ChargeParams{{Amount: stripe.Int64(2000)}}\n}}\n'
    )
    return Paste("go_sdk_init", text, [("api_key", key)], ["stripe.Int64(2000)"])


def node_sdk_init(r: random.Random) -> Paste:
    key = "sk-ant-api03-" + rs(r, 93, ALNUM + "-_") + "AA"
    text = f"import Anthropic from '@anthropic-ai/sdk';\nconst client = new Anthropic({{ apiKey: '{key}' }});\n"
    return Paste("node_sdk_init", text, [("api_key", key)], ["@anthropic-ai/sdk"])


def rust_client(r: random.Random) -> Paste:
    key = "ghp_" + rs(r, 36)
    text = f'let octo = Octocrab::builder()\n    .personal_token("{key}".to_string())\n    .build()?;\n'
    return Paste("rust_client", text, [("api_key", key)], ["Octocrab::builder()"])


def python_dict(r: random.Random) -> Paste:
    pw, key = password(r), "AKIA" + rs(r, 16, string.ascii_uppercase + string.digits)
    secret = rs(r, 40, ALNUM + "/+")
    text = (
        f"CONFIG = {{\n    'aws_access_key_id': '{key}',\n    'aws_secret_access_key': '{secret}',\n"
        f"    'db': {{'user': 'etl', 'password': '{pw}'}},\n    'example_key': 'AKIAIOSFODNN7EXAMPLE',\n}}\n"
    )
    return Paste(
        "python_dict", text, [("api_key", key), ("api_key", secret), ("password", pw)], ["AKIAIOSFODNN7EXAMPLE"]
    )


def json_log_auth(r: random.Random) -> Paste:
    tok = jwt(r)
    req = near(r)[1]
    text = (
        f'{{"level":"error","ts":"2026-11-30T12:01:44Z","request_id":"{req}","msg":"upstream 401",'
        f'"headers":{{"authorization":"Bearer {tok}","user-agent":"okhttp/4.12.0"}}}}\n'
    )
    return Paste("json_log_auth", text, [("token", tok)], [req, "okhttp/4.12.0"])


def http_dump(r: random.Random) -> Paste:
    import base64

    user, pw = r.choice(USERS), password(r)
    basic = base64.b64encode(f"{user}:{pw}".encode()).decode()
    sess = rs(r, r.randint(800, 1200), ALNUM + "%-_")
    text = (
        f"GET /api/v2/orders?page=2 HTTP/1.1\nHost: api.example.com\nAuthorization: Basic {basic}\n"
        f"Cookie: session={sess}; theme=dark\nAccept: application/json\n"
    )
    return Paste("http_dump", text, [("token", basic), ("token", sess)], ["api.example.com", "theme=dark"])


def psql_cli(r: random.Random) -> Paste:
    pw = password(r).replace("@", "%40")
    text = (
        f"$ PGPASSWORD='{pw}' psql -h 10.1.2.3 -U reporting -d analytics -c 'select count(*) from events'\n"
        " count\n-------\n 48213\n(1 row)\n"
    )
    return Paste("psql_cli", text, [("password", pw)], ["select count(*) from events"])


def mysql_history(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        f"  501  mysql -u root -p'{pw}' -e 'SHOW DATABASES;'\n  502  mysqldump --single-transaction app > app.sql\n"
        "  503  ls -lh app.sql\n"
    )
    return Paste("mysql_history", text, [("password", pw)], ["mysqldump --single-transaction app"])


def redis_cli(r: random.Random) -> Paste:
    pw = password(r)
    text = f"$ redis-cli -h cache.internal -p 6379 -a '{pw}' --no-auth-warning INFO memory\n# Memory\nused_memory:1048576\n"
    return Paste("redis_cli", text, [("password", pw)], ["used_memory:1048576"])


def conn_uris(r: random.Random) -> Paste:
    pw1 = rs(r, 5) + "@" + rs(r, 7)
    pw2 = password(r)
    pw3 = rs(r, 16)
    text = (
        f"MONGO_URL=mongodb+srv://app:{pw1}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true\n"
        f"AMQP_URL=amqp://guest:{pw2}@rabbit:5672/%2F\n"
        f"REDIS_URL=rediss://:{pw3}@redis-12345.c1.us-east-1.cloud.redislabs.com:12345\n"
        "TEST_DB=postgres://user:${DB_PASSWORD}@localhost/test\n"
    )
    return Paste(
        "conn_uris",
        text,
        [
            ("connection_string_password", pw1),
            ("connection_string_password", pw2),
            ("connection_string_password", pw3),
        ],
        ["${DB_PASSWORD}"],
    )


def markdown_cred_table(r: random.Random) -> Paste:
    pw1, pw2 = password(r), password(r)
    text = (
        "| env | user | password |\n|-----|------|----------|\n"
        f"| staging | admin | {pw1} |\n| prod | admin | {pw2} |\n| local | admin | `<your-password>` |\n"
    )
    return Paste("markdown_cred_table", text, [("password", pw1), ("password", pw2)], ["<your-password>"])


def toml_config(r: random.Random) -> Paste:
    key = "hf_" + rs(r, 34)
    text = f'[huggingface]\ntoken = "{key}"\nrepo = "acme/llama-ft"\n\n[tool.poetry]\nversion = "0.4.2"\n'
    return Paste("toml_config", text, [("api_key", key)], ['version = "0.4.2"'])


def ini_config(r: random.Random) -> Paste:
    pw = password(r)
    text = f"[client]\nuser = backup\npassword = {pw}\nhost = 127.0.0.1\n\n[mysqldump]\nquick\n"
    return Paste("ini_config", text, [("password", pw)], ["host = 127.0.0.1"])


def powershell_env(r: random.Random) -> Paste:
    key, user = "sk-proj-" + rs(r, 48, ALNUM + "-_"), r.choice(USERS)
    path = f"C:\\Users\\{user}\\source\\repos\\bot"
    text = f'PS {path}> $env:OPENAI_API_KEY = "{key}"\nPS {path}> python .\\main.py\n'
    return Paste("powershell_env", text, [("api_key", key), ("home_path_user", user)], ["main.py"])


def linux_traceback(r: random.Random) -> Paste:
    user = r.choice(USERS)
    text = (
        "Traceback (most recent call last):\n"
        f'  File "/home/{user}/projects/etl/run.py", line 42, in <module>\n    main()\n'
        f'  File "/home/{user}/.local/lib/python3.11/site-packages/requests/api.py", line 59, in request\n'
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443)\n"
    )
    return Paste("linux_traceback", text, [("home_path_user", user)], ["python3.11", "api.example.com"])


def macos_prompt(r: random.Random) -> Paste:
    user = r.choice(USERS)
    text = f"{user}@{user}-MacBook-Pro ~/dev/app % npm run build\n> app@2.3.1 build\n> vite build\n"
    text += f"Error: ENOENT: no such file or directory, open '/Users/{user}/dev/app/.env.local'\n"
    return Paste("macos_prompt", text, [("home_path_user", user)], ["app@2.3.1", "vite build"])


def customer_csv(r: random.Random) -> Paste:
    rows, go = ["id,name,email,phone,card,iban,ssn"], []
    for i in range(3):
        first, last = r.choice(NAMES)
        e, p, c, b, s = email(r), phone(r), luhn_card(r), iban(r), ssn(r)
        rows.append(f'{1000 + i},{first} {last},{e},"{p}",{c},{b},{s}')
        go += [("email", e), ("phone", p), ("card", c), ("iban", b), ("ssn", s)]
    return Paste("customer_csv", "\n".join(rows) + "\n", go, ["id,name,email,phone,card,iban,ssn"])


def support_ticket(r: random.Random) -> Paste:
    e, p = email(r), phone(r)
    text = f"Customer wrote in: can't log in. Contact {e} or call {p}. Order #A-{r.randint(10000, 99999)}.\n"
    return Paste("support_ticket", text, [("email", e), ("phone", p)], ["Order #A-"])


def chat_bot_tokens(r: random.Random) -> Paste:
    slack = f"xoxb-{r.randint(10**11, 10**12 - 1)}-{r.randint(10**12, 10**13 - 1)}-{rs(r, 24)}"
    tg = f"{r.randint(10**9, 10**10 - 1)}:AA{rs(r, 33, ALNUM + '-_')}"
    disc = f"{rs(r, 24)}.{rs(r, 6)}.{rs(r, 38, ALNUM + '-_')}"
    text = f"SLACK_BOT_TOKEN={slack}\nTELEGRAM_TOKEN={tg}\nDISCORD_TOKEN={disc}\nSLACK_CHANNEL=#deploys\n"
    return Paste("chat_bot_tokens", text, [("token", slack), ("token", tg), ("token", disc)], ["#deploys"])


def gcp_sa_json(r: random.Random) -> Paste:
    key = pem(r, "PRIVATE KEY")
    kid = hexs(r, 40)
    escaped = key.replace("\n", "\\n")
    text = (
        '{\n  "type": "service_account",\n  "project_id": "acme-prod-381212",\n'
        f'  "private_key_id": "{kid}",\n  "private_key": "{escaped}",\n'
        '  "client_email": "ci-deployer@acme-prod-381212.iam.gserviceaccount.com"\n}\n'
    )
    body = key.split("\n")[1]
    return Paste("gcp_sa_json", text, [("private_key", body), ("api_key", kid)], ["acme-prod-381212"])


def azure_conn(r: random.Random) -> Paste:
    key = rs(r, 86, ALNUM + "+/") + "=="
    text = (
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeblobs;AccountKey={key};"
        "EndpointSuffix=core.windows.net\n"
    )
    return Paste("azure_conn", text, [("api_key", key)], ["core.windows.net"])


def twilio_init(r: random.Random) -> Paste:
    sid, tok = "AC" + hexs(r, 32), hexs(r, 32)
    text = f"from twilio.rest import Client\nclient = Client('{sid}', '{tok}')\nclient.messages.create(to='+15005550006')\n"
    return Paste("twilio_init", text, [("api_key", tok)], ["+15005550006"])


def npmrc_pypirc(r: random.Random) -> Paste:
    npm, pypi = "npm_" + rs(r, 36), "pypi-AgEIcHlwaS5vcmc" + rs(r, 60, ALNUM + "-_")
    text = (
        f"# ~/.npmrc\n//registry.npmjs.org/:_authToken={npm}\n\n# ~/.pypirc\n[pypi]\n  username = __token__\n"
        f"  password = {pypi}\n"
    )
    return Paste("npmrc_pypirc", text, [("api_key", npm), ("api_key", pypi)], ["__token__"])


def provider_env_mix(r: random.Random) -> Paste:
    keys = [provider_key(r) for _ in range(3)]
    text = "".join(f"export KEY_{i}={k}\n" for i, k in enumerate(keys)) + "export OPENAI_API_KEY=sk-...\n"
    return Paste("provider_env_mix", text, [("api_key", k) for k in keys], ["sk-..."])


def openssh_key(r: random.Random) -> Paste:
    key = pem(r, "OPENSSH PRIVATE KEY")
    text = f"$ cat ~/.ssh/id_ed25519\n{key}\n$ ssh -T git@github.com\n"
    return Paste("openssh_key", text, [("private_key", key)], ["git@github.com"])


def k8s_secret_stringdata(r: random.Random) -> Paste:
    pw, tok = password(r), "hvs." + rs(r, 24)
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secrets\ntype: Opaque\nstringData:\n"
        f'  DB_PASSWORD: "{pw}"\n  VAULT_TOKEN: {tok}\n'
    )
    return Paste("k8s_secret_stringdata", text, [("password", pw), ("token", tok)], ["app-secrets"])


def docker_compose_env(r: random.Random) -> Paste:
    pw = password(r)
    text = (
        "services:\n  db:\n    image: postgres:16.1\n    environment:\n"
        f'      - POSTGRES_PASSWORD={pw}\n      - POSTGRES_USER=app\n    ports:\n      - "5432:5432"\n'
    )
    return Paste("docker_compose_env", text, [("password", pw)], ["postgres:16.1"])


def curl_command(r: random.Random) -> Paste:
    key = "lin_api_" + rs(r, 40)
    text = (
        f"curl -s https://api.linear.app/graphql -H 'Authorization: {key}' "
        "-H 'Content-Type: application/json' -d '{\"query\":\"{ viewer { id } }\"}'\n"
    )
    return Paste("curl_command", text, [("api_key", key)], ["https://api.linear.app/graphql"])


def git_remote_token(r: random.Random) -> Paste:
    key = "glpat-" + rs(r, 20, ALNUM + "-_")
    text = (
        f"$ git remote -v\norigin\thttps://oauth2:{key}@gitlab.com/acme/infra.git (fetch)\n"
        f"origin\thttps://oauth2:{key}@gitlab.com/acme/infra.git (push)\n"
    )
    return Paste("git_remote_token", text, [("token", key)], ["gitlab.com/acme/infra.git"])


def jdbc_empty_user(r: random.Random) -> Paste:
    pw = password(r)
    text = f"Caused by: java.sql.SQLException: Access denied for url redis://:{pw}@10.0.0.7:6379/0\n\tat com.acme.Pool.get(Pool.java:88)\n"
    return Paste("jdbc_empty_user", text, [("connection_string_password", pw)], ["Pool.java:88"])


def windows_event_path(r: random.Random) -> Paste:
    user = r.choice(USERS)
    text = f"FileNotFoundError: [WinError 3] The system cannot find the path specified: 'C:\\\\Users\\\\{user}\\\\AppData\\\\Local\\\\Temp\\\\build'\n"
    return Paste("windows_event_path", text, [("home_path_user", user)], ["WinError 3"])


# ---- near-miss-only shapes (nothing must go) -----------------------------------------------------------------------


def lockfile_hashes(r: random.Random) -> Paste:
    h = hexs(r, 64)
    ver = near(r)[2]
    text = f'[[package]]\nname = "requests"\nversion = "{ver}"\nfiles = [\n  {{file = "requests.whl", hash = "sha256:{h}"}},\n]\n'
    return Paste("lockfile_hashes", text, [], [h, ver])


def placeholder_env(r: random.Random) -> Paste:
    text = (
        "# .env.example\nOPENAI_API_KEY=<your-token>\nSTRIPE_KEY=sk_test_xxxxxxxxxxxxxxxxxxxx\nDB_PASSWORD=${DB_PASSWORD}\n"
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nADMIN_EMAIL=admin@example.com\n"
    )
    return Paste(
        "placeholder_env", text, [], ["<your-token>", "${DB_PASSWORD}", "AKIAIOSFODNN7EXAMPLE", "admin@example.com"]
    )


def git_log(r: random.Random) -> Paste:
    sha, _, ver = near(r)
    text = f"commit {sha}\nAuthor: Dependabot <support@github.com>\nDate:   Mon Nov 30 10:12:01 2026\n\n    Bump lodash to {ver}\n"
    return Paste("git_log", text, [], [sha, "support@github.com", ver])


def k8s_describe(r: random.Random) -> Paste:
    _, uid, _ = near(r)
    digest = hexs(r, 64)
    text = f"Name:         web-7d9f8\nUID:          {uid}\nImage ID:     docker.io/library/nginx@sha256:{digest}\nIP:           10.244.1.17\n"
    return Paste("k8s_describe", text, [], [uid, digest, "10.244.1.17"])


def docs_snippet(r: random.Random) -> Paste:
    text = (
        "To authenticate, set `Authorization: Bearer <YOUR_API_KEY>` and pass\n"
        "`postgresql://user:password@localhost:5432/db`. Test card 4242 4242 4242 4242 works in test mode.\n"
    )
    return Paste("docs_snippet", text, [], ["<YOUR_API_KEY>", "4242 4242 4242 4242"])


def pip_freeze(r: random.Random) -> Paste:
    vers = [near(r)[2] for _ in range(3)]
    text = f"numpy=={vers[0]}\ntorch=={vers[1]}+cu121\ntransformers=={vers[2]}\n"
    return Paste("pip_freeze", text, [], vers)


def aws_arn_output(r: random.Random) -> Paste:
    acct = rs(r, 12, string.digits)
    text = f'{{\n  "UserId": "AIDA{rs(r, 17, string.ascii_uppercase + string.digits)}",\n  "Account": "{acct}",\n  "Arn": "arn:aws:iam::{acct}:role/ci"\n}}\n'
    return Paste("aws_arn_output", text, [], [f"arn:aws:iam::{acct}:role/ci"])


SHAPES: dict[str, Callable[[random.Random], Paste]] = {
    f.__name__: f
    for f in [
        terraform_tfvars, ansible_vars, gha_env, helm_values, systemd_unit, java_properties, spring_yml,
        django_settings, rails_database_yml, wp_config, php_dotenv, go_sdk_init, node_sdk_init, rust_client,
        python_dict, json_log_auth, http_dump, psql_cli, mysql_history, redis_cli, conn_uris, markdown_cred_table,
        toml_config, ini_config, powershell_env, linux_traceback, macos_prompt, customer_csv, support_ticket,
        chat_bot_tokens, gcp_sa_json, azure_conn, twilio_init, npmrc_pypirc, provider_env_mix, openssh_key,
        k8s_secret_stringdata, docker_compose_env, curl_command, git_remote_token, jdbc_empty_user,
        windows_event_path, lockfile_hashes, placeholder_env, git_log, k8s_describe, docs_snippet, pip_freeze,
        aws_arn_output,
    ]
}  # fmt: skip


def generate(seed: int = 0, n: int = 300) -> list[Paste]:
    """Cycle through SHAPES, one seeded generator per corpus, so the same seed gives the same pastes."""
    r = random.Random(seed)
    makers = list(SHAPES.values())
    return [makers[i % len(makers)](r) for i in range(n)]
