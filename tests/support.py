"""Plain helpers the tests share: store pairs, exported records, a temp copy of the workspace, stage commands,
what the scrubber removes or keeps, and the labelled data beside the checkout (skipping with a reason when it
is absent).

Fixtures live in ``conftest.py``; loopback stubs the tests use live in their own modules here (``hubstub``,
``atropos_stub``); the Hermes harness and the tiny model, which bench and examples use too, live in ``ichor.testing``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ichor.scrub import scrub
from ichor.store import NewPair

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def shared_data(name: str) -> Path:
    """The labelled file ``../shared/data/NAME`` beside the checkout (or in ``$ICHOR_SHARED_DATA``, for a
    checkout that lives elsewhere); skips the test with a one-line reason when it is not there."""
    folder = Path(os.environ.get("ICHOR_SHARED_DATA") or REPO.parent / "shared" / "data")
    path = folder / name
    if not path.is_file():
        pytest.skip(f"needs the labelled data {path} (not part of a plain clone)")
    return path


def new_pair(n: int = 0, **overrides) -> NewPair:
    fields = dict(
        kind="correction",
        user_said="no, use pnpm",
        prompt=[{"role": "user", "content": f"install the dependencies of project {n}"}],
        rejected=f"npm install  # {n}",
        accepted=f"pnpm install  # {n}",
        label="wrong package manager",
        platform="cli",
        session_id="s1",
        scrubbed={},
    )
    fields.update(overrides)
    return NewPair(**fields)


def record(uid: str, prompt: str, rejected: str, accepted: str, **extra) -> dict:
    base = {
        "uid": uid,
        "kind": "correction",
        "label": "wrong package manager",
        "user_said": "no, use pnpm",
        "prompt": [{"role": "user", "content": prompt}],
        "rejected": rejected,
        "accepted": accepted,
        "platform": "cli",
        "scrubbed": {},
        "created_at": "2026-11-30T15:00:00Z",
    }
    base.update(extra)
    return base


def write_pairs(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rec in records:
        (folder / f"ichor-{rec['uid']}.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return folder


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def stage_env() -> dict:
    env = dict(os.environ)
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        HF_HUB_OFFLINE="1",
        DVC_NO_ANALYTICS="1",
        TOKENIZERS_PARALLELISM="false",
        WANDB_MODE="disabled",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@localhost",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@localhost",
    )
    env.pop("ICHOR_DATA_DIR", None)
    return env


def sh(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=stage_env(), capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


def copy_workspace(dest: Path) -> Path:
    """The files `dvc repro` needs, copied into ``dest`` (no models, no caches, no git history)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pipelines", "ichor", "configs", "envs"):
        if (REPO / name).exists():
            shutil.copytree(REPO / name, dest / name, ignore=ignore)
    for name in ("dvc.yaml", "params.yaml", ".dvcignore"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "data" / "sample", dest / "data" / "sample")
    (dest / "data" / "pairs").mkdir(parents=True)
    (dest / "data" / "pairs" / ".gitkeep").touch()
    return dest


def set_params(workspace: Path, **updates) -> None:
    """Set dotted params (``set_params(ws, **{"dpo.steps": 2})``) in the workspace's params.yaml."""
    import yaml

    path = workspace / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    for dotted, value in updates.items():
        node = params
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def gone(text: str, *secrets: str) -> str:
    """The scrubbed text, asserting that none of ``secrets`` is left in it."""
    out = scrub(text).text
    for secret in secrets:
        assert secret not in out, (text, out)
    return out


def kept(text: str) -> None:
    """Assert that the scrubber leaves ``text`` exactly as it is."""
    assert scrub(text).text == text
