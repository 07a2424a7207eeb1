"""Value shapes that a name's context refused, and the near-misses that share their look.

Passphrases of dotted or dashed words, values that start with a brace, curl's switch clusters, a call given a
user and a password, a secret-named list of literals, and two provider token formats. Values are assembled at
run time from a seeded generator; none copies a corpus paste.
"""

import base64
import random
import string

import pytest

from ichor.scrub import scrub

RNG = random.Random(1509)
LOWER = string.ascii_lowercase
B62 = string.ascii_letters + string.digits


def token(n: int, alphabet: str = B62) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def word() -> str:
    return token(RNG.randint(4, 9), "bcdfghjlmnrstvz")  # consonants only: never a name part such as "key"


def passphrase(sep: str, words: int) -> str:
    return sep.join(word() for _ in range(words))


def gone(text: str, secret: str) -> None:
    out = scrub(text).text
    assert secret not in out, (text, out)


def kept(text: str) -> None:
    assert scrub(text).text == text


# --- passphrases: lower-case words joined by one separator --------------------------------------------------

PASSPHRASES = [passphrase(".", 3), passphrase(".", 4), passphrase("-", 3), passphrase("-", 5)]


@pytest.mark.parametrize("value", PASSPHRASES)
@pytest.mark.parametrize(
    "template",
    [
        "redis:\n  password: {v}\n",
        "[admin]\nmaster_password={v}\n",
        "web1 ansible_host=h1 ansible_password={v} ansible_user=ops\n",
        "define( 'DB_PASSWORD', '{v}' );",
        "| Host | User | Password |\n|---|---|---|\n| db | admin | `{v}` |\n",
        "    environment:\n      GF_SECURITY_ADMIN_PASSWORD: {v}\n",
    ],
)
def test_passphrase_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "password = settings.database.password",
        "DB_PASSWORD = config.database.password",
        "token = response.json.access_token",
        "api_key = app.settings.openai_key",
        "password: self.db.password",
        "password = request.user.profile",
    ],
)
def test_attribute_chain_naming_a_secret_stays(text):
    kept(text)


# --- a value that starts with a brace -------------------------------------------------------------------------


def braced_word() -> str:
    """Mixed case that no naming style makes: two capitals in a row between lower-case runs."""
    return token(3, LOWER) + token(2, string.ascii_uppercase) + token(4, LOWER) + token(2, string.digits + LOWER)


@pytest.mark.parametrize("value", ["{" + braced_word() + "}", "{" + braced_word()])
@pytest.mark.parametrize(
    "template", ["users:\n  - name: ops\n    password: {v}\n", "keystore.password={v}\n", "x ansible_password={v} y=1"]
)
def test_braced_value_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize("field", ["{password}", "{db_password}", "{DB_PASSWORD}", "{dbPassword}", "{0}", "{Pass}"])
@pytest.mark.parametrize("template", ["password: {v}\n", "DB_PASSWORD={v}\n"])
def test_template_field_stays(template, field):
    kept(template.format(v=field))


# --- curl's switches clustered before -u ----------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["-su", "-ku", "-sLu", "-fsu"])
def test_user_after_a_switch_cluster_goes(cluster):
    secret = token(5) + "." + token(4, string.digits)
    gone(f"curl {cluster} ops:{secret} https://grafana.internal/api/health", secret)


@pytest.mark.parametrize("cluster", ["-su", "-ku"])
def test_switch_cluster_with_a_variable_stays(cluster):
    kept(f"curl {cluster} ops:$GRAFANA_PASSWORD https://grafana.internal/api/health")


# --- a call given a user and a password -----------------------------------------------------------------------

APP_PASSWORD = " ".join(token(4, LOWER) for _ in range(4))
GENERATED = token(8) + "!" + token(6)


@pytest.mark.parametrize("value", [APP_PASSWORD, GENERATED])
@pytest.mark.parametrize(
    "template",
    [
        'server.login("ops@{d}", "{v}")',
        'conn = DriverManager.getConnection("jdbc:mysql://db:3306/app", "report", "{v}");',
        'var cred = new NetworkCredential("svc", "{v}");',
        "auth = HTTPBasicAuth('svc', '{v}')",
    ],
)
def test_password_argument_goes(template, value):
    gone(template.format(v=value, d="example.org"), value)


@pytest.mark.parametrize(
    "text",
    [
        'server.login("ops@example.org", os.environ["SMTP_PASSWORD"])',
        'DriverManager.getConnection(url, "report", "${DB_PASSWORD}");',
        'client.login("admin", "/var/lib/app/login.html")',
        'server.login("user", "password")',
        'log.info("login", "user signed in")',
    ],
)
def test_non_password_argument_stays(text):
    kept(text)


# --- a list of literals under a secret's name -----------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    ['TWILIO_API_KEY = ["SK{a}", "{b}"]', "secret_key: ['{a}', '{b}']", '"bot_token": ["{a}", "{b}"],'],
)
def test_secret_named_list_elements_go(template):
    a, b = token(32, "0123456789abcdef"), token(32)
    out = scrub(template.format(a=a, b=b)).text
    assert a not in out and b not in out, out


@pytest.mark.parametrize(
    "text", ['SORT_KEY = ["name", "created_at"]', 'API_TOKEN = ["${API_TOKEN}", "your-token-here"]', "token = [x, y]"]
)
def test_list_of_names_or_placeholders_stays(text):
    kept(text)


# --- provider formats -----------------------------------------------------------------------------------------


def discord_bot_token() -> str:
    bot_id = base64.b64encode(token(18, string.digits).encode()).decode().rstrip("=")
    return f"{bot_id}.{token(6, B62 + '-_')}.{token(RNG.randint(27, 38), B62 + '-_')}"


@pytest.mark.parametrize(
    "template",
    [
        'let client = Client::builder("{v}", GatewayIntents::all());',
        "client.run('{v}')",
        "bot = Bot(token={v})",
    ],
)
def test_discord_bot_token_goes(template):
    value = discord_bot_token()
    gone(template.format(v=value), value)


@pytest.mark.parametrize("template", ["new Client({{ auth: `{v}` }});", 'NOTION = "{v}"', "export N={v}"])
def test_notion_integration_secret_goes(template):
    value = "secret_" + token(43)
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "com.example.inventory.service.InventoryApplication.main(InventoryApplication.java:12)",
        "secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>",
    ],
)
def test_dotted_code_and_prefixed_names_stay(text):
    kept(text)


# --- a URI's userinfo given apart from its URI ----------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "schema.registry.basic.auth.user.info={u}:{p}\n",
        'userInfo = "{u}:{p}"',
        "  basic.auth.user.info: {u}:{p}\n",
        "SR_USER_INFO={u}:{p}",
    ],
)
def test_userinfo_password_goes_and_user_stays(template):
    user, secret = token(16, string.ascii_uppercase + string.digits), token(40, B62 + "+/")
    out = scrub(template.format(u=user, p=secret)).text
    assert secret not in out and user in out, out


@pytest.mark.parametrize(
    "text",
    [
        "basic.auth.user.info=${SR_KEY}:${SR_SECRET}",
        "info: starting server on :8080",
        '"info": "abc:def123"',
        "user_info = {'name': 'x'}",
        "userinfo: admin:changeme",
    ],
)
def test_userinfo_near_misses_stay(text):
    kept(text)


# --- prose that names a secret, then a few words, then a colon and the value ----------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "She put her password in the ticket too: {v}. Our template says to reply first.",
        "the admin password for staging: {v}",
        "Here is the API key we use on prod: {v}",
        "My token for the bot: {v}\n",
    ],
)
@pytest.mark.parametrize("value", [passphrase("-", 2) + "-" + token(2, string.digits), token(24, B62 + "+/")])
def test_secret_named_in_prose_before_a_colon_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "The password requirements are: at least 8 characters",
        "Token usage for the run: 12,345",
        "Token usage for the run: 1.25",
        "The secret is in the vault: see the runbook",
        "password reset flow: /account/reset",
    ],
)
def test_prose_colon_near_misses_stay(text):
    kept(text)


# --- a cookie string assigned or shown after its name ---------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "> document.cookie\n'{n}={v}; _ga=GA1.2.3.4'\n",
        'document.cookie = "{n}={v}; theme=dark";',
        "cookie=`{n}={v}`",
        "Cookie: {n}={v}",
    ],
)
@pytest.mark.parametrize("name", ["connect.sid", "sessionid", "PHPSESSID"])
def test_session_cookie_in_a_cookie_string_goes(template, name):
    value = "s%3A" + token(32, B62 + "-_") + "." + token(43, B62 + "-_")
    gone(template.format(n=name, v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "if (document.cookie == other) {",
        "I ate a cookie\nand then API=abc",
        'document.cookie = "theme=dark; lang=en"',
        "> document.cookie\n''",
    ],
)
def test_cookie_near_misses_stay(text):
    kept(text)
