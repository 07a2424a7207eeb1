"""Export at scale: ``load_records`` from a data dir streamed into ``write_export``, on 1k, 10k and 100k pairs.

Each size runs in its own interpreter so peak memory is that size's alone. Reported per size: time per
pair, peak RSS growth over the interpreter's baseline, and tracemalloc's peak of Python allocations.
Flat time per pair and flat memory (ratios 100k/1k near 1) mean the export streams instead of loading
everything.

    python -m bench.bench_export [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from . import write_result

SHARD = 1000  # records per generated .jsonl file; the store writes one per pair, load_records reads both
WORDS = (
    "install",
    "the",
    "dependencies",
    "with",
    "pnpm",
    "not",
    "npm",
    "please",
    "run",
    "tests",
    "again",
    "deploy",
    "branch",
    "config",
    "yaml",
    "python",
    "rust",
    "function",
    "error",
    "fix",
)


def _text(rng_state: int, words: int) -> str:
    return " ".join(WORDS[(rng_state * 7 + i * 13) % len(WORDS)] for i in range(words))


def record(n: int) -> dict:
    """A realistic record (about 1 KB): a two-turn prompt and two answers of a few sentences."""
    return {
        "uid": f"{n:032x}",
        "kind": ("correction", "retry", "undo")[n % 3],
        "label": f"label {n % 17}",
        "user_said": "no, use pnpm",
        "platform": "cli",
        "scrubbed": {"path": n % 2},
        "prompt": [
            {"role": "user", "content": f"task {n}: " + _text(n, 30)},
            {"role": "assistant", "content": _text(n + 1, 40)},
            {"role": "user", "content": _text(n + 2, 12)},
        ],
        "rejected": _text(n + 3, 50),
        "accepted": "You're right. " + _text(n + 4, 50),
        "created_at": "2026-11-30T15:00:00Z",
    }


def generate(data_dir: Path, count: int) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for start in range(0, count, SHARD):
        with open(data_dir / f"ichor-shard-{start // SHARD:05d}.jsonl", "w", encoding="utf-8") as fh:
            for n in range(start, min(start + SHARD, count)):
                fh.write(json.dumps(record(n), ensure_ascii=False) + "\n")


def measure(data_dir: Path, out_dir: Path) -> dict:
    """Run in a fresh interpreter: time one plain export, then trace one for Python peak memory."""
    from ichor.export import ExportConfig, load_records, write_export

    config = ExportConfig(strip_acknowledgement=True)
    rss_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    counts = write_export(load_records(data_dir), out_dir / "plain", config)
    seconds = time.perf_counter() - t0
    rss_after_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    write_export(load_records(data_dir), out_dir / "traced", config)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "pairs": counts["pairs"],
        "seconds": round(seconds, 4),
        "us_per_pair": round(seconds / counts["pairs"] * 1e6, 2),
        "rss_growth_mb": round((rss_after_kb - rss_before_kb) / 1024, 2),
        "peak_rss_mb": round(rss_after_kb / 1024, 1),
        "tracemalloc_peak_mb": round(peak / 2**20, 3),
        "output_mb": round(sum(p.stat().st_size for p in (out_dir / "plain").rglob("*.jsonl")) / 2**20, 1),
    }


def run_size(size: int, tmp: Path) -> dict:
    data_dir, out_dir = tmp / f"data-{size}", tmp / f"out-{size}"
    generate(data_dir, size)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_export", "--measure", str(data_dir), str(out_dir)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--measure", nargs=2, metavar=("DATA_DIR", "OUT_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(Path(args.measure[0]), Path(args.measure[1]))))
        return {}
    sizes = {}
    with tempfile.TemporaryDirectory(prefix="ichor-bench-export-") as tmp:
        for size in args.sizes:
            sizes[str(size)] = run_size(size, Path(tmp))
            s = sizes[str(size)]
            print(
                f"export {size:>7} pairs: {s['us_per_pair']:.1f} µs/pair, peak Python heap "
                f"{s['tracemalloc_peak_mb']:.2f} MB, RSS growth {s['rss_growth_mb']:.1f} MB",
                flush=True,
            )
    small, large = sizes[str(min(args.sizes))], sizes[str(max(args.sizes))]
    result = {
        "sizes": sizes,
        "layout": f"{SHARD} records per .jsonl file",
        "strip_acknowledgement": True,
        "time_per_pair_ratio_largest_vs_smallest": round(large["us_per_pair"] / small["us_per_pair"], 2),
        "heap_peak_ratio_largest_vs_smallest": round(large["tracemalloc_peak_mb"] / small["tracemalloc_peak_mb"], 2),
        "size_ratio": max(args.sizes) // min(args.sizes),
    }
    out = write_result("export", result, "python -m bench.bench_export")
    print(
        f"export: per-pair time ratio {result['time_per_pair_ratio_largest_vs_smallest']}×, heap peak ratio "
        f"{result['heap_peak_ratio_largest_vs_smallest']}× for {result['size_ratio']}× the pairs → {out}"
    )
    return result


if __name__ == "__main__":
    main()
