"""The blind3 scrubber corpus is well formed: its labels are true of its texts, and its PII is valid PII."""

import phonenumbers
import pytest
from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.us import ssn as stdnum_ssn

from bench.corpus_blind3 import NEAR_MISS_ONLY, SHAPES, Paste, generate

KINDS = {
    "password", "api_key", "token", "private_key", "connection_string_password", "email", "phone", "card", "iban",
    "ssn", "home_path_user",
}  # fmt: skip
CORPUS = generate(seed=0, n=300)


def values(kind: str) -> list[str]:
    return [value for paste in CORPUS for k, value in paste.must_go if k == kind]


def test_every_label_is_in_its_text_and_of_a_known_kind() -> None:
    for paste in CORPUS:
        for kind, value in paste.must_go:
            assert kind in KINDS, (paste.shape, kind)
            assert len(value) >= 3 and value in paste.text, (paste.shape, kind, value)
        for kept in paste.must_stay:
            assert kept and kept in paste.text, (paste.shape, kept)


def test_nothing_is_both_to_remove_and_to_keep() -> None:
    for paste in CORPUS:
        for _, value in paste.must_go:
            for kept in paste.must_stay:
                assert value not in kept and kept not in value, (paste.shape, value, kept)


def test_generation_is_deterministic_per_seed() -> None:
    assert generate(seed=0, n=300) == CORPUS
    assert generate(seed=1, n=300) != CORPUS
    assert all(isinstance(p, Paste) for p in CORPUS)


def test_every_shape_occurs_and_is_named_after_its_generator() -> None:
    assert len(SHAPES) >= 30
    assert {p.shape for p in CORPUS} == set(SHAPES)
    assert NEAR_MISS_ONLY <= set(SHAPES)


def test_secrets_are_assembled_at_run_time() -> None:
    """A value that is the same under two seeds would be a literal in the source."""
    high_entropy = {"api_key", "token", "private_key", "card", "iban"}
    other = {p.shape: p for p in generate(seed=7, n=len(SHAPES) * 2)}
    for paste in CORPUS:
        if paste.shape in other:
            ours = {v for k, v in paste.must_go if k in high_entropy}
            assert not ours & {v for _, v in other[paste.shape].must_go}, paste.shape


def test_about_a_fifth_of_pastes_have_nothing_to_remove() -> None:
    share = sum(not p.must_go for p in CORPUS) / len(CORPUS)
    assert 0.15 <= share <= 0.25, share
    assert all(not p.must_go and p.must_stay for p in CORPUS if p.shape in NEAR_MISS_ONLY)


def test_every_kind_occurs() -> None:
    assert {kind for paste in CORPUS for kind, _ in paste.must_go} == KINDS


def test_cards_pass_luhn_and_are_not_published_test_numbers() -> None:
    for number in values("card"):
        digits = number.replace(" ", "").replace("-", "")
        assert digits.isdigit() and len(digits) in (15, 16) and luhn.is_valid(digits), number
        assert digits != "4242424242424242"


def test_ibans_have_valid_checksums() -> None:
    for account in values("iban"):
        assert stdnum_iban.is_valid(account), account


def test_ssns_are_in_issued_ranges() -> None:
    for number in values("ssn"):
        assert stdnum_ssn.is_valid(number), number


def test_phones_are_valid_in_their_national_plan() -> None:
    for number in values("phone"):
        regions = [None] if number.startswith("+") else ["GB", "FR", "JP", "US"]
        parsed = [phonenumbers.parse(number, region) for region in regions]
        assert any(phonenumbers.is_valid_number(p) for p in parsed), number


@pytest.mark.parametrize("seed", [0, 3])
def test_corpus_of_any_size_cycles_through_shapes(seed: int) -> None:
    small = generate(seed=seed, n=5)
    assert len(small) == 5 and len({p.shape for p in small}) == 5
