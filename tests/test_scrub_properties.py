"""Property tests for the scrubber: it never raises, is idempotent, lets no generated secret through, stays fast."""

import random
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import corpus
from ichor.scrub import KINDS, describe, find_leaks, merge_counts, scrub, scrub_messages

# Pieces of every rule's trigger, so random joins of them reach deep into the rules.
FRAGMENTS = [
    "sk-",
    "sk-ant-",
    "proj-",
    "ghp_",
    "github_pat_",
    "hf_",
    "AKIA",
    "xoxb-",
    "xapp-",
    "sk_live_",
    "k_test_",
    "AIza",
    ":AA",
    "eyJ",
    ".eyJ",
    "Bearer ",
    "://",
    "user:",
    "@",
    ".",
    ":",
    "::",
    "=",
    ": ",
    '"',
    "'",
    "KEY",
    "_SECRET",
    "password",
    "TOKEN",
    "export ",
    "/home/",
    "/Users/",
    "C:\\Users\\",
    "+1 ",
    "(415) ",
    "555-",
    "0100",
    "192.168.",
    "10.",
    "fe80",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "\n",
    " ",
    "aws ",
    "secret ",
    "A",
    "a",
    "Z9",
    "0",
    "1",
    "12",
    "123",
    "abcdef",
    "Ab3xY9",
    "[REDACTED:jwt]",
    "[EMAIL]",
    "[IP]",
    "[USER]",
]
fragment_text = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)
any_text = st.one_of(st.text(max_size=400), fragment_text)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(any_text)
def test_never_raises_and_reports_consistent_counts(text):
    result = scrub(text)
    assert isinstance(result.text, str)
    assert all(kind in KINDS and n > 0 for kind, n in result.removed.items())
    assert isinstance(describe(result.removed), str)
    assert isinstance(find_leaks(text), dict)


@PROPERTY
@given(any_text)
def test_idempotent(text):
    once = scrub(text)
    twice = scrub(once.text)
    assert twice.text == once.text
    assert twice.removed == {}
    assert find_leaks(once.text) == {}


separator = st.sampled_from([" ", "\n", "\t", " \n "])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KINDS), st.integers(0, 2**32 - 1), st.text(max_size=200), st.text(max_size=200), separator)
def test_no_generated_secret_survives(kind, seed, before, after, sep):
    chunk, secret = corpus.embed(kind, random.Random(seed))
    if kind == "user_name":
        sep = "\n"  # a shell prompt is recognised at the start of a line
    text = before + sep + chunk + sep + after
    assert secret not in scrub(text).text


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join))
def test_time_is_bounded_and_scrub_idempotent_on_50k_repetitions(unit):
    text = (unit * (50_000 // len(unit) + 1))[:50_000]
    start = time.perf_counter()
    once = scrub(text)
    assert time.perf_counter() - start < 0.5
    assert scrub(once.text).removed == {}  # also idempotent on long chains of matches


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | any_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def same_shape(a, b):
    if isinstance(a, str):
        return isinstance(b, str)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b, strict=False))
    return a == b


def leaves(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from leaves(value)
    elif isinstance(node, list):
        for item in node:
            yield from leaves(item)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_scrub_messages_keeps_the_shape_and_sums_the_leaf_counts(value):
    scrubbed, removed = scrub_messages(value)
    assert same_shape(value, scrubbed)
    assert removed == merge_counts(*(scrub(leaf).removed for leaf in leaves(value)))
    assert list(leaves(scrubbed)) == [scrub(leaf).text for leaf in leaves(value)]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(KINDS + ("legacy_kind",)), st.integers(0, 10**6)))
def test_describe_never_raises_and_says_nothing_only_when_empty(removed):
    text = describe(removed)
    assert (text == "nothing") == (not any(removed.values()))
