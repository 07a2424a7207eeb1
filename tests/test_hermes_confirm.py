"""Stage 2 in a real Hermes loop: the host's model (the loopback stub) confirms each detector candidate.

The stub answers the confirmation call (recognised by the marker every stage-2 prompt carries) with
JSON, nothing, an HTTP 500, or after a delay; the turn's own answers must never change.
"""

import json

from ichor.testing.hermes_harness import CONFIRMATION, run_scenario

ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"
CONFIRMED = json.dumps({"is_correction": True, "kind": "correction", "label": "ignored human readable"})
REJECTED = json.dumps({"is_correction": False, "kind": "none", "label": None})
CHAT = {
    "platform": "cli",
    "stream": True,
    "turns": [{"user": ASK, "reply": "ls -S"}, {"user": CORRECTION, "reply": "ls -lhS"}],
}


def loop(tmp_path, **spec):
    return run_scenario({"kind": "loop", "sessions": [CHAT], **spec}, tmp_path / "home")


def ichor_lines(report, text):
    return [line for line in report["log"] if text in line]


def test_confirmed_candidate_gives_a_card_with_the_models_label(tmp_path):
    report = loop(tmp_path, reply_when={CONFIRMATION: CONFIRMED})
    assert report["responses"] == ["ls -S", "ls -lhS"]
    [pair] = report["pairs"]
    assert (pair["status"], pair["kind"], pair["label"]) == ("pending", "correction", "ignored human readable")
    assert "ichor · captured pair #1" in report["stdout"] and "ignored human readable" in report["stdout"]
    [call] = report["confirm_calls"]  # one call, for the one candidate
    system, user = call["messages"]
    assert "retry:" in system["content"] and ASK in user["content"] and CORRECTION in user["content"]
    assert call["model"] == "stub-model"  # the host's own model: no confirm_model set
    assert ichor_lines(report, "stage 1 decides") == []


def test_the_model_sees_the_scrubbed_window_only(tmp_path):
    key = "sk-proj-3Fq9ZkL2mN8vR1tY6wX4cB7dH0jS5gP2aE9uK3nT"
    chat = {
        **CHAT,
        "turns": [CHAT["turns"][0], {"user": f"no, use my key {key} and sort by size", "reply": "ls -lhS"}],
    }
    report = run_scenario({"kind": "loop", "sessions": [chat]}, tmp_path / "home")
    [call] = report["confirm_calls"]
    sent = json.dumps(call["messages"])
    assert key not in sent and "[REDACTED:openai_key]" in sent


def test_an_identical_resend_is_a_retry_without_asking_the_model(tmp_path):
    chat = {**CHAT, "turns": [CHAT["turns"][0], {"user": ASK, "reply": "ls -lhS"}]}
    report = run_scenario(
        {"kind": "loop", "sessions": [chat], "reply_when": {CONFIRMATION: REJECTED}}, tmp_path / "home"
    )
    assert report["confirm_calls"] == []  # the labelling rules decide it: the model is not asked
    [pair] = report["pairs"]
    assert (pair["kind"], pair["label"], pair["rejected"], pair["accepted"]) == (
        "retry",
        "identical re-send",
        "ls -S",
        "ls -lhS",
    )


def test_rejected_candidate_gives_no_pair_and_no_card(tmp_path):
    report = loop(tmp_path, reply_when={CONFIRMATION: REJECTED})
    assert report["responses"] == ["ls -S", "ls -lhS"]
    assert len(report["confirm_calls"]) == 1
    assert report["pairs"] == [] and "captured pair" not in report["stdout"]


def _falls_back(report, reason):
    assert report["responses"] == ["ls -S", "ls -lhS"]  # the turn is untouched
    [pair] = report["pairs"]  # stage 1's standalone decision: a correction
    assert pair["kind"] == "correction" and "captured pair #1" in report["stdout"]
    lines = ichor_lines(report, "stage 1 decides")
    assert len(lines) == 1 and reason in lines[0], report["log"]
    assert not [line for line in report["log"] if "carries on without it" in line]


def test_garbage_answer_falls_back_to_stage_one(tmp_path):
    _falls_back(loop(tmp_path, reply_when={CONFIRMATION: "I believe the user is unhappy."}), "not the JSON")


def test_error_falls_back_to_stage_one(tmp_path):
    _falls_back(loop(tmp_path, fail_when=[CONFIRMATION]), "confirmation error")


def test_timeout_falls_back_and_the_turn_does_not_wait(tmp_path):
    report = loop(
        tmp_path,
        reply_when={CONFIRMATION: REJECTED},  # would reject, but arrives too late
        delay_when={CONFIRMATION: 6.0},
        confirm_timeout=1.5,
        count_pairs_per_turn=True,
    )
    _falls_back(report, "confirmation timeout")
    assert report["pairs_per_turn"] == [0, 0]  # the turn came back before the card's pair existed


def test_confirm_off_lets_stage_one_decide_without_a_call(tmp_path):
    report = loop(tmp_path, settings={"confirm": False}, reply_when={CONFIRMATION: REJECTED})
    assert report["confirm_calls"] == []
    assert [p["kind"] for p in report["pairs"]] == ["correction"]


def test_confirm_model_needs_hermes_permission(tmp_path):
    refused = loop(
        tmp_path / "refused", settings={"confirm_model": "cheap-model"}, reply_when={CONFIRMATION: REJECTED}
    )
    _falls_back(refused, "allow_model_override")
    allowed = loop(
        tmp_path / "allowed",
        settings={"confirm_model": "cheap-model"},
        reply_when={CONFIRMATION: REJECTED},
        plugin_entries={"ichor": {"llm": {"allow_model_override": True}}},
    )
    [call] = allowed["confirm_calls"]
    assert call["model"] == "cheap-model" and allowed["pairs"] == []


def test_without_ctx_llm_stage_one_decides_without_a_confirmation(home):
    """A host that gives no ``ctx.llm``: the worker stores the detector's pair, no confirmation thread involved."""
    import threading

    from ichor.hermes import IchorPlugin
    from ichor.store import Store

    plugin = IchorPlugin(ctx=object())
    first = [{"role": "user", "content": ASK}, {"role": "assistant", "content": "ls -S"}]
    plugin.post_llm_call("s1", ASK, "ls -S", first, "telegram")
    second = first + [{"role": "user", "content": CORRECTION}, {"role": "assistant", "content": "ls -lhS"}]
    plugin.post_llm_call("s1", CORRECTION, "ls -lhS", second, "telegram")
    assert plugin.drain(30)
    assert not [t for t in threading.enumerate() if t.name == "ichor-confirm"]
    with Store.open(home) as store:
        [pair] = store.iter_pairs(("pending",))
    assert (pair.kind, pair.rejected, pair.accepted) == ("correction", "ls -S", "ls -lhS")
