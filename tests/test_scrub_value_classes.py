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
from tests.support import gone, kept

RNG = random.Random(1509)
LOWER = string.ascii_lowercase
B62 = string.ascii_letters + string.digits


def token(n: int, alphabet: str = B62) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def word() -> str:
    return token(RNG.randint(4, 9), "bcdfghjlmnrstvz")  # consonants only: never a name part such as "key"


def passphrase(sep: str, words: int) -> str:
    return sep.join(word() for _ in range(words))


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


# --- a secret's name with "_id" after it: which key it is, given beside the key ---------------------------

KEY_ID = token(40, "0123456789abcdef")


@pytest.mark.parametrize(
    "template",
    [
        '{{\n  "type": "service_account",\n  "private_key_id": "{v}",\n}}',
        "private_key_id = {v}\n",
        "PRIVATE_KEY_ID={v}\n",
        "credentials:\n  privateKeyId: {v}\n",
        'vault write auth/approle/login role_id=abc secret_id="{v}"',
        "api_key_id: '{v}'",
    ],
)
def test_secret_key_id_goes(template):
    gone(template.format(v=KEY_ID), KEY_ID)


@pytest.mark.parametrize(
    "text",
    [
        '"pad_token_id": 0,\n"eos_token_id": 50256,',
        "tokenizer.pad_token_id = tokenizer.eos_token_id",
        "session_id=" + token(16),
        "client_id=" + token(24),
        "private_key_id: none",
        "secret_id = SECRET_ID",
    ],
)
def test_id_names_that_hold_no_secret_stay(text):
    kept(text)


# --- a client constructor given an account id and its secret as positional literals ----------------------

HEX32 = token(32, "0123456789abcdef")
SID = "AC" + token(32, "0123456789abcdef")
MIXED40 = token(40)


@pytest.mark.parametrize(
    "template, secret",
    [
        ("client = Client('{s}', '{h}')", HEX32),
        ('twilio_client = TwilioClient("{s}", "{h}")', HEX32),
        ("mc = Minio('play.min.io', 'Q3AM3UQ867SPQQA43P2F', '{m}', secure=True)", MIXED40),
        ("auth = OAuth1('app-key', '{m}')", MIXED40),
        ("auth = tweepy.OAuthHandler('xvz1evFS4wEEPTGEFPHBog', '{m}')", MIXED40),
    ],
)
def test_client_constructors_positional_secret_goes(template, secret):
    gone(template.format(s=SID, h=HEX32, m=MIXED40), secret)


@pytest.mark.parametrize(
    "text",
    [
        "c = storage.Client('my-project-20240101', 'us-central1')",
        "s3 = boto3.client('s3', 'us-east-1')",
        "c = Client('eu-west-1', 'sandbox-env-20240101')",
        "c = MongoClient('localhost', 'replicaSetName01')",
        "client = Client('AC' + sid, os.environ['TWILIO_AUTH_TOKEN'])",
        "c = Client('https://api.example.org', 'v2')",
    ],
)
def test_client_constructor_near_misses_stay(text):
    kept(text)


# --- a secret-named call argument of any length ------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "s.cookies.set('__Secure-next-auth.session-token', '{v}', domain='app.io')",
        'localStorage.setItem("access_token", "{v}")',
        'os.environ.setdefault("API_TOKEN", "{v}")',
    ],
)
@pytest.mark.parametrize("length", [300, 1200, 4000])
def test_long_secret_named_call_argument_goes(template, length):
    value = token(length, B62 + "-_")
    gone(template.format(v=value), value)


# --- provider prefixes that say what they are without the provider's name ----------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "NRAK-" + token(27, string.ascii_uppercase + string.digits),
        "NRII-" + token(32),
        "NRJS-" + token(19, "0123456789abcdef"),
        "hvs." + token(24),
        "hvs." + token(95),
        "hvb." + token(40),
    ],
)
@pytest.mark.parametrize("template", ["export KEY_0={v}", "{v}", "token used: {v}.", '{{"k": "{v}"}}'])
def test_self_naming_provider_token_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    ["NRAK-" + "X" * 27, "see ~/hvs.notes", "hvs.short", "the NRAK- prefix marks a user key", "nrak-docs"],
)
def test_provider_prefix_near_misses_stay(text):
    kept(text)


# --- a value that opens a bracket and never closes it ------------------------------------------------------

UNCLOSED = ["{" + token(15) + "%", "(" + token(10) + "!x", "[" + token(9) + "#1"]


@pytest.mark.parametrize("value", UNCLOSED)
@pytest.mark.parametrize(
    "template",
    [
        "mariadb -uroot --password={v} -e 'SHOW DATABASES'",
        "DB_PASSWORD={v}\n",
        "redis:\n  password: {v}\n",
        "--client-secret={v} --verbose",
    ],
)
def test_value_opening_a_bracket_it_never_closes_goes(template, value):
    gone(template.format(v=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "password={\n  value: x\n}",
        "token=(self.token",
        "PASSWORD={{",
        "password={this.state.password",
        "password: (a*b",
        "PASSWORD=[x",
    ],
)
def test_code_opening_a_bracket_stays(text):
    kept(text)


# --- blind v5's classes: names and their values ----------------------------------------------------------------


def secret_value() -> str:
    return token(6) + RNG.choice("!#?*") + token(8, string.digits + LOWER)


@pytest.mark.parametrize(
    "template",
    [
        '  password            = "{v}"',  # terraform fmt aligns operators far to the right
        "DB_PASSWORD" + " " * 20 + "= {v}",
        "  password: `{v}`,",  # a JavaScript template literal
        "auth:\n  oidc_client_secret:\n    {v}\n  other: 1",  # the value on the next, deeper line
        '  "Auth0:ClientSecret": "{v}",',  # ASP.NET's colon-sectioned names
        '  "ConnectionStrings:Db:Password": "{v}"',
        "NUGET_FEED_PAT={v}",
        "azureDevopsPat: {v}",
    ],
)
def test_blind5_named_values_go(template):
    value = secret_value()
    out = scrub(template.format(v=value)).text
    assert value not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "    proxy_pass http://127.0.0.1:3000;",
        "    fastcgi_pass unix:/run/php/php8.2-fpm.sock;",
        "location / { uwsgi_pass 127.0.0.1:9000; }",
        "'recaptcha_site_key' => '6LeIx" + "AcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI',",
        "TURNSTILE_SITE_KEY=0x4AAAAAAA" + "BkMYinukE8nzY",
        "public_key: " + "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
        "signing.keyId=D96FE59F",
        "gpg_key_id: 3AA5C34371567BD2",
        '  kms_key_id = "arn:aws:kms:eu-west-1:123456789012:key/0bd37f98-cdf1-4b67-8794-58057d574579"',
        'secret_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf"',
        "password:\n  - first\n  - second",
        "api_key:\n  prod: x",
        "const token = `${process.env.TOKEN}`;",
        "pat = re.compile(r'^[a-z]+$')",
    ],
)
def test_blind5_names_that_hold_no_secret_keep_their_values(text):
    kept(text)


# --- blind v5's classes: PII written the ways people write it -----------------------------------------------


def _iban(country: str, bban: str) -> str:
    from stdnum.iso7064 import mod_97_10

    return country + mod_97_10.calc_check_digits(bban + country) + bban


@pytest.mark.parametrize(
    "country,length",
    [("ES", 20), ("BE", 12), ("FR", 23), ("PT", 21)],
)
def test_ibans_need_mod97_and_length_not_national_check_digits(country, length):
    bban = token(length, string.digits)
    iban = _iban(country, bban)
    spaced = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
    assert scrub(f"la cuenta es {iban}.").text == "la cuenta es [IBAN]."
    assert scrub(f"account {spaced} ok").text == "account [IBAN] ok"
    broken = iban[:2] + f"{(int(iban[2:4]) + 1) % 100:02d}" + iban[4:]
    kept(f"ref {broken}")
    kept(f"ref {_iban(country, bban + '1')}")  # one digit too many for the country


@pytest.mark.parametrize(
    "example",
    ["DE89370400440532013000", "GB82WEST12345698765432", "FR1420041010050500013M02606", "NL91ABNA0417164300"],
)
def test_published_example_ibans_stay(example):
    kept(f"Sandbox IBAN that passes validation: {example} (docs example)")


@pytest.mark.parametrize(
    "number",
    [
        "+33 (0)1 23 79 64 52",
        "+44 (0)20 7946 0958",
        "+49 (0)30 46842653",
        "089/5018858",
        "0221/123 4567",
    ],
)
def test_trunk_prefixes_and_area_code_slashes_are_phones(number):
    assert scrub(f"erreichbar unter {number} oder per Mail").text == "erreichbar unter [PHONE] oder per Mail"


@pytest.mark.parametrize(
    "text,number",
    [
        ("Mi móvil: {n}, correo", "636 14 98 26"),
        ("M: {n}\nsomeone@example.org", "649 13 84 91"),
        ("You can reach her directly on {n}.", "310 1423410"),
        ("chama no WhatsApp {n} ou", "(31) 3083-4535"),
        ("Tel. {n}", "612 345 678"),
    ],
)
def test_labelled_national_numbers_without_a_trunk_zero_are_phones(text, number):
    out = scrub(text.format(n=number)).text
    assert number not in out and "[PHONE]" in out


@pytest.mark.parametrize(
    "text",
    ["version 3.1.15 build 2024 1234 5678", "m 1234 5678 9012", "I met him at 10 12345678", "hotel 612 345 678"],
)
def test_unlabelled_digit_groups_stay(text):
    kept(text)


def test_a_tables_phone_column_is_phones():
    rows = ["666 43 81 41", "(31) 3515-3568", "311 9670509"]
    table = "customer_id;full_name;tel;plan\n" + "".join(f"{i};Name {i};{n};pro\n" for i, n in enumerate(rows))
    out = scrub(table).text
    assert all(n not in out for n in rows), out
    kept("id,phone_model,price\n1,Pixel 8,699\n2,Pixel 9,799\n")
    kept("sku,tel_ext,qty\n1,12,3\n")


@pytest.mark.parametrize("template", ["SSN: {s}", "ssn={s},", "Social Security number {s}.", "SSN#: {s}"])
@pytest.mark.parametrize("sep", [" ", ""])
def test_labelled_ssns_without_dashes(template, sep):
    number = f"568{sep}25{sep}0957"
    out = scrub(template.format(s=number)).text
    assert number not in out and "[SSN]" in out


@pytest.mark.parametrize("text", ["order 568250957 shipped", "SSN: 000 12 3456", "build 568 25 0957"])
def test_unlabelled_or_invalid_ssns_stay(text):
    kept(text)


# --- blind v5's classes: provider formats the catalogue lacked ----------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: "whsec_" + token(32),
        lambda: "squ_" + token(40, "0123456789abcdef"),
        lambda: "sqp_" + token(40, "0123456789abcdef"),
        lambda: "sbp_" + token(40, "0123456789abcdef"),
        lambda: "dckr_pat_" + token(27, B62 + "_-"),
        lambda: "4/0A" + token(60, B62 + "_-"),
    ],
)
def test_blind5_provider_tokens_go(make):
    value = make()
    out = scrub(f"verifying with {value} now").text
    assert value not in out, out


@pytest.mark.parametrize(
    "template",
    [
        "https://eth-mainnet.g.alchemy.com/v2/{k}",
        "https://mainnet.infura.io/v3/{h}",
        "GET /data/2.5/weather?q=Berlin&appid={h} HTTP/1.1",
    ],
)
def test_keys_in_url_paths_and_queries_go(template):
    key, hexkey = token(32, B62 + "_-"), token(32, "0123456789abcdef")
    text = template.format(k=key, h=hexkey)
    out = scrub(text).text
    assert key not in out and hexkey not in out, out
