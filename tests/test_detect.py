import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ichor import detect as D
from ichor.detect import MAX_CHARS, Detection, detect, mistake_label

CODE_ANSWER = (
    "I updated `parser.py` so that `load_config()` reads the TOML file.\n```python\ndef load_config(): ...\n```"
)
NEW_ANSWER = "Here is the change you asked for."


def kind(user, prev_user="make the config loader read toml", prev_assistant=CODE_ANSWER, assistant=NEW_ANSWER):
    return detect(prev_user, prev_assistant, user, assistant)


# ------------------------------------------------------------------------------ corrections


def test_rejecting_openers_are_corrections():
    for user in (
        "no, I wanted it in yaml",
        "wrong, the port is 8080",
        "actually the limit is 50 not 20",
        "not what I asked for",
        "you forgot the tests",
        "I said tabs, not spaces",
        "that's the wrong file",
    ):
        got = kind(user)
        assert got.kind == "correction", user
        assert "opener" in got.layers


def test_still_failing_reports_are_corrections():
    for user in ("it still fails on startup", "nothing changed after that", "the build doesn't work now"):
        got = kind(user)
        assert got.kind == "correction", user
        assert "still" in got.layers


def test_short_redirects_are_corrections():
    for user in ("use pnpm instead of npm", "please revert that change", "don't use regex here"):
        got = kind(user)
        assert got.kind == "correction", user
        assert "redirect" in got.layers


def test_pasted_error_naming_the_changed_code_is_a_correction():
    user = 'Traceback (most recent call last):\n  File "parser.py", line 3, in load_config\nNameError: toml'
    got = kind(user)
    assert got.kind == "correction"
    assert "failure" in got.layers


def test_assistant_admitting_a_mistake_marks_a_correction():
    got = kind("the header is gone from the page", assistant="You're right, I removed the header by mistake.")
    assert got.kind == "correction"
    assert "ack" in got.layers


def test_failure_reported_in_words_after_an_edit_is_a_correction():
    for user in (
        "I get this error when I start it: KeyError 'port'",
        "an error pops up as soon as I launch the app",
        "now I have: cannot find module toml",
        "it hangs at the loading step",
        "there's an error in parser.py on startup",
        "ça plante au démarrage",
    ):
        got = kind(user)
        assert got.kind == "correction", user
        assert "failure" in got.layers, user


def test_error_the_assistant_asked_for_is_not_a_pair():
    asked = CODE_ANSWER + "\nIf it still fails, please paste the full error output here."
    got = kind("I get this error: KeyError 'port' in main", prev_assistant=asked)
    assert "failure" not in got.layers
    assert got.kind == "none"


def test_error_after_an_answer_without_edits_is_not_a_failure_report():
    got = kind("I get an error when I start the server", prev_assistant="You could try another port.")
    assert "failure" not in got.layers
    assert got.kind == "none"


def test_complaints_without_an_opener_are_corrections():
    for user in (
        "it should only show the active tab",
        "rewrite the loader so that it does not read the env file",
        "are you sure? the docs say the default is 30",
        "move the logo a bit more to the left",
        "list ALL the endpoints please",
        "please use SEARCH/REPLACE blocks for that",
        "请直接修改文件",
        "但是按钮仍然不显示",
        "the toolbar no longer shows up",
    ):
        got = kind(user)
        assert got.kind == "correction", user
        assert {"complaint", "still"} & set(got.layers), user


def test_new_requests_with_should_or_caps_are_not_pairs():
    for user in (
        "add a settings page; there should be a save button at the bottom",
        "create a new endpoint for the user list",
        "thanks! now add a dark mode toggle",
        "Add an API for orders that returns JSON",
    ):
        assert kind(user).kind == "none", user


def test_positive_has_a_short_label():
    got = kind("it still fails on startup")
    assert got.label == "still failing"
    assert 2 <= len(got.label.split()) <= 4


# ----------------------------------------------------------------------------------- retries


def test_identical_resend_is_a_retry_whitespace_and_case_aside():
    got = detect(
        "Fix the login bug", "Try clearing the cache.", "  fix the   LOGIN bug \n", "Let me check the session code."
    )
    assert got.kind == "retry"
    assert got.label == "identical re-send"
    assert got.is_correction


def test_close_rephrasing_is_a_retry():
    got = detect(
        "show the user list in the table on the admin page",
        "I added a table component.",
        "show the user list from the api in the admin page table",
        "I wired the API call into the table.",
    )
    assert got.kind == "retry"


def test_request_reworded_from_the_same_words_is_a_retry():
    for prev, user in (
        ("list the orders of the current customer in the sidebar", "show current customer orders in the sidebar list"),
        ("make the export button download a csv file", "the export button should download csv file"),
    ):
        got = detect(prev, "I added an export helper.", user, "Let me wire the button.")
        assert got.kind == "retry", user
        assert "reworded" in got.layers, user


def test_reworded_rule_skips_questions_and_new_requests():
    prev = "list the orders of the current customer in the sidebar"
    # a question about the same thing is a question, not a re-send
    got = detect(prev, "I added the list.", "how are the customer orders sorted in the sidebar?", "By date.")
    assert "reworded" not in got.layers
    # a follow-up that brings new words is a new request
    got = detect(prev, "I added the list.", "add paging and a search box above the order list", "Sure.")
    assert "reworded" not in got.layers
    assert got.kind == "none"


LONG_SPEC = (
    "Rewrite the invoice exporter so that totals are rounded to cents, the currency code comes from the "
    "customer record, the header row names every column, dates use the ISO format, the file name carries "
    "the invoice number and the exporter never writes an empty trailing line."
)
EDIT_OF_SPEC = (
    "I updated `exporter.py`: totals are rounded to cents, the currency code comes from the customer record, the "
    "header row names every column, dates use the ISO format and the file name carries the invoice number.\n"
    "```python\ndef export(invoice): ...\n```"
)


def test_long_block_restating_the_last_edit_is_a_correction():
    user = (
        "Please redo exporter.py. Totals must be rounded to cents, the currency code must come from the customer "
        "record, the header row must name every column, dates must use the ISO format, the file name must carry "
        "the invoice number, and the exporter must never write an empty trailing line."
    )
    got = detect(LONG_SPEC, EDIT_OF_SPEC, user, "I'll fix the exporter.")
    assert got.kind == "correction"
    assert "restated" in got.layers


def test_long_new_block_or_restatement_without_an_edit_is_not_restated():
    new_block = (
        "Next, build a reminder mailer: every Monday it collects overdue accounts, groups them by sales region, "
        "renders one summary email per region manager with links to each account page, retries failed "
        "deliveries twice and logs delivery results into the audit table for later review."
    )
    got = detect(LONG_SPEC, EDIT_OF_SPEC, new_block, "Sure, here is the mailer.")
    assert "restated" not in got.layers
    assert got.kind == "none"
    # the same restatement after a plain-text answer (nothing was edited) is not judged by this rule
    got = detect(
        LONG_SPEC, "Rounding to cents is a good idea; the ISO format is common.", LONG_SPEC + " Thanks.", "Ok."
    )
    assert "restated" not in got.layers


def test_claim_echoed_back_as_a_question_is_a_dispute():
    got = detect(
        "which planet should I look for tonight?",
        "Look for Venus, the largest planet, low in the west after sunset.",
        "Venus is the largest planet? I thought that was Jupiter.",
        "You are right, Jupiter is the largest.",
    )
    assert got.kind == "correction"
    assert "dispute" in got.layers


def test_ordinary_questions_are_not_disputes():
    prev = "Look for Venus, the largest planet, low in the west after sunset."
    for user in (
        "is Venus visible without a telescope?",
        "what time does the sun set tonight?",
        "the moon is full tonight?",
    ):
        got = detect("which planet should I look for tonight?", prev, user, "Yes.")
        assert "dispute" not in got.layers, user


# --------------------------------------------------------------------------------- non-pairs


def test_bare_answer_to_the_assistants_question_is_not_a_pair():
    for user in ("no", "yes", "y", "No, I don't think so."):
        got = detect("book me a table", "Found one at 7pm. Would you like me to book it?", user, "Okay.")
        assert got.kind == "none", user
        assert got.label is None


def test_thanks_and_praise_are_not_pairs():
    for user in ("thanks, perfect", "great, thank you!", "works now, thanks"):
        assert kind(user).kind == "none", user


def test_continue_is_not_a_pair():
    for user in ("continue", "please continue", "go on"):
        assert kind(user).kind == "none", user


def test_new_request_building_on_a_good_answer_is_not_a_pair():
    got = kind("now add a --verbose flag to the cli", assistant="I'll add the flag to the argument parser.")
    assert got.kind == "none"
    assert not got.is_correction


def test_unchanged_answer_is_not_a_pair():
    got = detect("fix the bug", "Restart the server.", "no, that is wrong", "  restart the   server. ")
    assert got.kind == "none"
    assert got.layers == ("gate",)


def test_repeated_continue_is_not_a_retry():
    assert detect("continue", "Step 2 done.", "continue", "Step 3 done.").kind == "none"


# ------------------------------------------------------------------------------ robustness


def test_inputs_are_cut_to_max_chars():
    assert D.Window.of("", "", "x" * (MAX_CHARS + 500), "").user == "x" * MAX_CHARS
    # a rejection beyond the cut is invisible to the detector
    got = detect("fix it", "Done.", "a" * MAX_CHARS + " no, that is wrong", "ok")
    assert got.kind == "none"


def test_none_and_non_strings_do_not_raise():
    got = detect(None, None, None, None)
    assert got == Detection("none", None, 0.0, ("gate",))
    assert detect(1, 2.5, ["no"], {"a": 1}).kind in D.KINDS


HOSTILE = {
    "a": "a" * 50000,
    "no": "no " * 20000,
    "punct": "!?.,;:" * 9000,
    "nested": "((((" * 12500,
    "trace": ("Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\nValueError: at a:1\n' * 800)[
        :50000
    ],
    "idents": "a_b.c " * 10000,
    "cjk": "仍然错误" * 12500,
}


# Speed is measured in bench/bench_detect.py; here the generous timeout only catches runaway backtracking.
@pytest.mark.timeout(120)
def test_hostile_text_is_classified_without_error():
    for name, text in HOSTILE.items():
        for args in ((text, text, text, text), ("", "", text, ""), (text, "", text, "ok")):
            assert "error" not in detect(*args).layers, name


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300), st.text(max_size=300), st.text(max_size=300))
def test_detect_never_raises(pu, pa, u, a):
    got = detect(pu, pa, u, a)
    assert got.kind in D.KINDS
    assert got.is_correction == (got.kind != "none")
    assert (got.label is None) == (got.kind == "none")
    assert 0.0 <= got.score <= 1.0


def test_detect_does_not_rely_on_its_error_fallback():
    # the fallback hides bugs: ordinary and odd inputs must go through the real layers
    for args in (("", "", "no", ""), ("a", "b", "c", "d"), ("x", "y", "\x00\ud800", "z")):
        assert "error" not in detect(*args).layers


def test_mistake_label_uses_the_users_words():
    assert mistake_label("you used the wrong package manager", "") == "wrong package manager"
    assert mistake_label("you forgot the import", "") == "missing import"
    assert mistake_label("ModuleNotFoundError: No module named 'yaml'", "") == "missing module"
    assert mistake_label("hmm", "") == "rejected answer"
    for text in ("still broken", "nothing changed", "use X instead of Y", "", None):
        assert 2 <= len(mistake_label(text, None).split()) <= 4


def test_shipped_weights_load_and_carry_a_threshold():
    model = D.load_model()
    assert model["weights"], "ichor/data/detector.json is missing or empty"
    assert 0.0 < model["threshold"] <= 1.0
    on_disk = json.loads((Path(D.__file__).parent / "data" / "detector.json").read_text(encoding="utf-8"))
    assert on_disk["weights"] == model["weights"]


@pytest.mark.parametrize(
    "user, label",
    [
        ("no, use pnpm", "wrong package manager"),
        ("use yarn instead of npm here", "wrong package manager"),
        ("no, write it in rust instead", "wrong language"),
        ("use python 3.12 please", "wrong version"),
        ("add the --force flag", "missing option"),
        ("no, make it human readable and sorted by size", "wanted human readable"),
        ("you forgot the reverse flag", "missing reverse flag"),
    ],
)
def test_labels_name_the_kind_of_mistake_from_the_users_words(user, label):
    assert mistake_label(user, "") == label
