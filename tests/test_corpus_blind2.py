"""The blind corpus is well formed: values are in their pastes, PII values are valid, generation is deterministic.

It never imports the scrubber: the corpus must stay independent of what it measures.
"""

import re

import phonenumbers
import pytest
from stdnum import iban, luhn
from stdnum.us import ssn

from bench import corpus_blind2 as corpus

PASTES = corpus.generate(seed=0, n=300)
SEEDS = (0, 1, 7)


def all_pastes():
    for seed in SEEDS:
        yield from corpus.generate(seed=seed, n=len(corpus.SHAPES))


def values(kind):
    return [v for p in all_pastes() for k, v in p.must_go if k == kind]


def test_at_least_thirty_shapes_and_every_shape_occurs():
    assert len(corpus.SHAPES) >= 30
    assert {p.shape for p in PASTES} == set(corpus.SHAPES)


def test_generation_is_deterministic_per_seed():
    again = corpus.generate(seed=0, n=300)
    assert [(p.text, p.must_go, p.must_stay) for p in again] == [(p.text, p.must_go, p.must_stay) for p in PASTES]
    other = corpus.generate(seed=1, n=300)
    assert [p.text for p in other] != [p.text for p in PASTES]


def test_every_value_is_in_its_text_and_kinds_are_known():
    for p in all_pastes():
        for kind, value in p.must_go:
            assert kind in corpus.KINDS, (p.shape, kind)
            assert value and value in p.text, (p.shape, kind, value)
        for kept in p.must_stay:
            assert kept and kept in p.text, (p.shape, kept)


def test_no_value_is_both_secret_and_near_miss():
    for p in all_pastes():
        for _, value in p.must_go:
            for kept in p.must_stay:
                assert value not in kept and kept not in value, (p.shape, value, kept)


def test_every_kind_occurs_and_about_a_fifth_are_near_miss_only():
    kinds = {k for p in PASTES for k, _ in p.must_go}
    assert kinds == set(corpus.KINDS)
    share = sum(not p.must_go for p in PASTES) / len(PASTES)
    assert 0.15 <= share <= 0.25, share
    assert all(p.must_stay for p in PASTES if not p.must_go)


def test_near_miss_only_shapes_carry_nothing_to_remove():
    for p in all_pastes():
        assert (p.shape in corpus.NEAR_MISS_SHAPES) == (not p.must_go), p.shape


@pytest.mark.parametrize("number", values("card"))
def test_cards_pass_luhn_and_are_not_published_test_numbers(number):
    digits = re.sub(r"[ -]", "", number)
    assert luhn.is_valid(digits) and 13 <= len(digits) <= 19
    assert digits not in {c.replace(" ", "") for c in corpus.TEST_CARDS}


@pytest.mark.parametrize("value", values("iban"))
def test_ibans_have_valid_checksums(value):
    assert iban.is_valid(value), value


@pytest.mark.parametrize("value", values("ssn"))
def test_ssns_are_in_issued_ranges(value):
    assert ssn.is_valid(value.replace(" ", "-")), value


@pytest.mark.parametrize("value", values("phone"))
def test_phones_are_valid_numbers_of_some_listed_region(value):
    def valid_in(region):
        try:
            return phonenumbers.is_valid_number(phonenumbers.parse(value, region))
        except phonenumbers.NumberParseException:
            return False

    assert any(valid_in(region) for region in corpus.PHONE_REGIONS), value


def test_test_cards_kept_as_near_misses_are_luhn_valid():
    # a scrubber that removes every Luhn-valid number would lose these, which is the point of keeping them
    assert all(luhn.is_valid(c.replace(" ", "")) for c in corpus.TEST_CARDS)


def test_session_tokens_are_long_enough_to_cross_a_value_cap():
    longest = max(len(v) for v in values("token"))
    assert longest >= 800


def test_corpus_imports_nothing_from_ichor():
    source = open(corpus.__file__, encoding="utf-8").read()
    imported = re.findall(r"^(?:from|import) ([\w.]+)", source, re.M)
    assert imported and not any(name.split(".")[0] == "ichor" for name in imported), imported
