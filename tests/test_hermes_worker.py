"""The plugin's background worker: the turn's thread only tracks turns; capture, store and card follow on it."""

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ichor.hermes import IchorPlugin
from ichor.hermes.worker import Worker
from ichor.store import STATUSES, Store

ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"


def correct(plugin, session="s1", ask=ASK, wrong="ls -S", right="ls -lhS", platform="telegram"):
    """One ask and its correction through the plugin's hook, as Hermes calls it."""
    first = [{"role": "user", "content": ask}, {"role": "assistant", "content": wrong}]
    plugin.post_llm_call(session, ask, wrong, first, platform)
    second = first + [{"role": "user", "content": CORRECTION}, {"role": "assistant", "content": right}]
    plugin.post_llm_call(session, CORRECTION, right, second, platform)


def pairs(home):
    with Store.open(home) as store:
        return list(store.iter_pairs(STATUSES))


@pytest.fixture
def gate():
    """An event the worker waits on: while it is clear, every job queued behind it waits."""
    event = threading.Event()
    yield event
    event.set()


def hold(refits, gate) -> None:
    """Keep the refit thread busy until ``gate`` is set (a job submitted before it started would replace it)."""
    started = threading.Event()
    refits.submit(lambda: started.set() or gate.wait())
    assert started.wait(30)


def test_the_hook_returns_before_the_pair_exists_and_drain_lands_it(home, gate):
    plugin = IchorPlugin(ctx=object())
    plugin.worker.submit(gate.wait)
    correct(plugin)
    assert pairs(home) == []  # both hooks came back while the worker was held: nothing was stored on them
    gate.set()
    assert plugin.drain(30)
    [pair] = pairs(home)
    assert (pair.kind, pair.rejected, pair.accepted, pair.status) == ("correction", "ls -S", "ls -lhS", "pending")


def keep_by_command(plugin) -> None:
    assert "kept" in plugin.command("keep 1")


def keep_by_card_reply(plugin) -> None:
    from types import SimpleNamespace

    from ichor.hermes.cards import OpenCard

    plugin.board.open(OpenCard(1, "telegram", "chat-1", "dm", "m1", plugin.board.clock()))
    source = SimpleNamespace(platform="telegram", chat_id="chat-1", chat_type="dm", thread_id=None)
    claimed = plugin.pre_gateway_dispatch(event=SimpleNamespace(text="k", source=source), gateway=SimpleNamespace())
    assert claimed["action"] == "skip"


@pytest.mark.parametrize("keep", [keep_by_command, keep_by_card_reply])
def test_a_decision_leaves_the_refit_to_its_own_thread(home, gate, monkeypatch, keep):
    from ichor import detect_refit

    refits = []
    monkeypatch.setattr(detect_refit, "maybe_refit", lambda store: refits.append(threading.current_thread().name))
    plugin = IchorPlugin(ctx=object())
    correct(plugin)
    assert plugin.drain(30)
    hold(plugin.refits, gate)
    keep(plugin)
    assert [p.status for p in pairs(home)] == ["kept"]
    assert refits == []  # the decision had its answer while the refit thread was held: the refit waits there
    with Store.open(home) as store:
        assert len(detect_refit.load_decisions(store)) == 1  # the decision itself is recorded at once
    gate.set()
    assert plugin.drain(30) and refits == ["ichor-refit"]


def test_the_refit_thread_keeps_only_the_latest_job_and_never_holds_the_exit(gate):
    from ichor.hermes.worker import Coalescing

    ran = []
    refits = Coalescing("ichor-refit")
    hold(refits, gate)
    [thread] = [t for t in threading.enumerate() if t.name == "ichor-refit"]
    assert thread.daemon  # leaving the process never waits for a refit
    for n in range(3):
        refits.submit(lambda n=n: ran.append(n))  # each replaces the one still waiting
    assert refits.drain(0.05) is False
    gate.set()
    assert refits.drain(30) and ran == [2]


def test_captures_never_wait_behind_a_refit(home, gate):
    plugin = IchorPlugin(ctx=object())
    hold(plugin.refits, gate)  # a refit that takes as long as it takes
    correct(plugin)
    assert plugin.worker.drain(30)
    assert len(pairs(home)) == 1


def test_drain_says_when_the_worker_has_not_caught_up(home, gate):
    plugin = IchorPlugin(ctx=object())
    plugin.worker.submit(gate.wait)
    assert plugin.drain(0.05) is False
    gate.set()
    assert plugin.drain(30) is True


def test_pairs_are_stored_in_the_order_of_their_turns(home):
    plugin = IchorPlugin(ctx=object())
    wrong = [f"ls -S dir{i}" for i in range(6)]
    for i, answer in enumerate(wrong):
        correct(plugin, session=f"s{i % 2}", ask=f"{ASK} in dir{i}", wrong=answer, right=f"ls -lhS dir{i}")
    assert plugin.drain(30)
    assert [p.rejected for p in sorted(pairs(home), key=lambda p: p.id)] == wrong


def test_a_worker_far_behind_drops_new_turns_with_one_log_line_each(caplog, gate):
    worker = Worker(max_waiting=2)
    done, running = [], threading.Event()

    def hold():
        running.set()
        gate.wait()

    assert worker.submit(hold) and running.wait(30)  # running, no longer waiting
    assert worker.submit(lambda: done.append(1)) and worker.submit(lambda: done.append(2))
    with caplog.at_level(logging.WARNING, logger="hermes_plugins.ichor"):
        assert worker.submit(lambda: done.append(3)) is False
    [line] = [r.getMessage() for r in caplog.records]
    assert "2 turns wait for capture" in line and "not captured" in line
    gate.set()
    assert worker.drain(30)
    assert done == [1, 2]
    assert worker.submit(lambda: done.append(4)) and worker.drain(30) and done == [1, 2, 4]  # caught up again


def test_a_failure_on_the_worker_is_one_log_line_and_never_reaches_the_hook(home, caplog, monkeypatch):
    import ichor.hermes

    def broken(*args, **kwargs):
        raise RuntimeError("injected capture failure")

    monkeypatch.setattr(ichor.hermes, "capture", broken)
    plugin = IchorPlugin(ctx=object())
    with caplog.at_level(logging.WARNING, logger="hermes_plugins.ichor"):
        correct(plugin)  # raises nothing
        assert plugin.drain(30)
    [line] = [r.getMessage() for r in caplog.records]
    assert "capture_turn failed, Hermes carries on without it" in line and "injected capture failure" in line
    assert pairs(home) == []


EXITS_WITH_WORK_QUEUED = """
import threading
from ichor.hermes import IchorPlugin

plugin = IchorPlugin(ctx=object())
# Hold the worker until the interpreter starts to exit, so only the exit can wait for the captures. Threading's
# exit hooks run first thing at shutdown, before concurrent.futures joins its workers (its own hook, older).
exiting = threading.Event()
threading._register_atexit(exiting.set)
plugin.worker.submit(exiting.wait)
first = [{"role": "user", "content": ASK}, {"role": "assistant", "content": "ls -S"}]
plugin.post_llm_call("s1", ASK, "ls -S", first, "telegram")
second = first + [{"role": "user", "content": CORRECTION}, {"role": "assistant", "content": "ls -lhS"}]
plugin.post_llm_call("s1", CORRECTION, "ls -lhS", second, "telegram")
print("main thread done")
"""


def test_a_normal_exit_waits_for_what_was_captured(home):
    root = Path(__file__).resolve().parents[1]
    code = f"ASK, CORRECTION = {ASK!r}, {CORRECTION!r}\n" + EXITS_WITH_WORK_QUEUED
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "main thread done" in proc.stdout, proc.stderr[-3000:]
    [pair] = pairs(home)
    assert (pair.kind, pair.rejected, pair.accepted) == ("correction", "ls -S", "ls -lhS")
