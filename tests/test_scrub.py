"""The scrubber: every kind it removes, the near-misses it must leave alone, and its bounds.

Fake secrets are assembled from pieces at run time (see bench/corpus.py), so no secret-shaped literal is committed.
"""

import dataclasses
import random
import time

import pytest

from bench import corpus
from ichor.scrub import (
    KINDS,
    PII_KINDS,
    SECRET_KINDS,
    Scrubbed,
    describe,
    find_leaks,
    merge_counts,
    scrub,
    scrub_cut,
    scrub_messages,
)


def rand(alphabet, n, seed=0):
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(n, alphabet=corpus.ALNUM, seed=0):
    return corpus._mixed(random.Random(seed), alphabet, n)


# --- every kind, from the corpus factories in their chat contexts --------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_removed_in_context(kind):
    rng = random.Random(kind)
    for _ in range(40):
        chunk, secret = corpus.embed(kind, rng)
        result = scrub(chunk)
        assert secret not in result.text, (kind, chunk, result.text)
        assert result.removed.get(kind, 0) >= 1, (kind, chunk, result)


def test_corpus_recall_is_at_least_098_per_kind():
    text, found = corpus.generate(seed=7, size=200_000)
    out = scrub(text).text
    for kind in KINDS:
        items = [secret for k, secret in found if k == kind]
        assert len(items) >= 20
        recall = sum(secret not in out for secret in items) / len(items)
        assert recall >= 0.98, (kind, recall)


# --- exact outputs: only the secret part goes, the shape stays -----------------------------------------

AKIA = "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, seed=42)
OPENAI_LEGACY = "sk" + "-" + mixed(20, seed=1) + "T3Blbk" + "FJ" + mixed(20, seed=2)
OPENAI_PROJ = "sk" + "-proj-" + mixed(120, corpus.URLSAFE, seed=3)
OPENAI_SVC = "sk" + "-svcacct-" + mixed(60, corpus.URLSAFE, seed=4)
ANTHROPIC = "sk" + "-ant-api03-" + mixed(93, corpus.URLSAFE, seed=5) + "AA"
HF = "hf" + "_" + mixed(34, corpus.ALNUM, seed=6)
GOOGLE = "AI" + "za" + mixed(35, corpus.URLSAFE, seed=7)
TELEGRAM = "123456789" + ":" + "AA" + mixed(33, corpus.URLSAFE, seed=8)
AWS_SECRET = mixed(40, corpus.B64, seed=9)
PASSWORD = "Tr0ub4dor" + "-and-3"


@pytest.mark.parametrize(
    "text, expected, kind",
    [
        (f"key {OPENAI_LEGACY} fails", "key [REDACTED:openai_key] fails", "openai_key"),
        (f"key {OPENAI_PROJ}", "key [REDACTED:openai_key]", "openai_key"),
        (f"key {OPENAI_SVC}", "key [REDACTED:openai_key]", "openai_key"),
        (f"key {ANTHROPIC}.", "key [REDACTED:anthropic_key].", "anthropic_key"),
        (f"token {HF}", "token [REDACTED:hf_token]", "hf_token"),
        *[
            (f"{p}_{mixed(36, seed=i)} ok", "[REDACTED:github_token] ok", "github_token")
            for i, p in enumerate(["ghp", "gho", "ghu", "ghs", "ghr"])
        ],
        ("github" + "_pat_" + mixed(22) + "_" + mixed(59, seed=1), "[REDACTED:github_token]", "github_token"),
        (f"aws_access_key_id = {AKIA}", "aws_access_key_id = [REDACTED:aws_access_key]", "aws_access_key"),
        ("ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), "[REDACTED:aws_access_key]", "aws_access_key"),
        (
            f"aws_secret_access_key = {AWS_SECRET}",
            "aws_secret_access_key = [REDACTED:aws_secret_key]",
            "aws_secret_key",
        ),
        (
            "xo" + "xb-" + rand("0123456789", 12) + "-" + rand("0123456789", 13) + "-" + mixed(24),
            "[REDACTED:slack_token]",
            "slack_token",
        ),
        (
            "xa"
            + "pp-1-A0"
            + rand(corpus.UPPER_ALNUM, 9)
            + "-"
            + rand("0123456789", 13)
            + "-"
            + rand("abcdef0123", 64),
            "[REDACTED:slack_token]",
            "slack_token",
        ),
        (
            "https://hooks.slack.com/services/"
            + "T"
            + rand(corpus.UPPER_ALNUM, 10)
            + "/B"
            + rand(corpus.UPPER_ALNUM, 10)
            + "/"
            + mixed(24),
            "https://hooks.slack.com/services/[REDACTED:slack_token]",
            "slack_token",
        ),
        *[
            (f"stripe {p}_{mixed(24, seed=i)}", "stripe [REDACTED:stripe_key]", "stripe_key")
            for i, p in enumerate(["sk_live", "sk_test", "rk_live", "pk_live"])
        ],
        (f"key={GOOGLE}&q=1", "key=[REDACTED:google_api_key]&q=1", "google_api_key"),
        (
            f"https://api.telegram.org/bot{TELEGRAM}/getMe",
            "https://api.telegram.org/bot[REDACTED:telegram_bot_token]/getMe",
            "telegram_bot_token",
        ),
        (f"token {corpus.jwt(random.Random(1))} expired", "token [REDACTED:jwt] expired", "jwt"),
        (
            "Authorization: Bearer " + mixed(32, corpus.ALNUM + "._-"),
            "Authorization: Bearer [REDACTED:bearer]",
            "bearer",
        ),
        (
            f"postgres://app:{PASSWORD}@db.internal:5432/app",
            "postgres://app:[REDACTED:url_password]@db.internal:5432/app",
            "url_password",
        ),
        (
            f"http://admin:{PASSWORD}@localhost:8080/",
            "http://admin:[REDACTED:url_password]@localhost:8080/",
            "url_password",
        ),
        (
            "https://deploy:*" + PASSWORD + "@registry.acme.io/v2/",
            "https://deploy:[REDACTED:url_password]@registry.acme.io/v2/",
            "url_password",
        ),
        (f"DB_PASSWORD={PASSWORD}", "DB_PASSWORD=[REDACTED:env_secret]", "env_secret"),
        (f'export SESSION_SECRET="{PASSWORD}"', 'export SESSION_SECRET="[REDACTED:env_secret]"', "env_secret"),
        (f"MY_SERVICE_TOKEN='{PASSWORD}'", "MY_SERVICE_TOKEN='[REDACTED:env_secret]'", "env_secret"),
        (f"STRIPE_KEY={PASSWORD}", "STRIPE_KEY=[REDACTED:env_secret]", "env_secret"),
        (f"password: {PASSWORD}", "password: [REDACTED:env_secret]", "env_secret"),
        (f'{{"client_secret": "{PASSWORD}"}}', '{"client_secret": "[REDACTED:env_secret]"}', "env_secret"),
        (f"smtp_password = '{PASSWORD}'", "smtp_password = '[REDACTED:env_secret]'", "env_secret"),
        ("write to ada.lovelace42@mail.northwind.de today", "write to [EMAIL] today", "email"),
        ("ssh deploy@10.20.30.40", "ssh deploy@[IP]", "ip"),
        ("from 81.2.69.142:53", "from [IP]:53", "ip"),
        ("peer 2a03:2880:f12f:83:face:b00c::25de up", "peer [IP] up", "ip"),
        ("link fe80::1ff:fe23:4567:890a%eth0", "link [IP]", "ip"),
        ("call +1 415 555 0100 now", "call [PHONE] now", "phone"),
        ("call (415) 555-0100 now", "call [PHONE] now", "phone"),
        ("call +44 20 7946 0958", "call [PHONE]", "phone"),
        ("call +49 30 1234567", "call [PHONE]", "phone"),
        ("call +14155550100", "call [PHONE]", "phone"),
        ("call 415-555-0100", "call [PHONE]", "phone"),
        ("call 1-800-555-0100", "call [PHONE]", "phone"),
        ('File "/home/alice/app/main.py"', 'File "/home/[USER]/app/main.py"', "home_path"),
        ("cd /Users/bob.smith/code", "cd /Users/[USER]/code", "home_path"),
        ("C:\\Users\\carol\\AppData", "C:\\Users\\[USER]\\AppData", "home_path"),
        ('{"path": "C:\\\\Users\\\\carol\\\\x"}', '{"path": "C:\\\\Users\\\\[USER]\\\\x"}', "home_path"),
        ("C:/Users/dmitri/x", "C:/Users/[USER]/x", "home_path"),
    ],
)
def test_exact_replacement(text, expected, kind):
    result = scrub(text)
    assert result.text == expected
    assert result.removed == {kind: 1}


def test_private_key_block_goes_whole():
    key = corpus.private_key(random.Random(3))
    text = f"my key:\n{key}\nthanks"
    result = scrub(text)
    assert result.text == "my key:\n[REDACTED:private_key]\nthanks"
    assert result.removed == {"private_key": 1}


def test_truncated_private_key_loses_its_body():
    key = corpus.private_key(random.Random(4))
    truncated = key.rsplit("\n", 2)[0]  # no END line
    result = scrub(f"pasted:\n{truncated}\n\nwhat is wrong?")
    assert result.text == "pasted:\n[REDACTED:private_key]\n\nwhat is wrong?"


def test_a_key_inside_an_assignment_is_typed_by_its_format():
    result = scrub(f"export OPENAI_API_KEY={OPENAI_PROJ}")
    assert result.text == "export OPENAI_API_KEY=[REDACTED:openai_key]"
    assert result.removed == {"openai_key": 1}


def test_counts_add_up():
    text = f"{AKIA} {AKIA} a@b.io c@d.io e@f.io /home/alice/x /home/bob/y"
    assert scrub(text).removed == {"aws_access_key": 2, "email": 3, "home_path": 2}


# --- near-misses ----------------------------------------------------------------------------------------

NEAR_MISSES = [
    "pip install numpy==1.26.4",
    "version 1.2.3.4",
    "v2.14.0",
    "release 10.0.19045.1",
    "Python 3.11.9",
    "commit 3f2c1a9",
    "git checkout 3f2c1a9e0b7d",
    "fixed in " + rand("0123456789abcdef", 40),
    "sha256:" + rand("0123456789abcdef", 64),
    rand("0123456789abcdef", 64) + "  model.safetensors",
    "request id 123e4567-e89b-42d3-a456-426614174000",
    "see the task-list",
    "a risk-free refactor",
    "my desk-lamp",
    "the sk-learn-compatible-estimator-wrapper",
    "https://example.com/docs/getting-started",
    "http://www.example.com/a?b=c",
    "https://user@example.com/repo.git",
    "http://localhost:8080/api",
    "postgres://localhost:5432/app",
    "redis://127.0.0.1:6379/0",
    "/usr/local/bin/python3",
    "/home",
    "ls /home/",
    "~/projects/ichor",
    "/var/log/syslog",
    "/Users/Shared/x",
    "color: #ff00aa; background: #abc;",
    "getUserAccountSettingsForTenantById",
    "hf_hub_download",
    "max_tokens=512",
    "pad_token = tokenizer.eos_token",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "export OPENAI_API_KEY=$OPENAI_API_KEY",
    "AUTH_TOKEN=${AUTH_TOKEN}",
    "token = response",
    'eos_token="</s>"',
    "password: ********",
    "sort_key = name",
    "postgres://app:${DB_PASSWORD}@db/app",
    "https://u:<password>@host/",
    "MAX_TOKEN=4096",
    "api_key: str = None",
    "the bearer of bad news",
    "Bearer authentication",
    "dGhpcyBpcyBhIHRlc3Q=",
    "on 2024-01-15",
    "at 12:30:45",
    "in 1999",
    "order #12345678",
    "ticket 9876543210",
    "pi is 3.14159",
    "1,234,567",
    "127.0.0.1",
    "0.0.0.0:8000",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "::1",
    "2001:db8::1",
    "netmask 255.255.255.0",
    "upgrade to 4.2.1.0",
    "metadata at 169.254.169.254",
    "::ffff:127.0.0.1",
    "include_password=True):",
    "token = Operator",
    "exp_key = np.array([0, 0, 1, 1])",
    "cost_per_token = (a * b)",
    "if token == Punctuation:",
    "private_key: PrivateKeyTypes,",
    "Token: the issue is the retry",
    "x = a[1::2]",
    "std::vector<int> v;",
    "git@github.com:acme/ichor.git",
    "icon@2x.png",
    "npm i @types/node react@18.2.0",
    "@@ -12,7 +12,8 @@",
    "MAC 00:1A:2B:3C:4D:5E",
    "1.2.3",
    "+1 vote",
    "x + 12",
    "AKIA is the access key prefix",
    "the sk_test_mode flag",
    "TELEGRAM_BOT_TOKEN=",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_untouched(text):
    assert scrub(text) == Scrubbed(text, {})


def test_generated_near_misses_are_at_least_95_percent_untouched():
    rng = random.Random(11)
    samples = [corpus.near_miss(rng, category) for category in sorted(corpus.NEAR_MISS_FACTORIES) for _ in range(40)]
    untouched = sum(scrub(s).text == s for s in samples) / len(samples)
    assert untouched >= 0.95, untouched


# --- placeholders, idempotence, structure ---------------------------------------------------------------


def test_scrubbing_is_idempotent_on_the_corpus():
    text, _ = corpus.generate(seed=5, size=60_000)
    once = scrub(text)
    twice = scrub(once.text)
    assert once.removed
    assert twice.text == once.text
    assert twice.removed == {}


def test_placeholders_are_stable_and_typed():
    text = f"{AKIA} a@b.io 10.1.2.3 +1 415 555 0100 /home/alice"
    assert scrub(text).text == "[REDACTED:aws_access_key] [EMAIL] [IP] [PHONE] /home/[USER]"
    assert scrub(text) == scrub(text)


def test_empty_text():
    assert scrub("") == Scrubbed("", {})
    assert find_leaks("") == {}


def test_scrubbed_is_frozen():
    result = scrub("a@b.io")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "x"


def test_scrub_messages_walks_every_string_leaf():
    messages = {
        "messages": [
            {"role": "user", "content": f"my key is {AKIA}"},
            {"role": "assistant", "content": ["see /home/alice/x", {"nested": "mail a@b.io", "n": 3}]},
        ],
        "OPENAI_API_KEY": None,
        f"{AKIA}": "keys stay as they are",
        "tuple": ("x", "c@d.io"),
    }
    original = repr(messages)
    scrubbed, removed = scrub_messages(messages)
    assert scrubbed["messages"][0]["content"] == "my key is [REDACTED:aws_access_key]"
    assert scrubbed["messages"][1]["content"][0] == "see /home/[USER]/x"
    assert scrubbed["messages"][1]["content"][1] == {"nested": "mail [EMAIL]", "n": 3}
    assert scrubbed[AKIA] == "keys stay as they are"
    assert scrubbed["OPENAI_API_KEY"] is None
    assert scrubbed["tuple"] == ["x", "[EMAIL]"]
    assert removed == {"aws_access_key": 1, "home_path": 1, "email": 2}
    assert repr(messages) == original  # the input is not modified


def test_scrub_messages_on_a_bare_string_and_non_strings():
    assert scrub_messages("a@b.io") == ("[EMAIL]", {"email": 1})
    assert scrub_messages(42) == (42, {})
    assert scrub_messages([]) == ([], {})


def test_merge_counts():
    assert merge_counts({"email": 1}, None, {"email": 2, "jwt": 1}, {}, {"ip": 0}) == {"email": 3, "jwt": 1}
    assert merge_counts() == {}


@pytest.mark.parametrize(
    "removed, expected",
    [
        ({}, "nothing"),
        (None, "nothing"),
        ({"email": 0}, "nothing"),
        ({"home_path": 2, "openai_key": 1}, "2 paths · 1 secret"),
        ({"email": 1, "jwt": 1, "bearer": 1, "env_secret": 1}, "1 email · 3 secrets"),
        ({"ip": 1, "phone": 2, "home_path": 1}, "1 IP · 2 phones · 1 path"),
        ({"ip": 3, "email": 2, "private_key": 1}, "2 emails · 3 IPs · 1 secret"),
    ],
)
def test_describe(removed, expected):
    assert describe(removed) == expected


def test_kind_lists():
    assert set(SECRET_KINDS) < set(KINDS)
    assert set(PII_KINDS) == set(KINDS) - set(SECRET_KINDS)
    assert set(corpus.FACTORIES) == set(KINDS)


# --- find_leaks: what the audit stage fails on ---------------------------------------------------------


def test_find_leaks_reports_raw_secrets_of_known_formats():
    text = f"{AKIA}\n{OPENAI_PROJ}\n{corpus.private_key(random.Random(2))}\npostgres://u:{PASSWORD}@db/x"
    assert find_leaks(text) == {"aws_access_key": 1, "openai_key": 1, "private_key": 1, "url_password": 1}


def test_find_leaks_is_empty_after_scrubbing_and_ignores_pii():
    text, _ = corpus.generate(seed=9, size=40_000)
    assert find_leaks(text)
    assert find_leaks(scrub(text).text) == {}
    assert find_leaks("mail a@b.io from 10.1.2.3, DB_PASSWORD=hunter22") == {}


# --- bounded time on hostile text ----------------------------------------------------------------------

N = 50_000
HOSTILE = {
    "letters": "a" * N,
    "sk-": "sk-" * (N // 3),
    "at": "@" * N,
    "1.": "1." * (N // 2),
    "begin": "-----BEGIN RSA PRIVATE KEY-----\n" * (N // 32),
    "begin-body": "-----BEGIN PRIVATE KEY-----" + "\nAAAAAAAAAAAAAAAA" * (N // 17),
    "a@": "a@" * (N // 2),
    "colons": ":" * N,
    "hex-colons": "abcd:" * (N // 5),
    "assignments": 'API_KEY="' * (N // 9),
    "password-colon": "password: " * (N // 10),
    "digits": "1" * N,
    "plus-one": "+1 " * (N // 3),
    "urls": "a://b:c@" * (N // 8),
    "url-no-at": "x://u:" + "p" * N,
    "bearer": "Bearer " + "a" * N,
    "eyJ": "eyJaaaaa." * (N // 9),
    "aws": "aws " * (N // 4),
    "akia": "AKIA" * (N // 4),
    "home": "/home/" * (N // 6),
    "windows": "C:\\Users\\" * (N // 9),
    "mixed": "sk-proj- ghp_ a@b. 1.2.3. +1 (555) ::1 /home/ KEY= Bearer eyJ. " * (N // 60),
    # catalogue rows: many matches in one run of token characters, and attempts from inside a long run
    "glpat": "glpat-" * (N // 6),
    "pscale": "pscale_tkn_" * (N // 11),
    "ey-run": "ey" * (N // 2),
    "named-rows": "adafruit = " * (N // 11),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_scrubs_in_bounded_time(name):
    text = HOSTILE[name]
    start = time.perf_counter()
    result = scrub(text)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, (name, elapsed)
    assert isinstance(result.text, str)


# --- root causes, each a class with several shapes ------------------------------------------------------

TOKEN = mixed(32, corpus.ALNUM + "_-", seed=21)
PW = "Tr0ub4dor" + "-payroll"


def removed_whole(text: str, secret: str) -> str:
    out = scrub(text).text
    assert secret not in out, (text, out)
    # no 8-character piece of the secret survives either
    assert not any(secret[i : i + 8] in out for i in range(len(secret) - 7)), (text, out)
    return out


class TestNestedAssignments:
    """Cause 1: an assignment inside another assignment's value is examined."""

    @pytest.mark.parametrize(
        "template",
        [
            'client = Groq(api_key="{s}")',
            "llm = ChatOpenAI(model='x', openai_api_key='{s}', temperature=0)",
            "//registry.npmjs.org/:_authToken={s}",
            "jdbc:mysql://db:3306/app?user=app&password={s}&useSSL=true",
            '{{"ConnectionStrings": {{"Default": "Server=db;User Id=sa;Password={s};"}}}}',
            "conn = psycopg2.connect(host='db', user='etl', password='{s}')",
        ],
    )
    def test_inner_secret_goes(self, template):
        removed_whole(template.format(s=TOKEN), TOKEN)

    def test_outer_code_stays(self):
        text = f'client = Groq(api_key="{TOKEN}")'
        assert scrub(text).text == 'client = Groq(api_key="[REDACTED:env_secret]")'


class TestHyphenatedNames:
    """Cause 2: names with hyphens (and dots) are names."""

    @pytest.mark.parametrize(
        "template",
        [
            "./run --password={s}",
            'curl -H "X-API-Key: {s}" https://api.acme.io',
            "    client-key-data: {s}",
            "  db-password: {s}",
            "spring.datasource.password={s}",
            "--api-token={s}",
        ],
    )
    def test_value_goes(self, template):
        removed_whole(template.format(s=TOKEN), TOKEN)


class TestDottedValues:
    """Cause 3: a value shaped word.word is a value unless its parts are identifiers."""

    @pytest.mark.parametrize("value", ["Summer.2024", "Autumn.1999!", "x9Q.7fk2.Lm3p", "v." + TOKEN])
    def test_dotted_value_goes(self, value):
        removed_whole(f"DB_PASSWORD={value}", value)

    @pytest.mark.parametrize("text", ["token = tokenizer.eos_token", "api_key = settings.OPENAI_KEY", "pwd = self.v2"])
    def test_attribute_access_stays(self, text):
        assert scrub(text).text == text


class TestLongValues:
    """Cause 4: values are never cut, whatever their length or where they start."""

    @pytest.mark.parametrize("length", [511, 512, 513, 1000, 4000])
    def test_long_token_goes_whole(self, length):
        value = mixed(length, corpus.URLSAFE, seed=length)
        for template in ("SESSION_TOKEN={s}", 'session_token = "{s}"', "token: '{s}'"):
            out = removed_whole(template.format(s=value), value)
            assert out.count("[REDACTED") == 1

    def test_token_at_every_offset_goes(self):
        value = mixed(1100, corpus.URLSAFE, seed=3)
        filler = "lorem ipsum dolor sit amet " * 60
        for offset in range(0, 1300, 97):
            removed_whole(filler[:offset] + f"\nAUTH_TOKEN={value}\n", value)

    def test_scrub_cut_redacts_before_cutting_at_every_position(self):
        token = "hf" + "_" + mixed(34, seed=8)
        text = f"upload failed: 401 for token {token} at https://huggingface.co/api"
        for limit in range(1, len(text) + 5):
            out = scrub_cut(text, limit)
            assert len(out) <= limit
            assert not any(token[i : i + 4] in out for i in range(3, len(token) - 3)), (limit, out)
            assert "[REDACTED" not in out or "[REDACTED:hf_token]" in out  # never half a placeholder


class TestTemplateStarts:
    """Cause 5: a value is a template only when the whole value is one."""

    @pytest.mark.parametrize("value", ["#" + PW, "*" + PW, "%" + PW, "$ecretPa55w0rd", "<" + PW, "{" + PW])
    def test_value_starting_with_a_template_character_goes(self, value):
        removed_whole(f'DB_PASSWORD="{value}"', value)

    @pytest.mark.parametrize(
        "value", ["${DB_PASSWORD}", "$DB_PASSWORD", "%DB_PASSWORD%", "%s", "<password>", "{{ .Values.pw }}", "****"]
    )
    def test_whole_template_stays(self, value):
        text = f'DB_PASSWORD="{value}"'
        assert scrub(text).text == text


class TestUrlAndCommandLineSecrets:
    """Cause 6 and its neighbours: URL passwords, Basic auth, command-line secrets, PuTTY keys."""

    @pytest.mark.parametrize(
        "text, expected",
        [
            (f"redis://:{PW}@cache:6379/0", "redis://:[REDACTED:url_password]@cache:6379/0"),
            (f"postgres://app:p@ss{PW}@db:5432/x", "postgres://app:[REDACTED:url_password]@db:5432/x"),
            (f"amqp://svc:{PW}@@mq/", "amqp://svc:[REDACTED:url_password]@mq/"),
            (f"curl -u admin:{PW} https://ci/api", "curl -u admin:[REDACTED:cli_secret] https://ci/api"),
            (f"mysql -h db -u root -p{PW} app", "mysql -h db -u root -p[REDACTED:cli_secret] app"),
            (f"twine upload -u __token__ -p {PW} dist/*", "twine upload -u __token__ -p [REDACTED:cli_secret] dist/*"),
            (f"sshpass -p '{PW}' ssh deploy@build", "sshpass -p '[REDACTED:cli_secret]' ssh deploy@build"),
            (f"hf upload --token {PW} org/m .", "hf upload --token [REDACTED:cli_secret] org/m ."),
        ],
    )
    def test_secret_goes(self, text, expected):
        assert scrub(text).text == expected

    def test_basic_auth_header(self):
        import base64

        token = base64.b64encode(f"ci-bot:{PW}".encode()).decode()
        assert scrub(f"Authorization: Basic {token}").text == "Authorization: Basic [REDACTED:basic_auth]"
        assert scrub("use Basic authentication here").text == "use Basic authentication here"

    def test_putty_key_goes_whole(self):
        import base64

        body = "\n".join(base64.b64encode(random.Random(i).randbytes(48)).decode() for i in range(4))
        key = (
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
            f"{body}\nPrivate-Lines: 1\n{body.splitlines()[0]}\nPrivate-MAC: {rand('0123456789abcdef', 64)}"
        )
        assert scrub(f"my key:\n{key}\nthanks").text == "my key:\n[REDACTED:private_key]\nthanks"

    @pytest.mark.parametrize(
        "text", ["ssh -p 2222 host", "docker run -p 8080:8080 api", "mkdir -p out", "mysql -u root -p app"]
    )
    def test_other_dash_p_stays(self, text):
        assert scrub(text).text == text


class TestHomePathsAndPrompts:
    """Cause 8: every spelling of a home folder, and the user in a shell prompt."""

    @pytest.mark.parametrize(
        "text, expected",
        [
            ("c:\\users\\priya\\code", "c:\\users\\[USER]\\code"),
            ("C:\\USERS\\Priya\\x", "C:\\USERS\\[USER]\\x"),
            ("/mnt/c/Users/priya/code", "/mnt/c/Users/[USER]/code"),
            ("/mnt/d/users/priya/x", "/mnt/d/users/[USER]/x"),
            ("/var/home/priya/.config", "/var/home/[USER]/.config"),
            ("priya@devbox:~$ make", "[USER]@devbox:~$ make"),
            ("[priya@web-01 app]$ ls", "[[USER]@web-01 app]$ ls"),
            ("priya@devbox:/srv/app# ls", "[USER]@devbox:/srv/app# ls"),
        ],
    )
    def test_user_goes(self, text, expected):
        assert scrub(text).text == expected

    @pytest.mark.parametrize(
        "text",
        ["https://api.github.com/users/octocat", "GET /users/42", "git@github.com:acme/x.git", "root@box:~# ls"],
    )
    def test_not_a_home_stays(self, text):
        assert scrub(text).text == text


class TestPlaceholdersKept:
    """Cause 9: placeholders and RFC 2606 example names are not secrets or PII."""

    @pytest.mark.parametrize(
        "text",
        [
            "OPENAI_API_KEY=sk-...your key...",
            "GITHUB_TOKEN=ghp_" + "X" * 36,
            "ghp_" + "x" * 36,
            "postgres://USER:PASSWORD@HOST:5432/DB",
            "aws_access_key_id = AKIA" + "IOSFODNN7" + "EXAMPLE",
            "API_KEY=<your-api-key>",
            "HF_TOKEN=hf_" + "x" * 34,
            "mail user@example.com or a@b.example.org or c@d.test",
            "password: ${{ secrets.DB_PASSWORD }}",
        ],
    )
    def test_placeholder_stays(self, text):
        assert scrub(text).text == text

    def test_real_domain_mail_goes(self):
        assert scrub("mail a@example-corp.io").text == "mail [EMAIL]"


# --- PII validators ---------------------------------------------------------------------------------------


def luhn_number(prefix: str, length: int, seed: int) -> str:
    from stdnum import luhn

    body = prefix + rand("0123456789", length - len(prefix) - 1, seed=seed)
    return body + luhn.calc_check_digit(body)


class TestValidators:
    @pytest.mark.parametrize("prefix, length", [("4", 16), ("51", 16), ("2221", 16), ("37", 15), ("6011", 16)])
    def test_luhn_valid_card_goes(self, prefix, length):
        number = luhn_number(prefix, length, seed=length)
        spaced = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
        for shown in (number, spaced, spaced.replace(" ", "-")):
            assert scrub(f"card {shown} exp 12/29").text == "card [CARD] exp 12/29"

    def test_luhn_invalid_card_stays(self):
        number = luhn_number("4", 16, seed=1)
        broken = number[:-1] + str((int(number[-1]) + 1) % 10)
        assert scrub(f"card {broken}").text == f"card {broken}"

    @pytest.mark.parametrize("number", ["4242 4242 4242 4242", "4000 0566 5566 5556", "5555 5555 5555 4444"])
    def test_published_test_cards_stay(self, number):
        assert scrub(f"use {number} in staging").text == f"use {number} in staging"

    def test_iban_mod97(self):
        from stdnum.iso7064 import mod_97_10

        bban = rand("0123456789", 18, seed=5)
        iban = "DE" + mod_97_10.calc_check_digits(bban + "DE") + bban
        assert scrub(f"IBAN {iban}").text == "IBAN [IBAN]"
        spaced = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
        assert scrub(f"IBAN {spaced}.").text == "IBAN [IBAN]."
        broken = iban[:2] + f"{(int(iban[2:4]) + 1) % 100:02d}" + iban[4:]
        assert scrub(f"IBAN {broken}").text == f"IBAN {broken}"

    @pytest.mark.parametrize("ssn", ["123-45-6789", "536-22-1234", "078-51-4321"])
    def test_ssn_in_range_goes(self, ssn):
        assert scrub(f"SSN {ssn}").text == "SSN [SSN]"

    @pytest.mark.parametrize("ssn", ["000-12-3456", "666-12-3456", "123-00-4567", "123-45-0000"])
    def test_ssn_out_of_range_stays(self, ssn):
        assert "[SSN]" not in scrub(f"SSN {ssn}").text

    @pytest.mark.parametrize(
        "phone", ["07700 900123", "06 12 34 56 78", "090-1234-5678", "030 29627769", "(020) 7946 0958"]
    )
    def test_national_phone_goes(self, phone):
        assert scrub(f"call me on {phone} tonight").text == "call me on [PHONE] tonight"

    @pytest.mark.parametrize("text", ["on 2024-01-15", "v0.19.0", "room 0.12", "at 09:30", "zip 01234", "0 1 2 3"])
    def test_other_numbers_stay(self, text):
        assert scrub(text).text == text


# --- the catalogue: every rule of gitleaks' default catalogue is covered -------------------------------


def catalogue_rule_ids() -> set[str]:
    from importlib import resources

    lines = resources.files("ichor").joinpath("data", "scrub_gitleaks_rule_ids.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_every_catalogue_rule_is_covered_or_explained():
    from ichor import scrub_catalogue

    data = scrub_catalogue.load()
    explained = {r["id"] for r in data["not_applicable"]}
    ids = catalogue_rule_ids()
    assert len(ids) >= 200
    assert ids - scrub_catalogue.covered_ids(data) - explained == set()
    assert all(r["why"] for r in data["not_applicable"])


def catalogue_rows():
    from ichor import scrub_catalogue

    return scrub_catalogue.rows()


@pytest.mark.parametrize("row", catalogue_rows(), ids=lambda r: r.id)
def test_catalogue_row_removes_generated_samples(row):
    from bench.regex_sample import sample

    rng = random.Random(row.id)
    for _ in range(4):
        text, span = sample(row.pattern_text, rng, "secret")
        secret = text[span[0] : span[1]] if span else text
        if len(set(secret)) < 4:
            continue  # a sample too uniform to be a token (all zeros); placeholders are kept by design
        assert row.pattern.search(text), (row.id, text)
        message = f"({row.keywords[0]}) here it is: {text} ok"
        assert secret not in scrub(message).text, (row.id, message, scrub(message).text)


def test_own_rows_samples_are_removed():
    from bench.regex_sample import sample
    from ichor import scrub_catalogue

    for own in scrub_catalogue.load()["own"]:
        rng = random.Random(own["id"])
        for _ in range(4):
            text, span = sample(own["sample"], rng, "secret")
            secret = text[span[0] : span[1]]
            assert secret not in scrub(text).text, (own["id"], text, scrub(text).text)


def test_warm_builds_everything_and_changes_nothing():
    from ichor import scrub as scrubber

    scrubber.warm()
    assert all("pattern" in vars(row) for row in scrubber.CATALOGUE_ROWS)  # every pattern compiled
    assert scrub("call 07700 900123").text == "call [PHONE]"


class TestLearnedUserNames:
    """A user name learned from a home path or a prompt goes wherever else it stands in the same text."""

    @pytest.mark.parametrize(
        "text, name",
        [
            ("[Service]\nUser=priya\nWorkingDirectory=/home/priya/mailer\n", "priya"),
            ("User=Tomasz\nWorkingDirectory=/home/Tomasz/app", "Tomasz"),
            ("mkowalski@mkowalski-MacBook-Pro ~/dev/app % npm run build", "mkowalski"),
            ("aisha.r@aisha.r-MacBook-Pro ~ % ls\nopen '/Users/aisha.r/dev/.env'", "aisha.r"),
            ("cd /home/chen.tanaka/app && sudo -u chen.tanaka make", "chen.tanaka"),
            ("C:\\Users\\olga\\AppData> whoami\ndesktop-7\\olga", "olga"),
            ("ls ~jdoe/bin\nchown jdoe:staff file", "jdoe"),
            ("File /Users/SKumar/x.py\nowner: skumar", "SKumar"),
        ],
    )
    def test_every_occurrence_goes(self, text, name):
        out = scrub(text).text
        assert name.lower() not in out.lower(), out

    @pytest.mark.parametrize(
        "text, expected",
        [
            # Only whole words: a longer word that holds the name stays, and so does an e-mail address's
            # own rule.
            ("/home/priya/x priyanka priya_x", "/home/[USER]/x priyanka priya_x"),
            ("/home/priya/x mail priya@corp.io", "/home/[USER]/x mail [EMAIL]"),
            ("/home/priya/x mail priya.shah@corp.io", "/home/[USER]/x mail [EMAIL]"),
            # Stock, service and short accounts are not learned: their names are words.
            ("/home/dev/x; dev build", "/home/[USER]/x; dev build"),
            ("/home/ubuntu/app; ubuntu 22.04", "/home/ubuntu/app; ubuntu 22.04"),
            ("/home/jo/x and jo", "/home/[USER]/x and jo"),
            ("cd /home/deploy/app && ./deploy.sh deploy", "cd /home/[USER]/app && ./deploy.sh deploy"),
        ],
    )
    def test_other_words_stay(self, text, expected):
        assert scrub(text).text == expected

    def test_a_lone_path_still_counts_as_a_path(self):
        assert scrub("see /home/priya/x").removed == {"home_path": 1}


class TestRoleMailboxesAndTestNumbers:
    """A role's mailbox and a provider's published test number identify no one; a person's still go."""

    @pytest.mark.parametrize(
        "text",
        [
            "Author: Dependabot <support@github.com>",
            "From: noreply@vendor.io",
            "mail no-reply+build@ci.acme.io",
            "report abuse@hosting.net or postmaster@hosting.net",
            "Contact security@acme.io for disclosures",
            "client.messages.create(to='+15005550006')",
            "from_='+1 500 555 0001'",
            "call (500) 555-0009",
        ],
    )
    def test_stays(self, text):
        assert scrub(text).text == text

    @pytest.mark.parametrize(
        "text, expected",
        [
            ("mail jane.support@corp.io", "mail [EMAIL]"),
            ("mail support.jane@corp.io", "mail [EMAIL]"),
            ("to='+15005550106'", "to='[PHONE]'"),
            ("call +1 415 555 0100", "call [PHONE]"),
        ],
    )
    def test_near_misses_go(self, text, expected):
        assert scrub(text).text == expected


class TestNationalNumberInOneBlock:
    """After a country code, a national number written as one block of digits."""

    @pytest.mark.parametrize(
        "text",
        [
            "call +91 9858844080.",
            '1000,Lukas Weber,"+91 9858844080",x',
            "tel: +49 15112345678",
            "+33 612345678 (mobile)",
            "Kontakt: +31-612345678",
        ],
    )
    def test_goes(self, text):
        assert "[PHONE]" in scrub(text).text

    @pytest.mark.parametrize("text", ["v1.2 +3 12345678901234567", "x+1 2024", "a + 1234567890", "+1 2"])
    def test_stays(self, text):
        assert scrub(text).text == text
