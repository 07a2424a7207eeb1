"""Stage 2 on its own: the prompt it builds, how it reads an answer, and its fallbacks."""

import logging
import threading

import pytest

from ichor import confirm
from ichor.confirm import Confirmation, Window, confirmation_messages, parse_confirmation

WINDOW = Window("list the files, largest first", "ls -S", "no, make it human readable", "ls -lhS")


class Stage1:
    """Stage 1's standalone decision, counting how often the fallback asked for it."""

    def __init__(self, kind="correction", label="stage one label"):
        self.kind, self.label, self.calls = kind, label, 0

    def __call__(self):
        self.calls += 1
        return self


def answering(text, usage=None):
    seen = []

    def complete(messages, timeout):
        seen.append((messages, timeout))
        return text, usage or {}

    complete.seen = seen
    return complete


# ---------------------------------------------------------------------------------- the prompt


def test_prompt_states_the_rules_and_the_answer_format():
    system, user = confirmation_messages(WINDOW)
    assert system["role"] == "system" and user["role"] == "user"
    rules = system["content"]
    for phrase in ("correction:", "retry:", "none:", "still failing", "asked for", "did not touch", '"is_correction"'):
        assert phrase in rules, phrase
    assert '"kind": "correction" or "retry" or "none"' in rules
    body = user["content"]
    order = [body.index(text) for text in (WINDOW.prev_user, "ls -S", WINDOW.user, "ls -lhS")]
    assert order == sorted(order)  # previous request, previous answer, new message, its reply
    assert "NEW MESSAGE (user) - classify this one" in body


def test_prompt_cuts_each_side_to_its_budget_keeping_start_and_end():
    long = "HEAD " + "x" * 20000 + " TAIL"
    _, user = confirmation_messages(Window(long, long, long, long))
    body = user["content"]
    assert len(body) < sum(confirm.BUDGETS.values()) + 600
    assert body.count("HEAD") == 4 and body.count("TAIL") == 4
    assert confirm.CUT_MARK in body


def test_cut_keeps_short_text_whole_and_long_text_within_budget():
    assert confirm.cut("short", 100) == "short"
    cut = confirm.cut("a" * 500 + "b" * 500, 120)
    assert len(cut) == 120 and cut.startswith("a") and cut.endswith("b")


def test_empty_sides_are_marked_not_dropped():
    _, user = confirmation_messages(Window("", "", "try again"))
    assert user["content"].count("(empty)") == 3


# --------------------------------------------------------------------------------- the answer


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '{"is_correction": true, "kind": "correction", "label": "Ignored Sort Order"}',
            ("correction", "ignored sort order"),
        ),
        ('```json\n{"is_correction": false, "kind": "none", "label": null}\n```', ("none", None)),
        (
            'Sure. {"kind": "retry", "is_correction": true, "label": "same request again"} Hope that helps.',
            ("retry", "same request again"),
        ),
        ('{"is_correction": true, "label": "wrong flag used here today"}', ("correction", "wrong flag used here")),
        ('{"kind": "none", "label": "ignored"}', ("none", None)),
        ('{"is_correction": false, "kind": "retry", "label": "same ask again"}', ("retry", "same ask again")),
        ('{"note": 1} then {"is_correction": false, "kind": "none", "label": null}', ("none", None)),
        ('{"is_correction": true, "kind": " Correction", "label": "x"}', ("correction", "x")),
        ('{"is_correction": true, "kind": "RETRY", "label": "x"}', ("retry", "x")),
        ('{"is_correction": false, "kind": "", "label": null}', ("none", None)),
    ],
)
def test_parse_reads_the_json_around_prose_and_fences(text, expected):
    found = parse_confirmation(text)
    assert found is not None and (found.kind, found.label) == expected
    assert found.is_correction == (expected[0] != "none")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yes",
        "stub answer",
        '{"kind": "maybe"}',
        '{"is_correction": "yes"}',
        "[1, 2]",
        '{"is_correction": false, "kind": "correction"}',
        '{"is_correction": true, "kind": "none"',
        '{"is_correction": true, "kind": "banana"}',
    ],
)
def test_parse_refuses_garbage(text):
    assert parse_confirmation(text) is None


# -------------------------------------------------------------------------------- confirm()


def test_a_confirmed_candidate_takes_the_models_kind_label_and_tokens():
    complete = answering('{"is_correction": true, "kind": "retry", "label": "same ask"}', {"total_tokens": 812})
    stage1 = Stage1()
    decision = confirm.confirm(WINDOW, complete, 5.0, stage1)
    assert (decision.is_correction, decision.kind, decision.label, decision.stage) == (True, "retry", "same ask", 2)
    assert (decision.tokens, decision.tokens_estimated, decision.reason) == (812, False, None)
    assert stage1.calls == 0
    [(messages, timeout)] = complete.seen
    assert messages == confirmation_messages(WINDOW) and timeout == 5.0


def test_a_rejected_candidate_is_not_a_correction():
    decision = confirm.confirm(
        WINDOW, answering('{"is_correction": false, "kind": "none", "label": null}'), 5, Stage1()
    )
    assert (decision.is_correction, decision.kind, decision.label, decision.stage) == (False, "none", None, 2)


def test_tokens_are_estimated_when_no_usage_is_reported():
    decision = confirm.confirm(WINDOW, answering('{"kind": "none"}', {}), 5, Stage1())
    chars = sum(len(m["content"]) for m in confirmation_messages(WINDOW)) + len('{"kind": "none"}')
    assert decision.tokens == chars // confirm.CHARS_PER_TOKEN and decision.tokens_estimated


def test_prompt_and_completion_tokens_add_up_when_no_total():
    assert confirm.count_tokens({"prompt_tokens": 700, "completion_tokens": 20}, [], "") == (720, False)
    assert confirm.count_tokens({"input_tokens": 5, "output_tokens": 1}, [], "") == (6, False)


@pytest.mark.parametrize(
    "usage",
    [{"prompt_tokens": "812", "completion_tokens": 20}, {"total_tokens": 9.5}, {"total_tokens": None}, [3], "12"],
)
def test_token_counts_of_the_wrong_type_are_estimated_not_a_failure(usage):
    answer = '{"is_correction": true, "kind": "correction", "label": "wrong listing"}'
    decision = confirm.confirm(WINDOW, answering(answer, usage), 5, Stage1())
    assert decision.stage == 2 and decision.is_correction and decision.tokens_estimated and decision.tokens > 0


def _fallback_case(caplog, complete, timeout=5.0):
    stage1 = Stage1(kind="correction", label="still failing")
    with caplog.at_level(logging.WARNING, logger="ichor.confirm"):
        decision = confirm.confirm(WINDOW, complete, timeout, stage1)
    lines = [r.getMessage() for r in caplog.records if r.name == "ichor.confirm"]
    assert len(lines) == 1 and "\n" not in lines[0] and "stage 1 decides" in lines[0]
    assert (decision.is_correction, decision.kind, decision.label, decision.stage) == (
        True,
        "correction",
        "still failing",
        1,
    )
    assert stage1.calls == 1
    return decision, lines[0]


def test_garbage_falls_back_to_stage_one(caplog):
    decision, line = _fallback_case(caplog, answering("I think the user is unhappy."))
    assert decision.reason == "garbage" and decision.tokens is not None


def test_an_error_falls_back_to_stage_one(caplog):
    def broken(messages, timeout):
        raise ConnectionRefusedError("connection refused\nsecond line")

    decision, line = _fallback_case(caplog, broken)
    assert decision.reason == "error" and "ConnectionRefusedError" in line


def test_a_model_that_never_answers_is_cut_off_at_the_timeout(caplog):
    release = threading.Event()

    def hangs(messages, timeout):
        release.wait(30)  # ignores its timeout, as a stuck connection would
        return '{"kind": "none"}', {}

    try:
        decision, line = _fallback_case(caplog, hangs, timeout=0.2)
    finally:
        release.set()
    assert decision.reason == "timeout" and "timeout" in line


def test_a_timeout_raised_by_the_client_counts_as_a_timeout(caplog):
    def slow(messages, timeout):
        raise TimeoutError("The read operation timed out")

    decision, _ = _fallback_case(caplog, slow)
    assert decision.reason == "timeout"


def test_calls_a_model_never_returns_from_are_bounded(caplog):
    release = threading.Event()

    def hangs(messages, timeout):
        release.wait(30)
        return '{"kind": "none"}', {}

    def stuck_calls():
        return [t for t in threading.enumerate() if t.name == "ichor-confirm-call" and t.is_alive()]

    try:
        with caplog.at_level(logging.WARNING, logger="ichor.confirm"):
            decisions = [confirm.confirm(WINDOW, hangs, 0.05, Stage1()) for _ in range(confirm.MAX_CALLS + 3)]
        assert [d.reason for d in decisions] == ["timeout"] * confirm.MAX_CALLS + ["busy"] * 3
        assert all(d.is_correction and d.stage == 1 for d in decisions)  # stage 1 decided every one
        assert not any(d.asked_model for d in decisions[confirm.MAX_CALLS :])
        assert len(stuck_calls()) == confirm.MAX_CALLS
    finally:
        release.set()
    for thread in stuck_calls():
        thread.join(5)
    assert confirm.confirm(WINDOW, answering('{"kind": "none"}'), 5, Stage1()).stage == 2  # free again


def test_stage_one_saying_none_stays_none_on_fallback():
    decision = confirm.confirm(WINDOW, answering("nope"), 5, Stage1(kind="none", label=None))
    assert (decision.is_correction, decision.kind, decision.stage) == (False, "none", 1)


def test_a_label_word_is_cut_to_its_length():
    found = parse_confirmation('{"kind": "correction", "label": "%s wrong flag"}' % ("x" * 5000))
    assert found.label == "x" * confirm.LABEL_WORD_CHARS + " wrong flag"


# ------------------------------------------------------------------------------- two_stage()

SECRET_WINDOW = Window(
    "deploy with token ghp_16C7e42F292c6912E7710c838347Ae178B4a please",
    "Deployed from /home/ada/site; mail ada@lovelace-labs.io if it fails.",
    "no, that failed: password=hunter2secret, it still does not deploy",
    "",
)


def test_two_stage_sends_the_model_a_scrubbed_window():
    complete = answering('{"is_correction": true, "kind": "correction", "label": "deploy failed"}')
    decision = confirm.two_stage(SECRET_WINDOW, complete, 5)
    assert decision.stage == 2 and decision.is_correction
    [(messages, _)] = complete.seen
    sent = "\n".join(m["content"] for m in messages)
    for secret in (
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "hunter2secret",
        "ada@lovelace-labs.io",
        "/home/ada",
    ):
        assert secret not in sent
    assert "still does not deploy" in sent  # what the model must judge is still there


def test_what_the_labelling_rules_decide_outright_never_reaches_the_model():
    complete = answering('{"is_correction": false, "kind": "none", "label": null}')
    resent = confirm.two_stage(Window("sort the list by size", "ls -S", "sort the list by size", ""), complete, 5)
    bare = confirm.two_stage(Window("sort the list by size", "ls -S", "thanks!", ""), complete, 5)
    assert (resent.kind, resent.label, resent.stage) == ("retry", "identical re-send", 1)
    assert (bare.kind, bare.stage) == ("none", 1)
    assert complete.seen == []


def test_confirmation_is_a_plain_value():
    assert Confirmation(True, "correction", "x") == parse_confirmation('{"kind": "correction", "label": "x"}')
