"""Benchmarks. Each ``bench/bench_<name>.py`` runs as ``python -m bench.<name>`` and writes its figures
to ``bench/results/<name>.json``; ``python -m bench.run`` (``make bench``) runs them all and writes
``bench/results.json`` and ``docs/benchmarks.md``."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"


def machine() -> dict:
    """Where a figure was measured: cores and CPU model (from /proc/cpuinfo when there is one)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version(), "os": platform.system()}


def today() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def write_result(name: str, data: dict, command: str | None = None) -> Path:
    """Write ``bench/results/<name>.json`` with the machine, the date and the reproducing command."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    body = {
        "bench": name,
        "command": command or f"python -m bench.bench_{name}",
        "machine": machine(),
        "date": today(),
        **data,
    }
    out.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    return out
