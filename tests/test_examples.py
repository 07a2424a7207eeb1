"""The examples are documentation that runs: each one is run here as a user would run it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ichor.export import ExportConfig, load_records, write_export
from ichor.testing.tiny_model import build_tiny_model

ROOT = Path(__file__).resolve().parents[1]


def run_example(name, *args):
    return subprocess.run(
        [sys.executable, "-m", f"examples.{Path(name).stem}", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def export_samples(tmp_path):
    write_export(load_records(ROOT / "data" / "sample"), tmp_path / "export", ExportConfig())
    return tmp_path / "export"


def test_load_with_trl_accepts_the_export(tmp_path):
    done = run_example("load_with_trl.py", export_samples(tmp_path) / "dpo.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_train_one_step_runs_dpo_and_prints_the_losses(tmp_path):
    model = build_tiny_model(tmp_path / "tiny")
    done = run_example(
        "train_one_step.py", export_samples(tmp_path) / "dpo_train.jsonl", "--model", model, "--steps", 2
    )
    assert done.returncode == 0, done.stderr
    losses = re.search(r"ran 2 step\(s\) on \d+ pairs\. losses: \[([^\]]+)\]", done.stdout)
    assert losses and len(losses.group(1).split(",")) == 2


def test_train_one_step_names_a_missing_model(tmp_path):
    done = run_example(
        "train_one_step.py", export_samples(tmp_path) / "dpo_train.jsonl", "--model", tmp_path / "nowhere"
    )
    assert done.returncode == 2 and "no base model" in done.stderr and "Traceback" not in done.stderr


def test_atropos_smoke_ranks_accepted_over_unrelated_over_rejected():
    done = run_example("atropos_smoke.py")
    assert done.returncode == 0, done.stderr
    scores = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^(accepted|rejected|unrelated)\s+([+-]\d+\.\d+)", done.stdout, re.M)
    }
    assert set(scores) == {"accepted", "rejected", "unrelated"}
    assert scores["accepted"] > scores["unrelated"] > scores["rejected"]
