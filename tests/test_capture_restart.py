"""A correction still pairs with the answer it corrects when the process restarted in between.

Both tests restart for real: ``hermes chat -q`` then ``hermes chat -r SESSION -q`` are two processes of
Hermes' own CLI, and the gateway test runs the answer and the correction in two fresh gateway
processes sharing one ``HERMES_HOME``. Only Hermes' stored history connects the two turns.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ichor import settings
from ichor.store import STATUSES, Store
from ichor.testing.hermes_harness import SCRUBBED_ENV, StubLLM, run_scenario, write_home

ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"
HERMES = Path(sys.executable).parent / "hermes"
REPO = Path(__file__).resolve().parents[1]


def stored_pairs(home: Path) -> list[tuple[str, str, str, str]]:
    with Store.open(home) as store:
        return [(p.kind, p.rejected, p.accepted, p.user_said) for p in store.iter_pairs(STATUSES)]


def hermes_chat(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(HERMES_HOME=str(home), NO_COLOR="1", PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    return subprocess.run(
        [str(HERMES), "chat", "-Q", *args],
        env=env,
        cwd=str(home.parent),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_resumed_cli_session_pairs_the_correction(tmp_path):
    if not HERMES.exists():
        pytest.skip(f"the hermes command is not installed beside {sys.executable}")
    stub = StubLLM()
    try:
        home = write_home(tmp_path / "home", stub.base_url)
        with Store.open(home) as store:
            # A one-shot process exits before a background confirmation by the host's model returns;
            # this test is about the history across processes, so the detector decides alone.
            settings.put(store, "confirm", "off")
        stub.replies.append("ls -S")
        first = hermes_chat(home, "-q", ASK)
        assert first.returncode == 0, first.stderr[-2000:]
        session = re.search(r"session_id: (\S+)", first.stdout + first.stderr)
        assert session, first.stderr[-2000:]
        assert stored_pairs(home) == []
        stub.replies.append("ls -lhS")
        second = hermes_chat(home, "-r", session.group(1), "-q", CORRECTION)
    finally:
        stub.close()
    assert second.returncode == 0, second.stderr[-2000:]
    assert "ls -lhS" in second.stdout
    assert stored_pairs(home) == [("correction", "ls -S", "ls -lhS", CORRECTION)]
    assert "ichor · captured pair #1" in second.stdout and "/ichor keep 1" in second.stdout


def test_a_gateway_restart_between_answer_and_correction_keeps_the_pair(tmp_path):
    home = tmp_path / "home"
    answer = run_scenario({"kind": "gateway", "events": [{"text": ASK, "reply": "ls -S", "expect_sent": 1}]}, home)
    assert answer["sent"][-1]["text"] == "ls -S" and answer["pairs"] == []
    corrected = run_scenario(
        {"kind": "gateway", "events": [{"text": CORRECTION, "reply": "ls -lhS", "expect_sent": 2}]}, home
    )
    assert [(p["kind"], p["rejected"], p["accepted"]) for p in corrected["pairs"]] == [
        ("correction", "ls -S", "ls -lhS")
    ]
    texts = [m["text"] for m in corrected["sent"]]
    assert texts[-2:][0] == "ls -lhS" and texts[-1].startswith("ichor · captured pair #1"), texts
