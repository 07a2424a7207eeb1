"""Classes of secrets that a name's operator does not announce, and near-misses that look like them.

Each class is tested in several shapes; values are assembled at run time from a seeded generator, so no
secret-shaped literal is committed and no test copies a corpus paste.
"""

import base64
import random
import string

import pytest

from ichor.scrub import scrub
from tests.support import gone, kept

RNG = random.Random(15)
WORDS = ["Cedar", "Harbor", "Lagoon", "Sequoia", "Willow", "Tundra", "Copper", "Meadow"]


def token(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def password() -> str:
    return RNG.choice(WORDS) + token(4, string.digits) + RNG.choice("!#?") + token(3)


# --- a value that starts like a placeholder but carries material past its closing bracket ----------------

BRACKETED = [
    f"<{RNG.choice(WORDS)}>{token(4, string.digits)}",
    f"{{{token(10)}}}#{token(2, string.digits)}",
    f"<{RNG.choice(WORDS)}>{token(3)}!",
    f"({token(6)}){token(3, string.digits)}",
]


@pytest.mark.parametrize("value", BRACKETED)
@pytest.mark.parametrize(
    "template",
    ["DB_PASSWORD={v}", 'password: "{v}"', "spring.mail.password={v}", '"MINIO_ROOT_PASSWORD": "{v}",'],
)
def test_bracketed_start_with_material_after_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "JWT_SECRET=<random 64 hex chars>",
        "API_KEY=<your-stripe-key>",
        'password: "<password>"',
        "OPENAI_API_KEY=sk-<your key>",
        "DB_PASSWORD={DB_PASSWORD}",
        "token = {x}.format(x)",
        "password=(a * b)",
    ],
)
def test_whole_placeholders_and_code_stay(text):
    kept(text)


# --- JSON inside a JSON string: escaped quotes around names and values -----------------------------------


@pytest.mark.parametrize("name", ["CLOUDFLARE_API_TOKEN", "TWILIO_AUTH_TOKEN", "STRIPE_WEBHOOK_SECRET", "dbPassword"])
def test_escaped_json_values_go(name):
    value = token(32)
    gone(f'{{"SecretString": "{{\\"{name}\\": \\"{value}\\", \\"region\\": \\"eu\\"}}"}}', value)


def test_escaped_json_reference_stays():
    kept('"SecretString": "{\\"DB_PASSWORD\\": \\"${DB_PASSWORD}\\"}"')


# --- a "name:" that is a segment of something else --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f'"ARN": "arn:aws:secretsmanager:eu-west-1:{token(12, string.digits)}:secret:prod/api-{token(6)}",',
        f"arn:aws:ssm:us-east-1:{token(12, string.digits)}:parameter:token:{token(8)}",
        "git clone https://gitlab-ci-token:$CI_JOB_TOKEN@gitlab.com/group/deps.git",
        "git clone https://oauth2:${GITLAB_TOKEN}@gitlab.example/x.git",
        "scp build.tgz $DEPLOY_USER@$DEPLOY_HOST:/srv",
    ],
)
def test_identifier_segments_and_references_stay(text):
    kept(text)


def test_url_password_after_a_token_user_still_goes():
    value = "glpat-" + token(20)
    out = gone(f"git clone https://gitlab-ci-token:{value}@gitlab.com/group/deps.git", value)
    assert "gitlab-ci-token:" in out


# --- keys that find a record rather than unlock anything ----------------------------------------------------


@pytest.mark.parametrize("name", ["Idempotency-Key", "cache_key", "partitionKey", "SORT_KEY", "x-dedup-key"])
def test_lookup_keys_stay(name):
    kept(f'{name}: "{token(8, "0123456789abcdef")}-{token(4, "0123456789abcdef")}-4{token(3, "0123456789")}"')


@pytest.mark.parametrize("name", ["API_KEY", "signing_key", "X-Api-Key", "licenseKey"])
def test_other_keys_still_go(name):
    value = token(24)
    gone(f"{name}: {value}", value)


# --- a GraphQL variable's type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "mutation Login($email: String!, $password: String!) { login }",
        "query Me($token: ID!) { me }",
        "mutation Rotate($secret: [String!]!, $apiKey: Secret) { rotate }",
    ],
)
def test_graphql_variable_types_stay(text):
    kept(text)


def test_a_password_shaped_like_a_type_without_a_variable_still_goes():
    value = RNG.choice(WORDS) + token(4, string.digits) + "!"
    gone(f"password: {value}", value)


# --- SQL's keyword-then-literal credentials -----------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "CREATE ROLE reporting WITH LOGIN PASSWORD '{v}';",
        "ALTER USER app WITH ENCRYPTED PASSWORD '{v}';",
        "CREATE USER 'etl'@'%' IDENTIFIED BY '{v}';",
        "create user etl identified by {v};",
        'ALTER LOGIN sa WITH PASSWORD = "{v}"',
    ],
)
def test_sql_credentials_go(template):
    value = password()
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "CREATE ROLE r WITH LOGIN PASSWORD 'changeme';",
        "ALTER USER app PASSWORD '$1';",
        "the password field is required",
        "SELECT password FROM users WHERE id = 4;",
    ],
)
def test_sql_near_misses_stay(text):
    kept(text)


# --- a header set by a server's configuration ------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "proxy_set_header X-Api-Key {v};",
        'add_header X-Auth-Token "{v}" always;',
        "RequestHeader set X-Api-Key {v}",
        "http-request set-header X-Api-Token {v}",
        "header_up X-Api-Key {v}",
    ],
)
def test_header_directive_values_go(template):
    value = token(40, "0123456789abcdef")
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "proxy_set_header X-Api-Key $http_x_api_key;",
        "proxy_set_header Host $host;",
        f"add_header X-Request-Id {token(20)};",
        "proxy_set_header X-Forwarded-Proto https;",
    ],
)
def test_header_directive_near_misses_stay(text):
    kept(text)


# --- PowerShell's plain-text SecureString ----------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        '$s = ConvertTo-SecureString "{v}" -AsPlainText -Force',
        "$s = ConvertTo-SecureString -String '{v}' -AsPlainText -Force",
        'New-LocalUser bob -Password (ConvertTo-SecureString "{v}" -AsPlainText -Force)',
    ],
)
def test_secure_string_literals_go(template):
    value = RNG.choice(WORDS) + RNG.choice(WORDS) + token(3, string.digits)
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "$s = ConvertTo-SecureString $env:DB_PASSWORD -AsPlainText -Force",
        '$s = ConvertTo-SecureString "$plain" -AsPlainText -Force',
        "$s = Read-Host -AsSecureString",
    ],
)
def test_secure_string_references_stay(text):
    kept(text)


# --- base64 "user:password" under an auth name -------------------------------------------------------------


def _blob() -> str:
    return base64.b64encode(f"{RNG.choice(['ci', 'deploy', 'bot'])}:{password()}".encode()).decode()


@pytest.mark.parametrize("template", ['"auth": "{v}"', "_auth={v}", "  auth: {v}", "//npm.corp/:_auth = {v}"])
def test_auth_blobs_go(template):
    value = _blob()
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    ['"auth": "required"', f'"auth": "{base64.b64encode(b"just-a-name").decode()}"', '"auth": true', "auth: oauth2"],
)
def test_auth_values_that_are_not_credentials_stay(text):
    kept(text)


# --- a Netscape cookie file's value column -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["_session_id", "remember_token", "sid", "__Host-next-auth.csrf"])
def test_cookie_jar_values_go(name):
    value = token(80, string.ascii_letters + string.digits + "-_")
    line = f".corp.io\tTRUE\t/\tTRUE\t1767225600\t{name}\t{value}"
    out = gone(f"# Netscape HTTP Cookie File\n{line}\n#HttpOnly_{line}\n", value)
    assert f"\t{name}\t" in out


@pytest.mark.parametrize("value", ["en", "dark", "1", "true"])
def test_cookie_jar_short_values_stay(value):
    kept(f".corp.io\tTRUE\t/\tFALSE\t1767225600\tlocale\t{value}\n")


# --- prose that says what a secret is -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "her password is {v}. How do I connect?",
        "The DB passphrase was {v}, I think.",
        "my api key is {v}",
        "the admin login is admin / {v} if you need it",
        "credentials: root / {v}",
        "the staging password is `{v}`, rotate it",
    ],
)
def test_prose_secrets_go(template):
    value = password()
    out = gone(template.format(v=value), value)
    assert "`" not in template or "`[REDACTED:env_secret]`" in out


def test_a_login_pair_takes_a_hyphenated_passphrase():
    value = "-".join(RNG.choice(["otter", "falcon", "fjord", "topaz", "saffron"]) for _ in range(4))
    gone(f"the Jenkins login is admin / {value} for now", value)


@pytest.mark.parametrize(
    "text",
    [
        "the password is wrong",
        "the token is expired, refresh it",
        "my password is stored in the vault",
        "login is admin / see the vault",
        "the secret is to cache less",
        "the password is ${DB_PASSWORD}",
    ],
)
def test_prose_near_misses_stay(text):
    kept(text)


# --- zsh's prompt, which shows a folder's last part -----------------------------------------------------------


@pytest.mark.parametrize("folder", ["api", "trading_bot", "DualDropSnake", "my-app.v2"])
def test_zsh_folder_prompts_lose_the_user(folder):
    user = "".join(RNG.choice(string.ascii_lowercase) for _ in range(7))
    out = gone(f"{user}@devbox {folder} % ls -la\n(venv) {user}@Mac-mini-2 {folder} % pytest", user)
    assert f"[USER]@devbox {folder} %" in out


@pytest.mark.parametrize("text", ["ping me@corp then 50 % off", "use git@github.com:org/repo % done"])
def test_text_that_is_not_a_prompt_keeps_its_shape(text):
    assert scrub(text).text.endswith(text[-6:])


# --- framework secrets named with a trailing "base" ------------------------------------------------------------


@pytest.mark.parametrize(
    "template", ["secret_key_base: {v}", "SECRET_KEY_BASE={v}", 'config :app, App.Endpoint, secret_key_base: "{v}"']
)
def test_secret_key_base_goes(template):
    value = token(128, "0123456789abcdef")
    gone(template.format(v=value), value)


# --- blind v5's classes: values that no operator joins to their name ---------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "C:\\> setx NUGET_FEED_PAT {v}",
        "set -gx MAILGUN_API_KEY {v}",
        "set -Ux OPENAI_TOKEN '{v}'",
        "launchctl setenv DB_PASSWORD {v}",
    ],
)
def test_set_commands_lose_secret_values(template):
    value = token(36, string.ascii_lowercase + string.digits)
    gone(template.format(v=value), value)


@pytest.mark.parametrize("text", ["set -gx EDITOR vim", "setx PATH C:\\tools", "set -x API_TOKEN not-set"])
def test_set_commands_keep_other_values(text):
    kept(text)


@pytest.mark.parametrize(
    "template",
    [
        'password: <%= ENV.fetch("DATABASE_PASSWORD") {{ "{v}" }} %>',
        'tok = os.getenv("API_TOKEN", "{v}")',
        "key = os.environ.get('STRIPE_SECRET', '{v}')",
        'const k = process.env.DB_PASS ?? "{v}";',
        "PGPASSWORD=${{DB_PASSWORD:-{v}}} psql",
    ],
)
def test_env_fallbacks_go(template):
    value = password()
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        'level = os.getenv("LOG_LEVEL", "info")',
        'tok = os.environ.get("API_TOKEN", "not-set")',
        'x = cache.get("session_token", default)',
        'v = d.get("password", "")',
    ],
)
def test_env_fallbacks_keep_words_and_other_names(text):
    kept(text)


@pytest.mark.parametrize("name", ["datadog_api_key", "db_password", "cloudflare_token"])
def test_terraform_variable_defaults_go(name):
    value = token(32, "0123456789abcdef")
    out = gone(f'variable "{name}" {{\n  type = string\n  default = "{value}"\n}}', value)
    kept('variable "region" {\n  default = "eu-west-1"\n}')
    assert "default" in out


@pytest.mark.parametrize(
    "template",
    [
        'requests.get(url, auth=("svc-reports", "{v}"), timeout=10)',
        "$pdo = new PDO('mysql:host=db;dbname=shop', 'wp_user', '{v}');",
        '$db = mysqli_connect("localhost", "root", "{v}", "shop");',
        "$db = new mysqli('localhost', 'app', '{v}', 'shop');",
    ],
)
def test_positional_passwords_go(template):
    value = password()
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text", ['requests.get(url, auth=("user", os.environ["PW"]))', "new PDO($dsn, $user, $password);"]
)
def test_positional_references_stay(text):
    kept(text)


# --- blind v5's classes: prose in the languages people paste in ----------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "Temporary password we set was {v} but the portal says AUTH_FAILED",
        "the root password is\n{v}\nand our key is elsewhere",
        'hat das Passwort für die Staging-Datenbank auf „{v}" geändert',
        "La contraseña del usuario admin es {v} (la cambió ayer).",
        "A senha do Grafana é {v} e o cartão",
        "本番DBのパスワードは「{v}」に変更しました。",
        "Le mot de passe est {v}.",
    ],
)
def test_prose_passwords_in_other_languages_go(template):
    value = password()
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "the password you set was wrong",
        "das Passwort ist falsch",
        "mutation Login($email: String!, $password: String!) { login }",
        "the password is\nthe same as before",
        "password policy: min 8 chars",
    ],
)
def test_prose_password_near_misses_stay(text):
    kept(text)


@pytest.mark.parametrize(
    "template",
    [
        "The API key for the sandbox is <your-token> and prod is {v}.",
        "the token for staging is {v}, and for prod it is {w}",
    ],
)
def test_a_second_value_of_one_sentence_goes(template):
    value, other = token(40, "0123456789abcdef"), token(40, "0123456789abcdef")
    gone(template.format(v=value, w=other), value, other)


def test_a_second_count_in_a_sentence_stays():
    kept("the token limit is 8192 and the context is 128000 tokens")


# --- blind v5's classes: commands and blobs that carry a secret ----------------------------------------------


@pytest.mark.parametrize(
    "template",
    ["$ wandb login {v}", "wandb login --relogin {v}", "ngrok config add-authtoken {v}", "ngrok authtoken {v}"],
)
def test_token_commands_lose_their_argument(template):
    value = token(40, "0123456789abcdef")
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "command",
    [
        "$ kubectl get secret app -o jsonpath='{.data.DB_PASSWORD}' | base64 -d",
        "kubectl get secret regcred -o jsonpath={.data.token} | base64 --decode",
        "echo $ENCODED_API_KEY | base64 -D",
    ],
)
def test_a_decoded_secret_on_the_next_line_goes(command):
    value = password()
    gone(f"{command}\n{value}\n\n$ next", value)


def test_a_decoded_word_that_is_no_secret_stays():
    kept("echo aGVsbG8= | base64 -d\nhello world")
    kept("kubectl get secret app -o jsonpath='{.data.username}' | base64 -d\nadmin")


def test_urllib_port_errors_lose_the_password_tail():
    tail = password()
    gone(f"ValueError: Port could not be cast to integer value as '{tail}@db'", tail)
    kept("ValueError: Port could not be cast to integer value as '54x32'")


@pytest.mark.parametrize("key", ["password", "auth", "token"])
def test_base64_json_with_credentials_goes(key):
    import json

    blob = base64.b64encode(json.dumps({"auths": {"ghcr.io": {key: password()}}}).encode()).decode()
    gone(f"data:\n  .dockerconfigjson: {blob}\n", blob)
    plain = base64.b64encode(json.dumps({"name": "web", "replicas": 3}).encode()).decode()
    kept(f"data:\n  config.json: {plain}\n")
