"""`dvc repro` on a temp copy of the workspace with a tiny model: what reruns when data or a param changes,
and `dvc exp run -S`. The `rl` and `publish` stages belong to other suites, so these stop at `evaluate`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ichor.testing.tiny_model import build_tiny_model
from tests.support import copy_workspace, record, set_params, sh, write_pairs

UPSTREAM = ["audit", "export", "base_model", "train", "evaluate"]


def ran(proc) -> list[str]:
    return re.findall(r"Running stage '([\w-]+)'", proc.stdout)


def dvc(ws: Path, *args: str):
    return sh(["dvc", *args], ws)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dvcws")
    model = build_tiny_model(root / "tiny")
    ws = copy_workspace(root / "ws")
    set_params(ws, **{"model.path": str(model), "dpo.steps": 2, "dpo.batch_size": 2, "dpo.max_length": 256})
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
    assert json.loads((ws / "metrics" / "train.json").read_text())["steps"] == 2
    assert set(json.loads((ws / "metrics" / "eval.json").read_text())) == {"n_eval_pairs", "before", "after"}
    assert ran(dvc(ws, "repro", "evaluate")) == []

    # A new kept pair in the data dir: everything from audit on, the base model stays.
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
    assert ran(second) == ["audit", "export", "train", "evaluate"]
    audit = json.loads((ws / "metrics" / "audit.json").read_text())
    assert audit["source"] == "pairs" and audit["pairs_out"] == 1
    n_eval = json.loads((ws / "metrics" / "export.json").read_text())["eval"]
    assert json.loads((ws / "metrics" / "eval.json").read_text())["n_eval_pairs"] == n_eval

    # lora.r only reaches train and what depends on it.
    set_params(ws, **{"lora.r": 4})
    status = dvc(ws, "status", "--with-deps", "evaluate").stdout
    assert "train:" in status and "lora" in status
    assert "audit:" not in status and "export:" not in status and "base_model:" not in status
    third = dvc(ws, "repro", "evaluate")
    assert ran(third) == ["train", "evaluate"]
    assert json.loads((ws / "models" / "adapter" / "adapter_config.json").read_text())["r"] == 4
    lock = (ws / "dvc.lock").read_text()
    assert re.search(r"lora:\n(?:\s+.*\n)*?\s+r: 4", lock)


@pytest.mark.slow
def test_dvc_exp_run_sets_a_param_and_reruns_training(workspace):
    ws = workspace
    dvc(ws, "repro", "evaluate")
    sh(["git", "add", "-A"], ws)
    sh(["git", "commit", "-qm", "baseline", "--allow-empty"], ws)
    exp = dvc(ws, "exp", "run", "-S", "dpo.beta=0.2", "evaluate")
    assert ran(exp) == ["train", "evaluate"]
    assert "beta: 0.2" in (ws / "params.yaml").read_text()
    shown = json.loads(dvc(ws, "exp", "show", "--json").stdout)
    assert "0.2" in json.dumps(shown)
