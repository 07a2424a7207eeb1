"""The data directory under a keep/discard race, and what its bookkeeping costs.

Race: for each run, 60 pending pairs; three processes decide them at once: one keeps each pair, one
shares it, and one discards it the moment a keep has committed it, that is, while the keep is writing
the pair's file (made slower by a 3 ms fsync, as on a busy disk). Every pair ends discarded, so every
file left in the data directory is an orphan: a discarded pair that would be trained on and published.

Cost: median time to open a store of 10,000 pairs (the open sweeps for temp files killed writers left),
and mean time of one ``keep`` (status, file, re-check).

    python -m bench.bench_datadir [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import write_result

PAIRS_PER_RUN = 60

# One racing process: ``verb`` is kept, shared, discard, or chase (discard each pair once a keep committed it).
RACER = """
import os, sys, time
from ichor.store import Store, StoreError
db, verb, ids, start = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split(",")], float(sys.argv[4])
real_fsync = os.fsync
def slow_disk(fd):  # widen the window between a decision and its file, as a busy disk does
    real_fsync(fd)
    time.sleep(0.003)
os.fsync = slow_disk
store = Store(db)
while time.time() < start:
    pass
def decided(pid):
    give_up = time.time() + 2
    while time.time() < give_up and getattr(store.get(pid), "status", None) == "pending":
        pass
for pid in ids:
    try:
        if verb == "chase":
            decided(pid)
        store.discard(pid) if verb in ("discard", "chase") else store.set_status(pid, verb)
    except StoreError:
        pass  # the other process discarded it first
"""


def _new_pair(n: int):
    from ichor.store import NewPair

    return NewPair(
        "correction", "no, use pnpm", [{"role": "user", "content": f"install {n}"}], f"npm {n}", f"pnpm {n}"
    )


def race(db: Path, verbs: tuple[str, ...], pairs: int = PAIRS_PER_RUN) -> int:
    """Run one race; return the files left in the data directory."""
    from ichor.store import Store

    with Store(db) as store:
        ids = ",".join(str(store.add_pair(_new_pair(n)).id) for n in range(pairs))
        folder = store.data_dir
    start = str(time.time() + 1.5)  # every interpreter is up and spinning before the first decision
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(db), verb, ids, start]) for verb in verbs]
    codes = [p.wait(timeout=300) for p in racers]
    if codes != [0] * len(verbs):
        raise SystemExit(f"datadir bench: a racer failed: {codes}")
    return sum(1 for _ in folder.iterdir()) if folder.exists() else 0


def open_and_keep_cost(db: Path, pairs: int = 10_000) -> dict:
    from ichor.store import Store

    with Store(db) as store:
        for n in range(pairs):
            store.add_pair(_new_pair(n))
    opens = []
    for _ in range(20):
        t0 = time.perf_counter()
        Store(db).close()
        opens.append(time.perf_counter() - t0)
    with Store(db) as store:
        ids = [p.id for p in store.iter_pairs(("pending",))][:200]
        t0 = time.perf_counter()
        for pid in ids:
            store.set_status(pid, "kept")
        keep = (time.perf_counter() - t0) / len(ids)
    return {
        "pairs": pairs,
        "open_ms_median": round(statistics.median(opens) * 1000, 2),
        "keep_ms": round(keep * 1000, 2),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ichor-bench-datadir-") as tmp:
        orphans = [race(Path(tmp) / f"race-{n}" / "ichor.db", ("kept", "chase", "shared")) for n in range(args.runs)]
        cost = open_and_keep_cost(Path(tmp) / "cost" / "ichor.db")
    result = {
        "race": {"runs": args.runs, "pairs": args.runs * PAIRS_PER_RUN, "orphan_files": sum(orphans)},
        "cost": cost,
    }
    out = write_result("datadir", result, f"python -m bench.bench_datadir --runs {args.runs}")
    print(
        f"datadir: {result['race']['orphan_files']} orphan files after {result['race']['pairs']} raced pairs; "
        f"open {cost['open_ms_median']} ms at {cost['pairs']} pairs, keep {cost['keep_ms']} ms → {out}"
    )
    return result


if __name__ == "__main__":
    main()
