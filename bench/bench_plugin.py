"""What ichor adds to a Hermes turn, on the turn's own thread and off it.

1. **The real loop**: one ``run_agent.AIAgent`` (hermes-agent 0.19.0) against a loopback
   OpenAI-compatible stub, with ichor discovered and enabled. Turns alternate between ichor's hooks
   registered and removed, so both sides share the same process, caches and machine noise. The
   conversations mix asks, corrections (which store a pair) and acknowledgements. Reported: the whole
   turn with and without ichor, the time inside ichor's hooks (the turn's thread) for ordinary turns and
   for turns that capture a pair, and how long after the hook returned the pair is stored and its card
   shown (the background worker, and stage 2's confirmation by the loopback model when Hermes offers
   ``ctx.llm``). ichor's background work is drained after each turn, outside the timed turn.
2. **Capture alone**: the tracker's two halves for a typical correction, an ordinary no-pair turn and
   a hostile 50,000-character turn: ``*_turn_thread`` is ``Tracker.advance`` (the bookkeeping the turn
   waits for), ``*_off_thread`` is ``capture`` (detector + scrubber) and the SQLite store write, which run
   on the worker; wall time, and (``*_cpu``) that thread's CPU time.

    python -m bench.bench_plugin [--turns 150] [--capture-turns 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import write_result

REPO = Path(__file__).resolve().parents[1]
ASKS = [
    "list the files in this folder",
    "show disk usage of my home",
    "find python files changed today",
    "count lines in main.py",
    "show the last 20 lines of the log",
]
REPLIES = ["ls", "du -sh ~", "find . -name '*.py' -mtime -1", "wc -l main.py", "tail -n 20 app.log"]


@dataclass
class BenchConfig:
    turns: int = 150  # per side (with and without ichor)
    capture_turns: int = 300
    hostile_chars: int = 50_000


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    if not ordered:
        return {"p50_ms": None, "p99_ms": None, "mean_ms": None, "n": 0}

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return {
        "p50_ms": round(pick(0.50) * 1000, 3),
        "p99_ms": round(pick(0.99) * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
        "n": len(ordered),
    }


def script(i: int) -> tuple[str, str]:
    """Turn ``i`` of a repeating 3-turn conversation: ask, correct, thank."""
    topic, step = (i // 3) % len(ASKS), i % 3
    if step == 0:
        return ASKS[topic], REPLIES[topic]
    if step == 1:
        return "no, make it human readable and sorted by size", REPLIES[topic] + " -h | sort -h"
    return "thanks, perfect", "Glad it helped."


# ------------------------------------------------------------------------------- the real loop


def loop_bench(config: BenchConfig, home: Path) -> dict:
    from ichor.testing.hermes_harness import StubLLM, write_home

    stub = StubLLM()
    write_home(home, stub.base_url, ["ichor"])
    os.environ["HERMES_HOME"] = str(home)
    from hermes_cli.plugins import discover_plugins, get_plugin_manager

    from ichor.testing import hermes_scenarios

    discover_plugins()
    manager = get_plugin_manager()
    plugin = hermes_scenarios._ichor_plugin()
    assert plugin is not None, "ichor's hooks were not registered: is ichor installed with its entry point?"
    spent, hook_done, landed = [0.0], [0.0], []

    def timed(cb):
        def run(**kwargs):
            started = time.perf_counter()
            try:
                return cb(**kwargs)
            finally:
                hook_done[0] = time.perf_counter()
                spent[0] += hook_done[0] - started

        run.__module__ = cb.__module__
        return run

    keep = plugin.keep

    def timed_keep(new_pair):  # wherever it runs: the worker, or stage 2's confirmation thread
        keep(new_pair)
        landed.append(time.perf_counter())

    plugin.keep = timed_keep
    ours = {
        name: [timed(cb) if _is_ichor(cb) else cb for cb in cbs]
        for name, cbs in manager._hooks.items()
        if any(_is_ichor(cb) for cb in cbs)
    }

    def set_ichor(on: bool) -> None:
        for name, cbs in ours.items():
            manager._hooks[name] = list(cbs) if on else [cb for cb in cbs if not _is_ichor(cb)]

    samples: dict[bool, list[float]] = {True: [], False: []}
    hooks: dict[str, list[float]] = {"all": [], "ordinary": [], "capturing": []}
    lands_after: list[float] = []
    agents = {side: hermes_scenarios._agent(stub, "telegram", stream=True) for side in (True, False)}
    history: dict[bool, list] = {True: [], False: []}
    warmup = 6
    try:
        from tqdm import tqdm
    except ImportError:

        def tqdm(x, **_):
            return x

    for i in tqdm(range(2 * (config.turns + warmup)), desc="hermes turns", leave=False):
        n = i // 2
        side = (i % 2 == 0) != (n % 2 == 1)  # which side goes first alternates, so order costs cancel
        user, reply = script(n)
        if n % 30 == 0:
            history[side] = []  # a fresh conversation now and then, so history stays bounded
            if side:  # and the two agents swap sides, so neither side keeps one agent's quirks
                agents[True], agents[False] = agents[False], agents[True]
        set_ichor(side)
        stub.replies.append(reply)
        spent[0], landed_before = 0.0, len(landed)
        started = time.perf_counter()
        result = agents[side].run_conversation(user, conversation_history=history[side])
        elapsed = time.perf_counter() - started
        if side:
            assert plugin.drain(30), "ichor's background work did not finish within 30 s"
        history[side] = result["messages"]
        if n < warmup:
            continue
        samples[side].append(elapsed)
        if side:
            captured = len(landed) > landed_before
            hooks["all"].append(spent[0])
            hooks["capturing" if captured else "ordinary"].append(spent[0])
            if captured:
                lands_after.append(landed[-1] - hook_done[0])
    set_ichor(True)
    stub.close()
    with_ichor, without = percentiles(samples[True]), percentiles(samples[False])
    from ichor.store import Store

    with Store.open(home) as store:
        stored = sum(store.counts().values())
    return {
        "with_ichor": with_ichor,
        "without_ichor": without,
        "added_p50_ms": round(with_ichor["p50_ms"] - without["p50_ms"], 3),
        "added_p99_ms": round(with_ichor["p99_ms"] - without["p99_ms"], 3),
        "ratio_p50": round(with_ichor["p50_ms"] / without["p50_ms"], 4),
        "ichor_hooks_per_turn": percentiles(hooks["all"]),
        "ichor_hooks_ordinary_turn": percentiles(hooks["ordinary"]),
        "ichor_hooks_capturing_turn": percentiles(hooks["capturing"]),
        "pair_lands_after_hook": percentiles(lands_after),
        "pairs_stored": stored,
    }


def _is_ichor(cb) -> bool:
    return getattr(cb, "__module__", "").startswith("ichor")


# ------------------------------------------------------------------------------- capture alone


def hostile_text(chars: int) -> str:
    """Near-misses for every scrubber and detector pattern, repeated: emails, keys, paths, digits."""
    unit = (
        (
            "no, wrong!!! a@b sk-abc /home/ 192.168.1. +1 (555) AKIA ghp_ ==== ---- "
            "eyJhbGciOi. password= 'x' \\\\\\ ````` "
        )
        + "9" * 60
        + " "
        + "a" * 80
        + " "
    )
    return (unit * (chars // len(unit) + 1))[:chars]


def capture_bench(config: BenchConfig, home: Path) -> dict:
    from ichor.capture import Tracker, Turn, capture
    from ichor.store import Store

    store = Store.open(home)

    def measure(first: tuple[str, str], second: tuple[str, str], context: list[dict]) -> dict[str, list]:
        times: dict[str, list] = {"turn_thread": [], "off_thread": [], "off_thread_cpu": []}
        for i in range(config.capture_turns):
            tracker = Tracker()
            base = context + [
                {"role": "user", "content": first[0] + f" #{i}"},
                {"role": "assistant", "content": first[1]},
            ]
            tracker.advance(Turn("s", "telegram", base[-2]["content"], first[1], base))
            full = base + [{"role": "user", "content": second[0]}, {"role": "assistant", "content": second[1]}]
            started = time.perf_counter()
            pending = tracker.advance(Turn("s", "telegram", second[0], second[1], full))
            handed_over, started_cpu = time.perf_counter(), time.thread_time()
            captured = capture(pending) if pending is not None else None
            if captured is not None:
                store.add_pair(captured.pair)
            times["off_thread"].append(time.perf_counter() - handed_over)
            times["off_thread_cpu"].append(time.thread_time() - started_cpu)
            times["turn_thread"].append(handed_over - started)
        return times

    context = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"earlier message {i} " * 20} for i in range(10)
    ]
    answer = "Here is the command:\n\n    ls -la /srv/app\n\n" + "It lists every file with details. " * 12
    better = "Here is the command:\n\n    ls -lhS /srv/app\n\n" + "Sizes are human readable, biggest first. " * 12
    typical = measure(
        ("list the files in /srv/app", answer), ("no, make it human readable and sorted by size", better), context
    )
    ordinary = measure(("list the files in /srv/app", answer), ("thanks, perfect", "Glad it helped."), context)
    hostile = hostile_text(config.hostile_chars)
    rough = measure((hostile, hostile), (hostile, hostile[::-1]), [])
    store.close()
    hostile_key = f"hostile_{config.hostile_chars // 1000}k"
    # Wall time is what a turn feels; CPU time of the capturing thread leaves out time the OS gave to
    # other processes, which dominates p99 on a busy 2-core machine.
    return {
        "typical_correction_turn_thread": percentiles(typical["turn_thread"]),
        "typical_correction_off_thread": percentiles(typical["off_thread"]),
        "no_pair_turn_turn_thread": percentiles(ordinary["turn_thread"]),
        "no_pair_turn_off_thread": percentiles(ordinary["off_thread"]),
        f"{hostile_key}_turn_thread": percentiles(rough["turn_thread"]),
        f"{hostile_key}_off_thread": percentiles(rough["off_thread"]),
        "typical_correction_off_thread_cpu": percentiles(typical["off_thread_cpu"]),
        f"{hostile_key}_off_thread_cpu": percentiles(rough["off_thread_cpu"]),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=BenchConfig.turns, help="Hermes turns per side")
    parser.add_argument("--capture-turns", type=int, default=BenchConfig.capture_turns)
    args = parser.parse_args(argv)
    config = BenchConfig(turns=args.turns, capture_turns=args.capture_turns)
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ICHOR_DATA_DIR"):
        os.environ.pop(key, None)
    with tempfile.TemporaryDirectory(prefix="ichor-bench-plugin-") as tmp:
        capture = capture_bench(config, Path(tmp) / "capture-home")
        loop = loop_bench(config, Path(tmp) / "hermes-home")
    result = {"hermes_agent": _hermes_version(), "turns_per_side": config.turns, "loop": loop, "capture": capture}
    out = write_result("plugin", result, "python -m bench.bench_plugin")
    print(
        f"hermes turn p50 {loop['without_ichor']['p50_ms']} ms without ichor, "
        f"{loop['with_ichor']['p50_ms']} ms with "
        f"(+{loop['added_p50_ms']} ms; p99 +{loop['added_p99_ms']} ms)"
    )
    for name in ("ichor_hooks_per_turn", "ichor_hooks_ordinary_turn", "ichor_hooks_capturing_turn"):
        figures = loop[name]
        print(f"{name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, n {figures['n']}")
    lands = loop["pair_lands_after_hook"]
    print(f"pair stored and card shown after the hook returned: p50 {lands['p50_ms']} ms, p99 {lands['p99_ms']} ms")
    for name, figures in capture.items():
        print(f"capture {name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms")
    print(f"wrote {out}")
    return result


def _hermes_version() -> str:
    from importlib.metadata import version

    return version("hermes-agent")


if __name__ == "__main__":
    main()
