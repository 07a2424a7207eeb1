"""The blind scrubber corpus is well formed: labels are in the text, checksummed PII is valid, generation is
deterministic, every shape and kind occurs, and the source holds no literal credential. It never imports the
scrubber."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import phonenumbers
import pytest
from stdnum import iban, luhn
from stdnum.us import ssn

from bench import corpus_blind
from bench.corpus_blind import KINDS, PHONE_REGIONS, SHAPES, TEST_CARDS, generate

CORPUS = generate(seed=0, n=300)


def _values(kind: str) -> list[str]:
    return [value for paste in CORPUS for k, value in paste.must_go if k == kind]


def test_generation_is_deterministic_per_seed():
    assert generate(seed=0, n=300) == CORPUS
    assert generate(seed=1, n=60) == generate(seed=1, n=60)
    assert [p.text for p in generate(seed=1, n=60)] != [p.text for p in CORPUS[:60]]


def test_every_shape_occurs_and_there_are_at_least_thirty():
    assert len(SHAPES) >= 30
    assert {p.shape for p in CORPUS} == set(SHAPES)


def test_every_kind_occurs():
    assert set(Counter(k for p in CORPUS for k, _ in p.must_go)) == set(KINDS)


def test_about_a_fifth_of_pastes_carry_only_near_misses():
    share = sum(1 for p in CORPUS if not p.must_go) / len(CORPUS)
    assert 0.15 <= share <= 0.25
    assert all(p.must_stay for p in CORPUS if not p.must_go)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_labels_are_in_the_text_and_never_inside_each_other(seed):
    for paste in generate(seed=seed, n=len(SHAPES)):
        for kind, value in paste.must_go:
            assert kind in KINDS, paste.shape
            assert len(value) >= 5 and value in paste.text, (paste.shape, kind, value)
            assert not any(value in kept or kept in value for kept in paste.must_stay), (paste.shape, value)
        for kept in paste.must_stay:
            assert kept and kept in paste.text, (paste.shape, kept)


def test_cards_pass_luhn_and_are_not_published_test_numbers():
    cards = _values("card")
    assert cards
    test_digits = {re.sub(r"\D", "", c) for c in TEST_CARDS}
    for card in cards:
        digits = re.sub(r"[ -]", "", card)
        assert luhn.is_valid(digits) and len(digits) in (15, 16), card
        assert digits not in test_digits
    assert all(luhn.is_valid(d) for d in test_digits)


def test_ibans_have_valid_check_digits():
    ibans = _values("iban")
    assert ibans
    assert all(iban.is_valid(value) for value in ibans), [v for v in ibans if not iban.is_valid(v)]


def test_ssns_are_in_issued_ranges():
    ssns = _values("ssn")
    assert ssns
    assert all(ssn.is_valid(value) for value in ssns), [v for v in ssns if not ssn.is_valid(v)]


def _valid_somewhere(number: str) -> bool:
    for region in PHONE_REGIONS:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(number, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


def test_phones_are_valid_numbers_of_several_national_plans():
    phones = _values("phone")
    assert phones
    assert all(_valid_somewhere(p) for p in phones), [p for p in phones if not _valid_somewhere(p)]
    national_formats = {p for p in phones if not p.startswith("+")}
    assert len(national_formats) >= 5


def test_source_holds_no_literal_credential():
    source = Path(corpus_blind.__file__).read_text()
    allowed = {"ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "AKIAIOSFODNN7EXAMPLE"}
    patterns = [
        r"gh[pousr]_[A-Za-z0-9]{36}",
        r"github_pat_[A-Za-z0-9_]{40,}",
        r"AKIA[A-Z2-7]{16}",
        r"sk_live_[A-Za-z0-9]{10,}",
        r"xox[abp]-\d{6,}",
        r"glpat-[\w-]{20}",
        r"sk-(?:proj|ant)-[\w-]{20,}",
        r"hf_[A-Za-z]{34}",
        r"PRIVATE KEY-----\s*[A-Za-z0-9+/]{60}",
        r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.",
    ]
    found = {m for pattern in patterns for m in re.findall(pattern, source)}
    assert found <= allowed, found - allowed


def test_corpus_module_does_not_load_the_scrubber():
    code = "import sys, bench.corpus_blind; print(sorted(m for m in sys.modules if m.startswith('ichor')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _perfect_scrub(text: str, values: list[str]) -> str:
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, "[X]")
    return text


@pytest.mark.parametrize("seed", [0, 7])
def test_a_scrubber_removing_exactly_the_labels_scores_perfectly(seed):
    """The labels are consistent: removing every must_go value leaves none behind and every near-miss intact."""
    for paste in generate(seed=seed, n=300):
        out = _perfect_scrub(paste.text, [v for _, v in paste.must_go])
        assert not [v for _, v in paste.must_go if v in out], paste.shape
        assert not [v for v in paste.must_stay if v not in out], paste.shape
