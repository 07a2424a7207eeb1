"""``python -m bench.run``: runs each bench in its own interpreter, survives a failing one, and rewrites
``docs/benchmarks.md`` keeping hand-written sections. Exercised on a scratch copy of the bench folder."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scratch_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    for name in ("__init__.py", "run.py", "report.py", "bench_store.py"):
        shutil.copy(REPO / "bench" / name, root / "bench" / name)
    (root / "bench" / "bench_broken.py").write_text('raise SystemExit("broken on purpose: no peer installed")\n')
    (root / "docs").mkdir()
    (root / "docs" / "benchmarks.md").write_text(
        "# old\n\n<!-- manual:begin gpu -->\n## GPU\n\n412 tokens/s on one H200, bf16\n<!-- manual:end gpu -->\n"
    )
    return root


def run(root: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench.run", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{root}:{REPO}"},
    )


def test_run_reports_failures_keeps_going_and_keeps_manual_sections(tmp_path):
    root = scratch_repo(tmp_path)
    proc = run(root)
    assert proc.returncode == 1, proc.stderr
    assert "[1/2] bench_broken FAILED (broken on purpose: no peer installed)" in proc.stdout
    assert "[2/2] bench_store ok" in proc.stdout
    merged = json.loads((root / "bench" / "results.json").read_text())
    assert merged["runs"]["broken"]["ok"] is False and merged["runs"]["store"]["ok"] is True
    assert merged["results"]["store"]["exact"] is True and merged["machine"]["cores"] >= 1
    doc = (root / "docs" / "benchmarks.md").read_text()
    assert "412 tokens/s on one H200, bf16" in doc and doc.count("<!-- manual:begin gpu -->") == 1
    assert "| Store 8×1,000: exactly 8,000 pairs, no duplicates |" in doc
    assert "_Not run._ (`python -m bench.bench_export`)" in doc
    assert "| bench_broken | failed: broken on purpose: no peer installed |" in doc
    # a second pass, without the uncommitted run log, rewrites the same report: no duplicated manual section,
    # the last run's machine and statuses kept
    (root / "bench" / "results" / "_runs.json").unlink()
    assert run(root, "--report-only").returncode == 0
    assert (root / "docs" / "benchmarks.md").read_text() == doc
    assert json.loads((root / "bench" / "results.json").read_text()) == merged


def test_unknown_benchmark_is_one_line_and_exit_2(tmp_path):
    proc = run(scratch_repo(tmp_path), "--only", "nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["bench: no benchmark named nope (have: broken, store)"]
