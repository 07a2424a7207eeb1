"""Blind corpora v4–v6 are well formed: values present, deterministic, every shape used, checksums valid.

They never import the scrubber: a corpus must stay independent of what it measures."""

import pytest
from stdnum import iban, luhn

from bench import corpus_blind4, corpus_blind5, corpus_blind6

KINDS = {
    "password", "api_key", "token", "private_key", "connection_string_password", "email", "phone", "card", "iban",
    "ssn", "home_path_user",
}  # fmt: skip
# (corpus, the kinds its writer was given, whether its IBANs were asked to pass their country's own check too)
CORPORA = [
    pytest.param(corpus_blind4, KINDS, True, id="v4"),
    pytest.param(corpus_blind5, KINDS | {"person_name"}, False, id="v5"),
    pytest.param(corpus_blind6, KINDS, True, id="v6"),
]


@pytest.mark.parametrize(("corpus", "kinds", "national_iban_checks"), CORPORA)
def test_every_value_is_in_its_paste_and_kind_is_known(corpus, kinds, national_iban_checks):
    for paste in corpus.generate(seed=0, n=300):
        for kind, value in paste.must_go:
            assert kind in kinds, (paste.shape, kind)
            assert value and value in paste.text, (paste.shape, kind)
        for kept in paste.must_stay:
            assert kept in paste.text, (paste.shape, kept)


@pytest.mark.parametrize(("corpus", "kinds", "national_iban_checks"), CORPORA)
def test_generation_is_deterministic_per_seed_and_uses_every_shape(corpus, kinds, national_iban_checks):
    assert corpus.generate(seed=3, n=120) == corpus.generate(seed=3, n=120)
    assert corpus.generate(seed=3, n=120) != corpus.generate(seed=4, n=120)
    assert {p.shape for p in corpus.generate(seed=0, n=300)} == set(corpus.SHAPES)
    assert len(corpus.SHAPES) >= 40


@pytest.mark.parametrize(("corpus", "kinds", "national_iban_checks"), CORPORA)
def test_cards_pass_luhn_and_ibans_pass_mod97(corpus, kinds, national_iban_checks):
    pastes = corpus.generate(seed=0, n=300)
    cards = [v for p in pastes for k, v in p.must_go if k == "card"]
    ibans = [v for p in pastes for k, v in p.must_go if k == "iban"]
    assert cards and ibans
    assert all(luhn.is_valid(c.replace(" ", "").replace("-", "")) for c in cards)
    assert all(iban.is_valid(b, check_country=national_iban_checks) for b in ibans)


def test_blind_v4_has_pastes_with_nothing_to_remove():
    pastes = corpus_blind4.generate(seed=0, n=300)
    assert sum(not p.must_go for p in pastes) >= 0.1 * len(pastes)
