"""Property tests for the layout finders (tables, options, markup, records, calls, HTTP headers, YAML): random
joins of their triggers never raise, scrub idempotently and leave no placeholder half-replaced."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ichor.scrub import scrub

LAYOUT_FRAGMENTS = [
    "|",
    " | ",
    "|---|",
    "\n",
    " ",
    "password",
    "DB password",
    "token",
    "api_key",
    "rootPassword",
    "PGPASSWORD",
    "requirepass",
    "--requirepass",
    "-storepass",
    '"',
    "'",
    '"""',
    ", ",
    "[",
    "]",
    "- ",
    "name: ",
    "value: ",
    "<password>",
    "</password>",
    '<param name="token">',
    "</param>",
    "Authorization: ",
    "Token ",
    "Cookie: ",
    "sid=",
    "; ",
    "=",
    ": ",
    ": >-\n  ",
    ": &a ",
    "(",
    ")",
    "set_password(",
    "define(",
    "echo ",
    " | docker login --password-stdin",
    "<<< ",
    "https://",
    "@github.com",
    "~priya/",
    "db:5432:app:bob:",
    "Xy7abc9q1234",
    "S3cr3t!x",
    "changeme",
    "$TOKEN",
    "[REDACTED:env_secret]",
]
layout_text = st.lists(st.sampled_from(LAYOUT_FRAGMENTS), max_size=40).map("".join)
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]|\[(?:EMAIL|IP|PHONE|CARD|IBAN|SSN|USER)\]")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout_text)
def test_layout_triggers_scrub_idempotently(text):
    once = scrub(text)
    twice = scrub(once.text)
    assert twice.text == once.text
    assert twice.removed == {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout_text)
def test_every_placeholder_is_whole(text):
    out = scrub(text).text
    stripped = PLACEHOLDER.sub("", out)
    assert "REDACTED" not in stripped or "REDACTED" in PLACEHOLDER.sub("", text)


def test_an_authorization_scheme_left_before_a_removed_credential_stays():
    once = scrub("Authorization: tokenrootPasswordDB passwordAuthorization: ")
    assert "[REDACTED" in once.text and scrub(once.text).text == once.text
    assert scrub("Authorization: Zx9aQ2LmPq7RtY8w").text == "Authorization: [REDACTED:bearer]"
