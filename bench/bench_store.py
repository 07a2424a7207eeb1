"""Store under concurrency: W processes × N captures each, all into one SQLite file.

Reports throughput (pairs/s) for 8 writer processes next to one writer in the same run, and checks
that exactly W×N pairs come out with no duplicate uid or fingerprint and a clean integrity check.

    python -m bench.bench_store [--writers 8] [--per-writer 1000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sqlite3
import tempfile
import time
from pathlib import Path

from . import write_result


def _new_pair(writer: int, n: int):
    from ichor.store import NewPair

    return NewPair(
        kind="correction",
        user_said="no, use pnpm",
        prompt=[{"role": "user", "content": f"install the dependencies of project {writer}-{n}"}],
        rejected=f"npm install  # {writer}-{n}",
        accepted=f"pnpm install  # {writer}-{n}",
        label="wrong package manager",
        platform="cli",
        session_id=f"writer-{writer}",
        scrubbed={},
    )


def _writer(db_file: str, writer: int, count: int, start, acknowledged) -> None:
    from ichor.store import Store

    pairs = [_new_pair(writer, n) for n in range(count)]
    store = Store(db_file)
    start.wait()
    for pair in pairs:
        store.add_pair(pair)
    store.close()
    acknowledged.put(count)


def run_writers(db_file: Path, writers: int, per_writer: int) -> dict:
    """Start ``writers`` processes, release them together, and time until the last one is done."""
    from ichor.store import Store

    Store(db_file).close()  # create and migrate once, outside the timed part
    ctx = mp.get_context("spawn")
    start, acknowledged = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(db_file), w, per_writer, start, acknowledged)) for w in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every interpreter import and open the store before the clock starts
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    acked = sum(acknowledged.get(timeout=5) for _ in range(writers - len(failed)))
    return {
        "writers": writers,
        "per_writer": per_writer,
        "seconds": round(elapsed, 3),
        "pairs_per_s": round(writers * per_writer / elapsed, 1),
        "failed_writers": len(failed),
        "acknowledged": acked,
        **check(db_file),
    }


def check(db_file: Path) -> dict:
    db = sqlite3.connect(db_file)
    try:
        total, uids, fps = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT uid), COUNT(DISTINCT fingerprint) FROM pairs"
        ).fetchone()
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()
    return {"pairs": total, "distinct_uids": uids, "distinct_fingerprints": fps, "integrity": integrity}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ichor-bench-store-") as tmp:
        single = run_writers(Path(tmp) / "one.db", 1, args.per_writer)
        many = run_writers(Path(tmp) / "many.db", args.writers, args.per_writer)
    expected = args.writers * args.per_writer
    exact = (
        many["pairs"] == many["distinct_uids"] == many["distinct_fingerprints"] == many["acknowledged"] == expected
        and many["integrity"] == "ok"
    )
    result = {
        "single": single,
        "concurrent": many,
        "expected_pairs": expected,
        "exact": exact,
        "throughput_ratio_concurrent_vs_single": round(many["pairs_per_s"] / single["pairs_per_s"], 2),
    }
    out = write_result("store", result, "python -m bench.bench_store")
    print(
        f"store: {args.writers}×{args.per_writer} → {many['pairs']} pairs at {many['pairs_per_s']:.0f}/s "
        f"(1 writer: {single['pairs_per_s']:.0f}/s); exact={exact} → {out}"
    )
    if not exact:
        raise SystemExit(f"store bench: expected exactly {expected} distinct pairs, got {many}")
    return result


if __name__ == "__main__":
    main()
