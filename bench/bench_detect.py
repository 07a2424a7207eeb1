"""Per-call cost of ``ichor.detect.detect`` (stage 1): typical turns against 50,000-character hostile text.

Typical turns are generated here (short requests, corrections and pasted errors next to 1-2 kB answers)
and, when ``../shared/data/corrections-dev.jsonl`` exists, the dev set's real windows too. Hostile
inputs are built to stall naive regexes. Each case is timed call by call, in one run, side by side:
with the reply known (the Hermes hook), without it, and, when the ``embed`` extra is installed, the
cost of the MiniLM embeddings the embedding experiment adds per window (off the turn's thread).

    python -m bench.bench_detect [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from ichor.detect import detect
from ichor.detect_rules import clear_caches

from . import write_result

# The labelled windows, when this checkout sits beside ../shared (they are never copied into the repo).
DEV_SET = Path(__file__).resolve().parents[2] / "shared/data/corrections-dev.jsonl"
ANSWER = (
    "I updated `src/app/config_loader.py` so `load_settings()` reads the TOML file.\n```python\n"
    + "def load_settings(path):\n    return tomllib.loads(Path(path).read_text())\n" * 12
    + "```\n"
)
USERS = [
    "add a --verbose flag to the cli",
    "no, use pnpm instead of npm",
    "it still fails with the same error",
    "thanks, perfect",
    'Traceback (most recent call last):\n  File "src/app/config_loader.py", line 4, in load_settings\n'
    "NameError: name 'tomllib' is not defined",
    "can you explain how the cache invalidation works here? I'd like to understand it before we move on.",
    "make the config loader read toml",
]
HOSTILE = {
    "a*50000": "a" * 50000,
    "'no '*20000": "no " * 20000,
    "punctuation": "!?.,;:-_()[]{}" * 3600,
    "nested brackets": "([{<" * 12500,
    "huge traceback": (
        "Traceback (most recent call last):\n" + '  File "pkg/mod_a.py", line 12, in run_a\n'
        "    value = helper_b(x)\nValueError: bad at pkg/mod_a.py:12:3\n" * 500
    )[:50000],
    "identifiers": "self.some_attr.other_attr " * 2000,
    "cjk": "仍然错误没有生效" * 6250,
    "cyrillic": "всё ещё ошибка, не работает " * 1790,
}


@dataclass
class DetectBenchConfig:
    repeat: int = 200
    seed: int = 0
    data: Path = DEV_SET


def _typical(rng: random.Random, data: Path = DEV_SET) -> list[tuple[str, str, str, str]]:
    turns = [("make the config loader read toml", ANSWER, u, ANSWER.replace("updated", "changed")) for u in USERS]
    if data.is_file():
        rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
        turns += [(r["prev_user"], r["prev_assistant"], r["user"], r["assistant"]) for r in rows]
    rng.shuffle(turns)
    return turns


def _time(fn, calls: list[tuple], repeat: int) -> dict:
    samples = []
    for _ in range(repeat):
        for args in calls:
            clear_caches()  # a real turn is new text: no cached rule hits
            start = time.perf_counter()
            fn(*args)
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 4),
        "p99_ms": round(samples[min(len(samples) - 1, int(0.99 * len(samples)))], 4),
        "max_ms": round(samples[-1], 4),
        "n": len(samples),
    }


def _no_reply(prev_user, prev_assistant, user, _assistant):
    return detect(prev_user, prev_assistant, user)


def _embed_cost(calls: list[tuple]) -> dict | None:
    try:
        from ichor.embed import MiniLMEmbedder

        embedder = MiniLMEmbedder.load()
    except (ImportError, FileNotFoundError):
        return None

    def stage1_and_embed(*texts):
        detect(*texts)
        embedder.cache.clear()  # every window's texts are new in real use
        for text in texts:
            embedder.embed((text or " ")[:2000])

    return _time(stage1_and_embed, calls, 1)


def run(cfg: DetectBenchConfig) -> dict:
    rng = random.Random(cfg.seed)
    typical = _typical(rng, cfg.data)
    detect(*typical[0])  # load the weights once, outside the timings
    reps = max(1, cfg.repeat // 10)
    cases = {
        "typical turns": _time(detect, typical, max(1, cfg.repeat // 20)),
        "typical turns, reply unknown": _time(_no_reply, typical, max(1, cfg.repeat // 20)),
    }
    embed = _embed_cost(typical[:10])
    if embed:
        cases["typical turns, + MiniLM embeddings of 4 texts"] = embed
    for name, text in HOSTILE.items():
        # distinct texts on each side, so no gate (unchanged answer, identical re-send) cuts the work short
        cases[f"hostile {name} (user)"] = _time(detect, [("fix it", ANSWER, text, "Here is the fix.")], reps)
        cases[f"hostile {name} (all four)"] = _time(detect, [("x " + text, text, text, "y " + text)], reps)
    hostile_max = max(c["max_ms"] for k, c in cases.items() if k.startswith("hostile"))
    timed = cases["typical turns"]
    return {
        "cases": cases,
        "typical_turns": len(typical),
        "dev_set_included": cfg.data.is_file(),
        "typical_p50_ms": timed["p50_ms"],
        "typical_p99_ms": timed["p99_ms"],
        "hostile_max_ms": hostile_max,
        "hostile_max_over_typical_p50": round(hostile_max / timed["p50_ms"], 1) if timed["p50_ms"] else None,
        "targets_met": {
            "typical_p50_under_2ms": timed["p50_ms"] < 2.0,
            "typical_p99_under_10ms": timed["p99_ms"] < 10.0,
            "hostile_under_50ms": hostile_max < 50.0,
        },
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_detect", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=DetectBenchConfig.repeat, help="timing rounds (default 200)")
    parser.add_argument("--data", type=Path, default=DEV_SET, help="labelled windows to time as typical turns")
    args = parser.parse_args(argv)
    result = run(DetectBenchConfig(repeat=args.repeat, data=args.data))
    out = write_result("detect", result, "python -m bench.bench_detect")
    for name, c in result["cases"].items():
        print(f"{name:<36} p50 {c['p50_ms']:8.3f} ms   p99 {c['p99_ms']:8.3f} ms   max {c['max_ms']:8.3f} ms")
    print(f"targets: {result['targets_met']}  -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
