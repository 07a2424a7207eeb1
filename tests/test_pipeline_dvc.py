"""`dvc repro` on a temp copy of the workspace with a tiny model: what reruns when data or a param changes,
and `dvc exp run -S`. The `publish` stage belongs to other suites, so these stop at `evaluate`, which needs `rl`."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from ichor.testing.tiny_model import build_tiny_model
from tests.support import REPO, copy_workspace, record, set_params, sh, write_pairs

UPSTREAM = ["audit", "export", "base_model", "train", "rl", "evaluate"]


def ran(proc) -> list[str]:
    return re.findall(r"Running stage '([\w-]+)'", proc.stdout)


def dvc(ws: Path, *args: str):
    return sh(["dvc", *args], ws)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dvcws")
    model = build_tiny_model(root / "tiny")
    ws = copy_workspace(root / "ws")
    small = {"dpo.num_train_epochs": 1, "dpo.per_device_train_batch_size": 8, "dpo.max_length": 256}
    small.update({"eval.generate_prompts": 2, "eval.max_new_tokens": 4, "lora.r": 8})
    small.update({"grpo.max_steps": 1, "grpo.num_generations": 2, "grpo.per_device_train_batch_size": 2})
    small.update({"grpo.max_completion_length": 4, "rl.eval_prompts": 2})
    set_params(ws, **{"model.path": str(model), **small})
    sh(["git", "init", "-q"], ws)
    dvc(ws, "init", "-q")
    sh(["git", "add", "-A"], ws)
    sh(["git", "commit", "-qm", "workspace"], ws)
    return ws


@pytest.mark.slow
def test_repro_runs_everything_then_reruns_only_what_changed(workspace):
    ws = workspace
    first = dvc(ws, "repro", "evaluate")
    assert ran(first) == UPSTREAM
    assert json.loads((ws / "metrics" / "audit.json").read_text())["source"] == "sample"
    assert json.loads((ws / "metrics" / "train.json").read_text())["epochs"] == 1
    assert {"n_test_pairs", "base", "dpo"} <= set(json.loads((ws / "metrics" / "eval.json").read_text()))
    assert ran(dvc(ws, "repro", "evaluate")) == []

    # A new kept pair in the data dir, trained on with the samples: everything from audit on, not the base model.
    set_params(ws, **{"data.include_samples": "always"})
    write_pairs(
        ws / "data" / "pairs",
        [
            record(
                "f00d",
                "Install the project's dependencies; it has a pnpm lockfile.",
                "npm install",
                "pnpm install --frozen-lockfile",
            )
        ],
    )
    status = dvc(ws, "status", "--with-deps", "evaluate").stdout
    assert "audit:" in status and "base_model:" not in status
    second = dvc(ws, "repro", "evaluate")
    assert ran(second) == ["audit", "export", "train", "rl", "evaluate"]
    audit = json.loads((ws / "metrics" / "audit.json").read_text())
    assert audit["source"] == "pairs+sample" and audit["pairs_out"] == audit["pairs_in"]
    n_eval = json.loads((ws / "metrics" / "export.json").read_text())["eval"]
    result = json.loads((ws / "metrics" / "eval.json").read_text())
    assert result["n_test_pairs"] == n_eval - result["fit"]["dropped_too_long"]

    # lora.r only reaches train and what depends on it (rl continues the DPO adapter; evaluate scores both).
    set_params(ws, **{"lora.r": 4})
    status = dvc(ws, "status", "--with-deps", "evaluate").stdout
    assert "train:" in status and "lora" in status
    assert "audit:" not in status and "export:" not in status and "base_model:" not in status
    third = dvc(ws, "repro", "evaluate")
    assert ran(third) == ["train", "rl", "evaluate"]
    assert json.loads((ws / "models" / "dpo" / "adapter_config.json").read_text())["r"] == 4
    lock = (ws / "dvc.lock").read_text()
    assert re.search(r"lora:\n(?:\s+.*\n)*?\s+r: 4", lock)


@pytest.mark.slow
def test_dvc_exp_run_sets_a_param_and_reruns_training(workspace):
    ws = workspace
    dvc(ws, "repro", "evaluate")
    sh(["git", "add", "-A"], ws)
    sh(["git", "commit", "-qm", "baseline", "--allow-empty"], ws)
    exp = dvc(ws, "exp", "run", "-S", "dpo.beta=0.2", "evaluate")
    assert ran(exp) == ["train", "rl", "evaluate"]
    assert "beta: 0.2" in (ws / "params.yaml").read_text()
    shown = json.loads(dvc(ws, "exp", "show", "--json").stdout)
    assert "0.2" in json.dumps(shown)


def test_dvc_add_versions_the_pairs_and_audit_records_that_version(tmp_path):
    ws = copy_workspace(tmp_path / "ws")
    (ws / "data" / "pairs" / ".gitkeep").unlink()
    shutil.copy2(REPO / ".gitignore", ws / ".gitignore")
    sh(["git", "init", "-q"], ws)
    dvc(ws, "init", "-q")
    sh(["git", "add", "-A"], ws)
    sh(["git", "commit", "-qm", "workspace"], ws)
    write_pairs(ws / "data" / "pairs", [record("f00d", "Install the deps.", "npm install", "pnpm install")])
    dvc(ws, "add", "data/pairs")
    version = yaml.safe_load((ws / "data" / "pairs.dvc").read_text())["outs"][0]["md5"]
    args = ["--pairs", "data/pairs", "--samples", "data/sample", "--out", "a.jsonl", "--metrics", "audit.json"]
    sh([sys.executable, "-m", "pipelines.audit", *args], ws)
    assert json.loads((ws / "audit.json").read_text())["data_version"] == version
