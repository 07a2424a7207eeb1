"""Hostile and gate-edge inputs are scrubbed correctly (their timing is measured in bench/bench_scrub.py)."""

import pytest

from ichor.scrub import scrub


@pytest.mark.parametrize("option", ["--access-token", "--access-key", "--client-secret", "--private-key"])
def test_every_secret_option_is_scrubbed_without_another_gate_word(option):
    # No "-u", "-p", "--token" or "--secret" elsewhere in the text: the rule's gate alone must let it run.
    result = scrub(f"deploy {option} Zq8vR2mK9x")
    assert result.text == f"deploy {option} [REDACTED:cli_secret]"
    assert result.removed == {"cli_secret": 1}


def test_repeated_curl_user_options_are_each_scrubbed():
    text = "-u a:Zq8vR2mK9x " * 2000
    result = scrub(text)
    assert "Zq8vR2mK9x" not in result.text
    assert result.removed == {"cli_secret": 2000}


def test_repeated_ssns_are_each_scrubbed():
    result = scrub("078-05-1121 " * 1000)
    assert "078-05-1121" not in result.text
    assert result.removed == {"ssn": 1000}


def test_repeated_ibans_are_each_scrubbed():
    result = scrub("DE44 5001 0517 5407 3249 31 " * 500)
    assert "5407" not in result.text
    assert result.removed == {"iban": 500}
