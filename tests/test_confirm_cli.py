"""``ichor detect --llm`` and ``ichor eval --llm`` against an OpenAI-compatible stub on 127.0.0.1.

The CLI runs as a subprocess, as a user runs it, so what reaches stdout and stderr is what they see.
The stub answers each window's confirmation by a phrase of that window's new message.
"""

import json
import subprocess
import sys

import pytest

from ichor.testing.hermes_harness import StubLLM

ASK = "list the files in this folder, largest first"
CONFIRMED = json.dumps({"is_correction": True, "kind": "correction", "label": "ignored human readable"})
REJECTED = json.dumps({"is_correction": False, "kind": "none", "label": None})


def window(wid, user, gold="none"):
    return {
        "id": wid,
        "prev_user": ASK,
        "prev_assistant": "ls -S",
        "user": user,
        "assistant": "ls -lhS",
        "kind": gold,
        "is_correction": gold != "none",
    }


# Each new message is one the local detector takes as a candidate ("no, ..." opens a rejection); those stage 2
# fails on are clear enough for stage 1's standalone point, whose decision then stands.
WINDOWS = [
    window("confirmed", "no, make it human readable", "correction"),
    window("rejected", "no, not that one, show hidden files too"),
    window("garbage", "no, that is wrong, sort by date", "correction"),
    window("error", "no, that is wrong, sort by name", "correction"),
    window("timeout", "no, that is wrong, use du instead", "correction"),
    window("plain", "thanks, perfect"),
]


@pytest.fixture
def stub():
    server = StubLLM()
    server.reply_when.update(
        {"human readable": CONFIRMED, "hidden files": REJECTED, "sort by date": "Looks like a correction to me."}
    )
    server.fail_when.append("sort by name")
    server.delay_when["du instead"] = 5.0
    yield server
    server.close()


def ichor(*argv, stdin="", env=None):
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ichor.cli", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def lines(windows):
    return "".join(json.dumps(w) + "\n" for w in windows)


def test_detect_with_llm_confirms_rejects_and_falls_back(stub):
    proc = ichor("detect", "--llm", stub.base_url, "--model", "judge", "--timeout", "1.5", stdin=lines(WINDOWS))
    assert proc.returncode == 0, proc.stderr
    got = {o["id"]: o for o in map(json.loads, proc.stdout.splitlines())}
    assert got["confirmed"] == {
        "id": "confirmed",
        "is_correction": True,
        "kind": "correction",
        "label": "ignored human readable",
        "stage": 2,
    }
    assert (got["rejected"]["is_correction"], got["rejected"]["stage"]) == (False, 2)
    for wid in ("garbage", "error", "timeout"):  # stage 1's standalone decision stands
        assert (got[wid]["is_correction"], got[wid]["stage"]) == (True, 1), wid
    assert (got["plain"]["is_correction"], got["plain"]["stage"]) == (False, 1)
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 3 and all("stage 1 decides" in w for w in warnings), proc.stderr
    assert [w for w in warnings if "not the JSON" in w] and [w for w in warnings if "error" in w]
    assert [w for w in warnings if "timeout" in w]
    assert len(stub.requests) == 5  # one call per candidate, none for the acknowledgement
    assert all(r["model"] == "judge" and r["temperature"] == 0 for r in stub.requests)


def test_detect_with_llm_sends_the_key_from_the_named_variable_only(stub):
    proc = ichor(
        "detect", "--llm", stub.base_url, "--model", "judge", "--key-env", "JUDGE_KEY",
        stdin=lines(WINDOWS[:1]), env={"JUDGE_KEY": "sk-secret-123"},
    )  # fmt: skip
    assert proc.returncode == 0 and json.loads(proc.stdout)["stage"] == 2
    assert stub.auth == ["Bearer sk-secret-123"]
    assert "sk-secret-123" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--llm", "http://127.0.0.1:9/v1"], "--llm needs --model NAME"),
        (["--llm", "http://127.0.0.1:9/v1", "--model", "m", "--key-env", "ICHOR_TEST_UNSET"], "ICHOR_TEST_UNSET"),
    ],
)
def test_detect_with_llm_refuses_bad_options_in_one_line(argv, message):
    proc = ichor("detect", *argv, stdin=lines(WINDOWS[:1]))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr


def test_eval_with_llm_reports_both_stages_and_the_cost(stub, tmp_path):
    data = tmp_path / "windows.jsonl"
    data.write_text(lines(WINDOWS))
    proc = ichor("eval", str(data), "--llm", stub.base_url, "--model", "judge", "--timeout", "1.5", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    alone, both = report["stage1"]["overall"], report["stage1+2"]["overall"]
    assert (alone["tp"], alone["fp"]) == (4, 1)  # every "no, ..." is a candidate, and standalone says yes
    assert (both["tp"], both["fp"], both["fn"]) == (4, 0, 0)  # the model rejected the false alarm
    assert (report["reached_stage2"]["k"], report["reached_stage2"]["n"]) == (5, 6)
    assert report["fallbacks"] == {"error": 1, "garbage": 1, "timeout": 1}
    assert report["tokens_per_confirmation"] == 15 and report["tokens_estimated"] is False  # the stub's usage
    text = ichor("eval", str(data), "--llm", stub.base_url, "--model", "judge", "--timeout", "1.5").stdout
    assert "stage 1 + 2" in text and "reached stage 2: 0.833" in text and "tokens per confirmation: 15" in text
