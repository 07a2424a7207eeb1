"""The blind corpus is well formed: values present, deterministic, every shape used, checksums valid."""

from stdnum import iban, luhn

from bench.corpus_blind6 import SHAPES, generate

KINDS = {
    "password", "api_key", "token", "private_key", "connection_string_password", "email", "phone", "card", "iban",
    "ssn", "home_path_user",
}  # fmt: skip


def test_every_value_is_in_its_paste_and_kind_is_known():
    for paste in generate(seed=0, n=300):
        for kind, value in paste.must_go:
            assert kind in KINDS, (paste.shape, kind)
            assert value and value in paste.text, (paste.shape, kind)
        for kept in paste.must_stay:
            assert kept in paste.text, (paste.shape, kept)


def test_generation_is_deterministic_per_seed():
    assert generate(seed=3, n=120) == generate(seed=3, n=120)
    assert generate(seed=3, n=120) != generate(seed=4, n=120)


def test_every_shape_occurs():
    pastes = generate(seed=0, n=300)
    assert {p.shape for p in pastes} == set(SHAPES)
    assert len(SHAPES) >= 40


def test_cards_pass_luhn_and_ibans_pass_mod97():
    pastes = generate(seed=0, n=300)
    cards = [v for p in pastes for k, v in p.must_go if k == "card"]
    ibans = [v for p in pastes for k, v in p.must_go if k == "iban"]
    assert cards and ibans
    assert all(luhn.is_valid(c.replace(" ", "").replace("-", "")) for c in cards)
    assert all(iban.is_valid(b) for b in ibans)
