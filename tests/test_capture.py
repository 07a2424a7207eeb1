"""The pure turn tracker: which turns make a pair, and what the pair holds."""

from ichor.capture import MAX_CHARS, PROMPT_MESSAGES, Tracker, Turn, capture, detection_window, turn_text
from ichor.detect_features import features
from ichor.hermes.confirmation import window_of

ASK = "list the files in this folder"
CORRECTION = "no, make it human readable and sorted by size"


def history(*texts):
    """Alternating user/assistant messages, with a system message and a tool call mixed in like Hermes'."""
    msgs = [{"role": "system", "content": "you are helpful"}]
    for i, text in enumerate(texts):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return msgs


def turn(msgs, session="s1", platform="telegram"):
    users = [m for m in msgs if m["role"] == "user"]
    return Turn(session, platform, users[-1]["content"], msgs[-1]["content"], msgs)


def two_turns(tracker, first, second, **kw):
    assert tracker.observe(turn(first, **kw)) is None
    return tracker.observe(turn(second, **kw))


def test_correction_pairs_previous_answer_with_new_one():
    tracker = Tracker()
    got = two_turns(tracker, history(ASK, "ls"), history(ASK, "ls", CORRECTION, "ls -lhS"))
    assert got is not None
    pair = got.pair
    assert (pair.kind, pair.rejected, pair.accepted, pair.user_said) == ("correction", "ls", "ls -lhS", CORRECTION)
    assert pair.prompt == [{"role": "user", "content": ASK}]
    assert (pair.platform, pair.session_id) == ("telegram", "s1")


def test_acknowledgement_makes_no_pair():
    tracker = Tracker()
    assert two_turns(tracker, history(ASK, "ls"), history(ASK, "ls", "thanks, perfect", "glad it helped")) is None


def test_retry_same_message_history_not_grown():
    tracker = Tracker()
    got = two_turns(tracker, history("a", "1", ASK, "ls"), history("a", "1", ASK, "ls -la"))
    assert got is not None and got.pair.kind == "retry"
    assert (got.pair.rejected, got.pair.accepted) == ("ls", "ls -la")
    assert got.pair.prompt == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": ASK},
    ]


def test_undo_then_new_ask_pairs_undone_answer():
    tracker = Tracker()
    got = two_turns(tracker, history("a", "1", ASK, "ls"), history("a", "1", "list them biggest first", "ls -S"))
    assert got is not None and got.pair.kind == "undo"
    assert (got.pair.rejected, got.pair.accepted, got.pair.user_said) == ("ls", "ls -S", "list them biggest first")


def test_only_the_detectors_decisions_are_left_for_stage_two():
    said_so = two_turns(Tracker(), history(ASK, "ls"), history(ASK, "ls", CORRECTION, "ls -lhS"))
    retried = two_turns(Tracker(), history("a", "1", ASK, "ls"), history("a", "1", ASK, "ls -la"))
    undone = two_turns(Tracker(), history("a", "1", ASK, "ls"), history("a", "1", "biggest first", "ls -S"))
    assert (said_so.detected, retried.detected, undone.detected) == (True, False, False)


def test_heavy_shrink_is_never_an_undo():
    tracker = Tracker()
    long = history("a", "1", "b", "2", "c", "3", ASK, "ls")
    assert two_turns(tracker, long, history("summary of earlier", "ok", "what next", "ls -S")) is None
    # and the tracker starts over from the shrunk history: a later correction still pairs
    nxt = tracker.observe(turn(history("summary of earlier", "ok", "what next", "ls -S", CORRECTION, "ls -lhS")))
    assert nxt is not None and nxt.pair.rejected == "ls -S"


def test_two_exchanges_rolled_back_make_no_pair():
    tracker = Tracker()
    assert two_turns(tracker, history("a", "1", "b", "2", ASK, "ls"), history("a", "1", "new", "x")) is None


def test_unchanged_answer_makes_no_pair():
    tracker = Tracker()
    assert two_turns(tracker, history(ASK, "ls"), history(ASK, "ls", CORRECTION, "  ls ")) is None
    assert (
        tracker.observe(
            turn(
                history(ASK, "ls", CORRECTION, "  ls ")[:-2]
                + [{"role": "user", "content": CORRECTION}, {"role": "assistant", "content": "ls"}]
            )
        )
        is None
    )


def test_background_platforms_are_ignored():
    for platform in ("cron", "subagent", ""):
        tracker = Tracker()
        got = two_turns(tracker, history(ASK, "ls"), history(ASK, "ls", CORRECTION, "ls -lhS"), platform=platform)
        assert got is None and len(tracker) == 0


def test_sessions_are_independent_and_forgotten():
    tracker = Tracker()
    assert tracker.observe(turn(history(ASK, "ls"), session="a")) is None
    assert tracker.observe(turn(history("other", "x"), session="b")) is None
    got = tracker.observe(turn(history(ASK, "ls", CORRECTION, "ls -lhS"), session="a"))
    assert got is not None and got.pair.session_id == "a"
    tracker.forget_session("a")
    assert len(tracker) == 1
    resumed = history(ASK, "ls", CORRECTION, "ls -lhS", "thanks", "welcome")
    assert tracker.observe(turn(resumed, session="a")) is None  # rebuilt from the history, nothing to pair
    assert len(tracker) == 2


def test_a_fresh_tracker_rebuilds_the_previous_exchange_from_the_history():
    """A restarted process, ``hermes chat -r SESSION`` or a one-shot ``-q`` turn: nothing is remembered."""
    got = Tracker().observe(turn(history("hi", "Hello!", ASK, "ls", CORRECTION, "ls -lhS")))
    assert got is not None
    pair = got.pair
    assert (pair.kind, pair.rejected, pair.accepted, pair.user_said) == ("correction", "ls", "ls -lhS", CORRECTION)
    assert pair.prompt == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": ASK},
    ]


def test_a_rebuilt_exchange_takes_the_final_answer_after_tool_calls():
    msgs = history(ASK) + [
        {"role": "assistant", "content": "let me look", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "a.txt b.txt"},
        {"role": "assistant", "content": "ls"},
        {"role": "user", "content": CORRECTION},
        {"role": "assistant", "content": "ls -lhS"},
    ]
    got = Tracker().observe(Turn("s", "cli", CORRECTION, "ls -lhS", msgs))
    assert got is not None and (got.pair.rejected, got.pair.accepted) == ("ls", "ls -lhS")


def test_a_resent_message_in_the_history_is_a_retry_after_a_restart():
    got = Tracker().observe(turn(history(ASK, "ls", ASK, "ls -la")))
    assert got is not None and (got.pair.kind, got.pair.rejected, got.pair.accepted) == ("retry", "ls", "ls -la")


def test_nothing_to_rebuild_makes_no_pair():
    assert Tracker().observe(turn(history(ASK, "ls"))) is None  # the first turn
    unanswered = history(ASK) + [{"role": "user", "content": CORRECTION}, {"role": "assistant", "content": "ls -lhS"}]
    assert Tracker().observe(turn(unanswered)) is None  # the previous turn never got an answer


def test_tool_calls_and_multimodal_content_are_read_as_text():
    tracker = Tracker()
    first = history(ASK) + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "a.txt b.txt"},
        {"role": "assistant", "content": "ls"},
    ]
    second = first + [
        {"role": "user", "content": [{"type": "text", "text": CORRECTION}]},
        {"role": "assistant", "content": "ls -lhS"},
    ]
    assert tracker.observe(Turn("s", "cli", ASK, "ls", first)) is None
    got = tracker.observe(Turn("s", "cli", [{"type": "text", "text": CORRECTION}], "ls -lhS", second))
    assert got is not None and got.pair.prompt == [{"role": "user", "content": ASK}]


def test_pairs_are_scrubbed_and_cut():
    tracker = Tracker()
    key = "sk-" + "a1B2c3D4e5" * 4
    first = history(f"deploy with my key {key}", "x" * (MAX_CHARS + 500))
    second = first + [
        {"role": "user", "content": "no, that's wrong, write to /home/alice/notes.txt"},
        {"role": "assistant", "content": "done"},
    ]
    assert tracker.observe(turn(first)) is None
    pair = tracker.observe(turn(second)).pair
    assert key not in pair.prompt[0]["content"] and "alice" not in pair.user_said
    assert len(pair.rejected) == MAX_CHARS
    assert sum(pair.scrubbed.values()) >= 2


def test_prompt_keeps_recent_messages_only():
    tracker = Tracker()
    texts = [f"m{i}" for i in range(2 * PROMPT_MESSAGES)] + [ASK, "ls"]
    assert tracker.observe(turn(history(*texts))) is None
    got = tracker.observe(turn(history(*texts, CORRECTION, "ls -lhS")))
    assert len(got.pair.prompt) == PROMPT_MESSAGES and got.pair.prompt[-1]["content"] == ASK


def test_session_memory_is_bounded():
    tracker = Tracker(max_sessions=3)
    for i in range(10):
        tracker.observe(turn(history(ASK, "ls"), session=f"s{i}"))
    assert len(tracker) == 3


def test_pending_work_is_decided_later_whatever_the_session_did_since():
    """``advance`` on the turn's thread, ``capture`` on a worker that may run after later turns were tracked."""
    tracker = Tracker()
    assert tracker.advance(turn(history(ASK, "ls"))) is None  # the first turn: nothing to compare with
    pending = tracker.advance(turn(history(ASK, "ls", CORRECTION, "ls -lhS")))
    assert pending is not None and pending.shape == "next"
    tracker.advance(turn(history("something else", "ok")))  # the session moves on before the worker runs
    tracker.forget_session("s1")
    got = capture(pending)
    assert got is not None and got.detected
    assert (got.pair.kind, got.pair.rejected, got.pair.accepted) == ("correction", "ls", "ls -lhS")


def test_advance_leaves_nothing_to_do_for_turns_that_cannot_pair():
    tracker = Tracker()
    assert tracker.advance(turn(history(ASK, "ls"))) is None  # nothing to compare with
    assert tracker.advance(turn(history(ASK, "ls", ASK, "ls"))) is None  # the same answer again
    assert tracker.advance(turn(history(ASK, "ls"), platform="cron")) is None
    ack = tracker.advance(turn(history(ASK, "ls", ASK, "ls", "thanks", "glad it helped")))
    assert ack is not None and capture(ack) is None  # the detector's call, made off the turn's thread


def test_the_detector_reads_the_whole_turn_and_the_pair_keeps_its_final_answer():
    """An agent narrates between tool calls; the detector's agent transcripts were cut with that narration."""
    first = history("make the port configurable") + [
        {"role": "assistant", "content": "I've updated config.py to read PORT.", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "2"}]},
        {"role": "tool", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]
    second = first + [
        {"role": "user", "content": "still failing: port 3000 in use"},
        {"role": "assistant", "content": "x"},
    ]
    for tracker in (Tracker(), None):  # a tracker that saw the first turn, and one rebuilt from the history
        if tracker is not None:
            assert tracker.advance(Turn("s", "cli", "make the port configurable", "Done.", first)) is None
        pending = (tracker or Tracker()).advance(Turn("s", "cli", "still failing: port 3000 in use", "x", second))
        assert pending is not None and pending.last.answer == "Done."
        window = detection_window(pending)
        assert window.prev_assistant == "I've updated config.py to read PORT.\n\nDone."
        assert "pa_edited" in features(window)
        captured = capture(pending)
        assert captured is not None and (captured.pair.rejected, captured.pair.kind) == ("Done.", "correction")
        assert window_of(captured).prev_assistant == window.prev_assistant  # stage 2 and its fallback read it too


def test_turn_text_ends_with_the_final_answer_once():
    assert turn_text(["let me look", "  ", "ls"], "ls") == "let me look\n\nls"
    assert turn_text([], "ls") == "ls"
    assert turn_text(["let me look"], "ls") == "let me look\n\nls"


def test_what_stage_two_reads_of_the_whole_turn_is_scrubbed():
    key = "sk-" + "a1B2c3D4e5" * 4
    first = history("deploy it") + [
        {"role": "assistant", "content": f"I've updated .env with OPENAI_API_KEY={key}", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "ok"},
        {"role": "assistant", "content": "Deployed."},
    ]
    second = first + [
        {"role": "user", "content": "no, that is wrong, it still fails"},
        {"role": "assistant", "content": "x"},
    ]
    captured = Tracker().observe(Turn("s", "cli", "no, that is wrong, it still fails", "x", second))
    assert captured is not None and captured.detected
    assert "I've updated .env" in captured.said and key not in captured.said
