"""Secrets whose name is in a table cell or an option, and whose value is the next cell, column row, word or
list element. Each class is checked on several shapes; values are made up at run time."""

import random
import string

import pytest

from ichor.scrub import scrub
from tests.support import gone, kept

RNG = random.Random(15)


def secret() -> str:
    """A fresh password-like value: letters and digits, then a digit and a symbol."""
    body = "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(RNG.randint(10, 22)))
    return body + RNG.choice(string.digits) + RNG.choice("!#%&*+")


def token() -> str:
    return "".join(RNG.choice(string.ascii_lowercase + string.digits) for _ in range(32)) + "9"


# --- a secret-named cell, then its value in the next cell of the row ---------------------------------------

SAME_ROW_TABLES = [
    "| setting | value |\n|---|---|\n| region | eu-west-1 |\n| SMTP password | `{v}` |\n| retries | 5 |",
    "| Setting | Value |\n| --- | --- |\n| **DB password** | {v} |",
    "| name | value | note |\n|:--|:--|:--|\n| deploy_token | {v} | rotate monthly |",
    " name        | value\n-------------+-------\n db_password | {v}\n",
    "+-------------+-----------+\n| key         | value     |\n+-------------+-----------+\n| API key     | {v} |\n",
    "|client secret|{v}|",
    "+----------+------+\n| password | {v} |\n+----------+------+\n| token    | {w} |\n+----------+------+",
]


@pytest.mark.parametrize("shape", SAME_ROW_TABLES)
def test_a_secret_named_cell_loses_the_next_cells_value(shape):
    first, second = secret(), token()
    out = gone(shape.format(v=first, w=second), first, second)
    assert out.count("[REDACTED:env_secret]") == shape.count("{")
    assert "eu-west-1" in out or "eu-west-1" not in shape  # the other cells stay


COLUMN_TABLES = [
    ("| user | password |\n|------|----------|\n| app | {v} |\n| readonly | {w} |", ["app", "readonly"]),
    (
        "| Service | API Token | Owner |\n| --- | --- | --- |\n| billing | `{v}` | ana |\n| search | `{w}` | li |",
        ["billing", "ana", "search", "li"],
    ),
    (" login | passwd \n-------+--------\n app   | {v}\n ro    | {w}\n", ["app", "ro "]),
    ("+------+----------+\n| user | password |\n+------+----------+\n| app  | {v} |\n| ro   | {w} |\n", ["app"]),
]


@pytest.mark.parametrize(("shape", "kept"), COLUMN_TABLES)
def test_a_secret_named_column_loses_every_value_below_it(shape, kept):
    first, second = secret(), secret()
    out = gone(shape.format(v=first, w=second), first, second)
    assert out.count("[REDACTED:env_secret]") == 2
    assert all(word in out for word in kept)


KEPT_TABLES = [
    "| field | required |\n|---|---|\n| password | required |",
    "| Token | see the vault entry for prod |",
    "| password | ******** |",
    "| field | type |\n|---|---|\n| password | string |\n| token | str |\n| api_key | Optional[str] |",
    "| pass | fail | total |\n|---|---|---|\n| 12 | 0 | 12 |",
    "| Key | Description |\n|---|---|\n| api_key | Your API key from the dashboard |",
    "| token | ${DEPLOY_TOKEN} |",
    "| password | min. 12 characters, 1 digit |",
    "| user | password |\n|---|---|\n| app | <set in vault> |\n| ro | changeme |",
    "| sort_key | created_at |",
]


@pytest.mark.parametrize("text", KEPT_TABLES)
def test_table_cells_that_are_not_secrets_stay(text):
    kept(text)


# --- a secret-named option, then its value as the next word or list element --------------------------------

OPTION_SHAPES = [
    "redis-server --requirepass {v} --port 6379",
    "keytool -importkeystore -srcstorepass {v} -deststorepass {w}",
    "app serve --db-password {v} --workers 4",
    "vault login --client-secret '{v}'",
    'command: ["redis-server", "--requirepass", "{v}"]',
    "subprocess.run(['deploy', '--api-token', '{v}', '--region', 'eu'])",
    "command: [redis-server, --requirepass, {v}]",
    "command:\n  - redis-server\n  - --requirepass\n  - {v}\n  - --appendonly\n",
]


@pytest.mark.parametrize("shape", OPTION_SHAPES)
def test_a_secret_named_options_next_word_or_element_is_removed(shape):
    first, second = secret(), secret()
    text = shape.format(v=first, w=second)
    out = gone(text, first, second)
    assert "[REDACTED:cli_secret]" in out
    assert "--port 6379" in out or "--port" not in shape


KEPT_OPTIONS = [
    "run --password-file /etc/app/pw --verbose",
    "kubectl get secret --secret-name db-creds-2",
    "deploy --token $DEPLOY_TOKEN",
    'args: ["--password", "${DB_PASSWORD}"]',
    "git push --bypass sandbox1",
    "llm --max-tokens 4096 --api-key-env OPENAI_KEY",
    "redis-server --requirepass changeme",
    "app --token-ttl 3600s",
    "curl --oauth2-bearer-file ./tok",
]


@pytest.mark.parametrize("text", KEPT_OPTIONS)
def test_options_whose_value_is_not_a_secret_stay(text):
    kept(text)


# --- -p as a list element: only for clients where -p means password ----------------------------------------

P_IN_LISTS = [
    '["mysql", "-h", "db", "-u", "app", "-p{v}"]',
    "cmd = ['twine', 'upload', '-u', '__token__', '-p', '{v}', 'dist/*']",
    'RUN ["docker", "login", "-u", "bot", "-p", "{v}", "registry.local"]',
]


@pytest.mark.parametrize("shape", P_IN_LISTS)
def test_a_password_given_to_a_known_client_as_a_list_element_is_removed(shape):
    value = secret()
    assert "[REDACTED:cli_secret]" in gone(shape.format(v=value), value)


@pytest.mark.parametrize(
    "text", ['["mkdir", "-p", "/srv/app2"]', 'CMD ["ssh", "-p", "2222", "host"]', '["tar", "-p", "-xf", "a2.tar"]']
)
def test_p_meaning_a_folder_or_port_in_a_list_stays(text):
    kept(text)


# --- repeated rows and options: each one removed -----------------------------------------------------------


def test_many_secret_rows_are_each_removed():
    values = [secret() for _ in range(300)]
    text = "| user | password |\n|---|---|\n" + "".join(f"| u{i} | {v} |\n" for i, v in enumerate(values))
    result = scrub(text)
    assert not any(v in result.text for v in values)
    assert result.removed == {"env_secret": 300}


def test_many_secret_options_in_one_list_are_each_removed():
    values = [token() for _ in range(200)]
    text = "[" + ", ".join(f'"--auth-token", "{v}"' for v in values) + "]"
    result = scrub(text)
    assert not any(v in result.text for v in values)
    assert result.removed == {"cli_secret": 200}


# --- dates are not phone numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize("date", ["01.02.2024", "09-12-2021", "07.11.1999", "03-25-2026"])
def test_a_date_with_a_leading_zero_is_not_a_phone_number(date):
    text = f"released on {date}, see the changelog"
    kept(text)


@pytest.mark.parametrize("phone", ["07700 900123", "06 12 34 56 78", "090-1234-5678", "01-23-4567"])
def test_national_numbers_beside_dates_are_still_removed(phone):
    assert scrub(f"on 01.02.2024 call {phone}").text == "on 01.02.2024 call [PHONE]"


# --- names glued or in camelCase ---------------------------------------------------------------------------

GLUED_AND_CAMEL = [
    "PGPASSWORD={v} psql -h db -U app",
    "set MYSQLPWD={v}",
    "helm install db bitnami/postgresql --set auth.rootPassword={v}",
    'const config = {{ adminPassword: "{v}", port: 5432 }}',
    "dbPass: {v}",
    "clientSecret={v}",
    "masterpass={v}",
]


@pytest.mark.parametrize("shape", GLUED_AND_CAMEL)
def test_a_secret_word_glued_on_or_in_camel_case_names_a_secret(shape):
    value = secret()
    gone(shape.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "bypass=admin",
        "compass: north",
        "const dbPassword = userInput;",
        "let tokenCount = 4096",
        "sortKey: created_at",
        "publicKey = loadKey(path)",
        "maxTokens: 512",
    ],
)
def test_glued_and_camel_case_names_that_hold_no_secret_stay(text):
    kept(text)


# --- a name and its value in other layouts: a line of two words, a markup element, a record's two fields ---

LAYOUTS = [
    "# redis.conf\nbind 127.0.0.1\nrequirepass {v}\nappendonly yes\n",
    "machine api.corp.example login ana password {v}\n",
    "machine api.corp.example\n  login ana\n  password {v}\n",
    "FROM node:20\nENV NPM_TOKEN {v}\nRUN npm ci\n",
    "setenv GITHUB_TOKEN {v}",
    "<settings><servers><server><id>nexus</id><password>{v}</password></server></servers></settings>",
    '<appSettings>\n  <add key="ApiKey" value="{v}" />\n</appSettings>',
    "env:\n  - name: DB_PASSWORD\n    value: {v}\n  - name: LOG_LEVEL\n    value: debug\n",
    '"environment": [{{"name": "STRIPE_SECRET", "value": "{v}"}}, {{"name": "REGION", "value": "eu"}}]',
]


@pytest.mark.parametrize("shape", LAYOUTS)
def test_a_secret_named_value_in_another_layout_is_removed(shape):
    value = secret()
    out = gone(shape.format(v=value), value)
    assert "debug" in out or "debug" not in shape


KEPT_LAYOUTS = [
    "Password changed\nToken expired\n",
    "ENV PATH /usr/local/bin",
    "<password>${env.NEXUS_PASSWORD}</password>",
    "<token>true</token>",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    "key: password\nvalue: required\n",
    "machine api.corp.example login ana password $NETRC_PW",
    '{"name": "LOG_LEVEL", "value": "debug2"}',
]


@pytest.mark.parametrize("text", KEPT_LAYOUTS)
def test_layouts_without_a_secret_value_stay(text):
    kept(text)


# --- HTTP credentials: an Authorization header of any scheme, and cookie values ---------------------------

HTTP_SHAPES = [
    "Authorization: Token {t}",
    'curl -H "Authorization: ApiKey {t}" https://api.corp.example/v1',
    'headers = {{"Authorization": "SSWS {t}", "Accept": "application/json"}}',
    "Proxy-Authorization: {t}",
    "Cookie: theme=dark; sessionid={t}; lang=en",
    "Set-Cookie: session={t}; Path=/; HttpOnly; Secure",
    'curl -b "connect.sid={t}" https://app.corp.example/me',
]


@pytest.mark.parametrize("shape", HTTP_SHAPES)
def test_http_credentials_are_removed_whatever_the_scheme_or_cookie_name(shape):
    value = token()
    out = gone(shape.format(t=value), value)
    assert "[REDACTED:bearer]" in out and ("theme=dark" in out or "theme" not in shape)


@pytest.mark.parametrize(
    "text",
    [
        "Authorization header is required",
        "the Authorization: Token header carries the key",
        "Cookie: theme=dark; lang=en",
        "Set-Cookie: id=a3fWa; Expires=Thu, 21 Oct 2021 07:28:00 GMT",
        "tar -b 20 -cf backup.tar src",
    ],
)
def test_http_text_without_a_credential_stays(text):
    kept(text)


# --- small layouts: YAML anchors and tags, R's <-, redis-cli -a, getenv defaults, .pgpass lines ----------

SMALL_LAYOUTS = [
    "database:\n  password: &db_pw {v}\n  replica_password: *db_pw\n",
    "secret: !!binary {v}",
    'api_key <- "{v}"',
    "redis-cli -h cache.internal -a {v} ping",
    'password = os.getenv("DB_PASSWORD", "{v}")',
    'token = ENV.fetch("API_TOKEN", "{v}")',
    "db.corp.internal:5432:app:alice:{v}\n*:*:*:postgres:{w}\n",
]


@pytest.mark.parametrize("shape", SMALL_LAYOUTS)
def test_a_secret_in_a_small_layout_is_removed(shape):
    first, second = secret(), secret()
    gone(shape.format(v=first, w=second), first, second)


@pytest.mark.parametrize(
    "text",
    [
        "ls -a /tmp",
        "git commit -a -m 'fix'",
        "defaults: &defaults\n  adapter: postgres\n",
        "token <- getToken()",
        'level = os.getenv("LOG_LEVEL", "debug2x")',
        "main.c:10:5:warning:unused",
        "12:00:00:00:00",
        "root:x:0:0:root:/root:/bin/bash",
    ],
)
def test_small_layouts_without_a_secret_stay(text):
    kept(text)


# --- a name as a subscript key, a typed name, a call's arguments -------------------------------------------

CODE_SHAPES = [
    'os.environ["DB_PASSWORD"] = "{v}"',
    "config['api_key'] = '{v}'",
    'headers["X-Auth-Token"] = "{v}"',
    '$_ENV["SECRET_KEY"] = "{v}";',
    'let token: string = "{v}";',
    'const API_KEY: &str = "{v}";',
    "define( 'DB_PASSWORD', '{v}' );",
    "define('AUTH_KEY', '{v}');",
    'System.setProperty("db.password", "{v}");',
    'os.environ.setdefault("API_TOKEN", "{v}")',
    'password = os.getenv("DB_PASSWORD", "{v}")',
    'keyring.set_password("deploy", "ana", "{v}")',
    'new PostgreSQLContainer("postgres:16").withPassword("{v}")',
    'DataSourceBuilder.create().username("app").password("{v}").build()',
]


@pytest.mark.parametrize("shape", CODE_SHAPES)
def test_a_secret_in_code_is_removed_whatever_holds_its_name(shape):
    value = secret()
    gone(shape.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        'x["password"] = request.form["password"]',
        "password: Optional[str] = None",
        "token: str = Field(...)",
        'get_secret("prod-db-1")',
        'getPassword("db-1")',
        'translate("password", "Passwort")',
        "define('DB_PASSWORD', 'password_here');",
        'os.getenv("API_KEY", "")',
        'print("token", "expired")',
    ],
)
def test_code_that_names_a_secret_without_holding_one_stays(text):
    kept(text)


def test_provider_urls_and_tokens_without_a_name_are_removed():
    webhook = "".join(RNG.choice(string.ascii_letters + string.digits + "_-") for _ in range(68))
    access = "ya29." + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(60))
    refresh = "1//0" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(60))
    text = f"POST https://discord.com/api/webhooks/123456789012345678/{webhook}\n{access}\n{refresh}"
    gone(text, webhook, access, refresh)


def test_base64_padding_after_a_colon_is_not_a_type_annotation():
    value = "c2VjcmV0LXZhbHVlLTQy" + RNG.choice(["=", "=="])
    gone(f"data:\n  db-password: {value}\n", value)


# --- a token as a URL's user, piped secrets, more clients' -p, named elements, triple quotes, YAML blocks ---

MORE_SHAPES = [
    "git remote add origin https://{t}@github.com/org/repo.git",
    "echo {v} | docker login -u bot --password-stdin ghcr.io",
    "docker login -u bot --password-stdin <<< '{v}'",
    "az login --service-principal -u app-id -p {v} --tenant corp",
    "oc login -u dev -p {v} https://api.cluster.internal:6443",
    "mongosh -u admin -p {v} --authenticationDatabase admin",
    '<param name="token">{v}</param>',
    '<entry key="db.password">{v}</entry>',
    'password = """{v}"""',
    "credentials:\n  password: >-\n    {v}\n  user: app\n",
]


@pytest.mark.parametrize("shape", MORE_SHAPES)
def test_more_layouts_lose_their_secret(shape):
    value, long_token = secret(), token()
    gone(shape.format(v=value, t=long_token), value, long_token)


@pytest.mark.parametrize(
    "text",
    [
        "git clone https://github.com/org/repo.git",
        "https://firstname.lastname@corp.example.com/wiki",
        "echo $CR_PAT | docker login ghcr.io -u bot --password-stdin",
        "mongosh -p 27017",
        '<param name="timeout">30</param>',
        'doc = """\nthe password is used here\n"""',
        "description: |\n  the token is stored in the vault\n",
    ],
)
def test_more_layouts_without_a_secret_stay(text):
    kept(text)


# --- PII: zsh prompts and ~user homes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(base) priya@MacBook-Pro ~ % ls", "(base) [USER]@MacBook-Pro ~ % ls"),
        ("dmitri@ws-22 /srv/app % make", "[USER]@ws-22 /srv/app % make"),
        ("cp ~akosua/notes.txt .", "cp ~[USER]/notes.txt ."),
    ],
)
def test_a_user_name_in_a_zsh_prompt_or_a_tilde_home_is_removed(text, expected):
    assert scrub(text).text == expected


@pytest.mark.parametrize("text", ["cd ~/src", "ls ~root/.ssh", "about ~5min/day", "HEAD~1/x"])
def test_tilde_paths_that_name_no_one_stay(text):
    kept(text)


@pytest.mark.parametrize(
    "text",
    [
        "| Secret | kubernetes.io/tls |",
        "| token | not-set |",
        "secret kubernetes.io/dockerconfigjson",
        'os.environ.get("API_TOKEN", "not-set")',
        'os.getenv("SECRET_KEY", "dev-secret-key")',
    ],
)
def test_words_joined_by_punctuation_are_not_values_without_an_operator(text):
    kept(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on-call: 07320 890093 00", "on-call: [PHONE] 00"),
        ("ring 06 12 34 56 78 9 times", "ring [PHONE] 9 times"),
        ("on 01.02.2024 12", "on 01.02.2024 12"),
    ],
)
def test_a_national_number_followed_by_another_number_is_still_removed(text, expected):
    assert scrub(text).text == expected


@pytest.mark.parametrize("value", ["!0UFtryTXsbQxEId", "&Zq8vR2mK9xLL!"])
def test_a_password_that_starts_like_a_yaml_tag_or_anchor_is_removed(value):
    gone(f"password: {value} x", value)


def test_a_home_assistant_secret_reference_stays():
    assert scrub("password: !secret db_password").text == "password: !secret db_password"


# --- a user:password credential argument whose password alone is quoted ------------------------------------

QUOTED_USERINFO = [
    "curl -u {u}:'{v}' https://ci.example.internal/api/json",
    'curl --user {u}:"{v}" -X POST https://ci.example.internal/build',
    "curl -su {u}:'{v}' https://registry.example.internal/v2/",
    "curl --user={u}:'{v}' https://example.internal",
]


@pytest.mark.parametrize("shape", QUOTED_USERINFO)
def test_a_quoted_password_after_user_colon_is_removed_and_the_user_and_quotes_stay(shape):
    user, value = RNG.choice(["ana", "dev.ops", "ci_bot"]), secret()
    out = gone(shape.format(u=user, v=value), value)
    assert f"{user}:" in out
    assert scrub(out).text == out
