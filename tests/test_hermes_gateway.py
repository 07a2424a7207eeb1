"""ichor in Hermes' gateway: a recording platform adapter drives ``GatewayRunner._handle_message``.

The adapter subclasses Hermes' ``BasePlatformAdapter`` and only records ``send``/``edit_message``;
messages go through the adapter's own ``handle_message`` into the real runner (authorisation,
``pre_gateway_dispatch``, slash commands, sessions, the agent turn against the loopback stub).
ichor's claim window reads an injected clock, so "after 120 s" takes no time.
"""

from ichor.testing.hermes_harness import run_scenario

ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"


def ask_and_correct(chat="chat-1", chat_type="dm", card=True):
    return [
        {"text": ASK, "reply": "ls -S", "chat": chat, "chat_type": chat_type, "expect_sent": 1},
        {"text": CORRECTION, "reply": "ls -lhS", "chat": chat, "chat_type": chat_type, "expect_sent": 1 + card},
    ]


def gateway(tmp_path, events, **spec):
    return run_scenario({"kind": "gateway", "events": events, **spec}, tmp_path / "home")


def cards(report):
    return [m for m in report["sent"] if m["text"].startswith("ichor · captured pair")]


def test_card_is_sent_and_k_in_a_dm_is_claimed(tmp_path):
    report = gateway(tmp_path, [*ask_and_correct(), {"text": " K ", "reply": "should never be asked"}])
    correction, claim = report["events"][1], report["events"][2]
    answer, card = correction["sent"]
    assert answer["text"] == "ls -lhS"  # the answer first, then the card about it
    assert card["text"].startswith("ichor · captured pair #1")
    assert CORRECTION in card["text"] and "reply k keep · s share · d discard" in card["text"]
    assert "rejected:\n  ls -S\n" in card["text"] and "accepted:\n  ls -lhS\n" in card["text"]
    assert claim["reached_model"] is False and claim["sent"] == []
    assert report["edits"] == [
        {"chat_id": "chat-1", "message_id": card["message_id"], "text": "ichor · pair #1 kept (private)"}
    ]
    assert [(p["id"], p["status"]) for p in report["pairs"]] == [(1, "kept")]
    assert report["open_cards"] == 0


def test_k_in_a_group_reaches_the_agent(tmp_path):
    report = gateway(
        tmp_path,
        [
            *ask_and_correct(chat="group-1", chat_type="group"),
            {"text": "k", "reply": "ok", "chat": "group-1", "chat_type": "group"},
        ],
    )
    [card] = cards(report)
    # no one-letter replies in groups: the card says what to type
    assert "decide with /ichor keep 1 (train on it, stays on this machine) · share 1" in card["text"]
    assert report["events"][2]["reached_model"] is True
    assert report["edits"] == [] and report["pairs"][0]["status"] == "pending"


def test_k_after_the_window_reaches_the_agent(tmp_path):
    report = gateway(tmp_path, [*ask_and_correct(), {"text": "k", "reply": "ok", "wait": 121}])
    assert len(cards(report)) == 1
    assert report["events"][2]["reached_model"] is True
    assert report["edits"] == [] and report["pairs"][0]["status"] == "pending"


def test_k_with_two_cards_open_reaches_the_agent(tmp_path):
    report = gateway(
        tmp_path,
        [*ask_and_correct("chat-1"), *ask_and_correct("chat-2"), {"text": "k", "reply": "ok", "chat": "chat-2"}],
    )
    assert len(cards(report)) == 2
    assert report["events"][4]["reached_model"] is True
    assert [p["status"] for p in report["pairs"]] == ["pending", "pending"]


def test_other_text_passes_and_discard_falls_back_to_a_new_message(tmp_path):
    report = gateway(
        tmp_path,
        [*ask_and_correct(), {"text": "keep going", "reply": "sure", "wait": 2}, {"text": "d"}],
        can_edit=False,
    )
    assert report["events"][2]["reached_model"] is True  # not a choice word: the agent gets it
    assert report["events"][3]["reached_model"] is False
    assert report["sent"][-1]["text"] == "ichor · pair #1 discarded" and report["edits"] == []
    assert report["pairs"] == []


def test_ichor_command_in_a_chat_pauses_only_that_chat(tmp_path):
    report = gateway(
        tmp_path,
        [{"text": "/ichor off", "expect_sent": 1}, *ask_and_correct("chat-1", card=False), *ask_and_correct("chat-2")],
    )
    assert report["events"][0]["sent"][0]["text"] == "ichor · capture paused in this chat (telegram:chat-1)"
    assert report["events"][0]["reached_model"] is False
    assert [p["user_said"] for p in report["pairs"]] == [CORRECTION]
    assert report["pairs"][0]["platform"] == "telegram" and len(cards(report)) == 1


def test_a_failing_store_never_swallows_the_reply(tmp_path):
    events = [*ask_and_correct(), {"text": "k", "reply": "k to you too", "break_store": True}]
    report = gateway(tmp_path, events)
    assert len(cards(report)) == 1
    claim = report["events"][2]
    assert claim["reached_model"] is True and claim["sent"][-1]["text"] == "k to you too"
    assert any("pre_gateway_dispatch failed" in line for line in report["log"])
    assert report["pairs"][0]["status"] == "pending"


def test_hermes_retry_undo_and_new_commands(tmp_path):
    report = gateway(
        tmp_path,
        [
            {"text": "hi", "reply": "Hello!", "expect_sent": 1},
            {"text": ASK, "reply": "ls", "expect_sent": 1},
            {"text": "/retry", "reply": "ls -la", "expect_sent": 2},
            {"text": "/undo", "expect_sent": 1},
            {"text": "show them biggest first", "reply": "ls -S", "expect_sent": 2},
            {"text": "/new", "expect_sent": 1},
            {"text": "and hidden ones?", "reply": "ls -a", "expect_sent": 1},
        ],
    )
    assert [(p["kind"], p["rejected"], p["accepted"]) for p in report["pairs"]] == [
        ("retry", "ls", "ls -la"),
        ("undo", "ls -la", "ls -S"),
    ]
    assert report["pairs"][1]["user_said"] == "show them biggest first"
    assert report["pairs"][0]["prompt"][-1] == {"role": "user", "content": ASK}
    assert len(cards(report)) == 2  # nothing after /new


def test_ichor_command_settles_the_open_card(tmp_path):
    report = gateway(tmp_path, [*ask_and_correct(), {"text": "/ichor share 1", "expect_sent": 1}])
    assert report["events"][2]["sent"][0]["text"] == "ichor · pair #1 queued to share"
    assert report["edits"][0]["text"] == "ichor · pair #1 queued to share"
    assert report["pairs"][0]["status"] == "shared" and report["open_cards"] == 0
