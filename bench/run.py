"""Run every benchmark, merge the figures into ``bench/results.json`` and regenerate ``docs/benchmarks.md``.

Each ``bench/bench_<name>.py`` runs in its own interpreter (``python -m bench.bench_<name>``); a failing
one is recorded and the rest still run. Sections of ``docs/benchmarks.md`` written by hand stay as they
are when they sit between ``<!-- manual:begin NAME -->`` and ``<!-- manual:end NAME -->``.

    python -m bench.run                 # run all, then write the report (make bench)
    python -m bench.run --only store    # run some, report on all the results there are
    python -m bench.run --report-only   # rewrite the report from bench/results/*.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

from . import BENCH_DIR, RESULTS_DIR, machine, today
from .report import render

REPO = BENCH_DIR.parent
MERGED = BENCH_DIR / "results.json"
DOC = REPO / "docs" / "benchmarks.md"
STATUS = RESULTS_DIR / "_runs.json"
MANUAL = re.compile(r"<!-- manual:begin (?P<name>[\w.-]+) -->.*?<!-- manual:end (?P=name) -->", re.S)


def discover() -> list[str]:
    """Benchmark names, from ``bench/bench_<name>.py``."""
    return sorted(p.stem[len("bench_") :] for p in BENCH_DIR.glob("bench_*.py"))


def run_one(name: str, timeout: float | None) -> dict:
    """Run one benchmark in a subprocess; return how it went, with the tail of its output on failure."""
    cmd = [sys.executable, "-m", f"bench.bench_{name}"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = "timeout", f"{exc.stdout or ''}{exc.stderr or ''}"
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
    seconds = round(time.perf_counter() - t0, 1)
    status = {
        "name": name,
        "command": f"python -m bench.bench_{name}",
        "ok": code == 0,
        "returncode": code,
        "seconds": seconds,
        "date": today(),
    }
    if code != 0:
        lines = [ln for ln in out.strip().splitlines() if ln.strip()]
        status["error"] = lines[-1] if lines else f"exit status {code}"
        status["output_tail"] = "\n".join(lines[-20:])
    return status


def load_results() -> dict[str, dict]:
    results = {}
    for path in sorted(RESULTS_DIR.glob("*.json")):
        if path.name.startswith("_"):
            continue
        try:
            results[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            results[path.stem] = {"error": f"unreadable results file: {exc}"}
    return results


def load_status() -> dict[str, dict]:
    try:
        return json.loads(STATUS.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def previous_merge() -> dict:
    try:
        return json.loads(MERGED.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def manual_sections(text: str) -> list[str]:
    return [m.group(0) for m in MANUAL.finditer(text)]


def write_report(runs: dict[str, dict], ran_any: bool) -> None:
    """Merge the results and render the report. When nothing ran, the date and machine stay those of the
    last run, so rewriting the report from the same figures gives the same report."""
    results = load_results()
    previous = {} if ran_any else previous_merge()
    merged = {
        "generated": previous.get("generated") or today(),
        "machine": previous.get("machine") or machine(),
        "runs": runs,
        "results": results,
    }
    MERGED.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    kept = manual_sections(DOC.read_text(encoding="utf-8")) if DOC.exists() else []
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(render(merged, discover(), kept), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    parser.add_argument("--skip", nargs="+", metavar="NAME", default=[], help="don't run these benchmarks")
    parser.add_argument("--report-only", action="store_true", help="run nothing; rewrite the report")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per benchmark")
    args = parser.parse_args(argv)

    names = discover()
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        print(f"bench: no benchmark named {', '.join(unknown)} (have: {', '.join(names)})", file=sys.stderr)
        return 2
    chosen = [] if args.report_only else [n for n in (args.only or names) if n not in args.skip]
    # The run log is not committed; a fresh checkout takes it from the last merged report.
    logged = {**previous_merge().get("runs", {}), **load_status()}
    runs = {name: run for name, run in logged.items() if name in names}
    for i, name in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] bench_{name} …", flush=True)
        status = run_one(name, args.timeout)
        runs[name] = status
        verdict = "ok" if status["ok"] else f"FAILED ({status['error']})"
        print(f"[{i}/{len(chosen)}] bench_{name} {verdict} in {status['seconds']} s", flush=True)
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        STATUS.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    write_report(runs, ran_any=bool(chosen))
    failed = [n for n in chosen if not runs[n]["ok"]]
    print(
        f"bench: wrote {MERGED.relative_to(REPO)} and {DOC.relative_to(REPO)}"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
