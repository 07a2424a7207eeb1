"""Exports are written as private files and never through a symbolic link someone planted."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ichor import commands
from tests.support import new_pair

ROOT = Path(__file__).resolve().parent.parent


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.fixture
def kept(store):
    for n in range(3):
        store.set_status(store.add_pair(new_pair(n)).id, "kept")
    return store


@pytest.mark.parametrize("name", ["dpo.jsonl", "dpo_train.jsonl", "atropos/pairs.jsonl", "atropos_env/pairs.jsonl"])
def test_a_symlink_planted_in_the_export_folder_is_not_followed(kept, tmp_path, name):
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    planted = out / name
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        commands.export(kept, str(out))
    assert victim.read_text() == "untouched"


def test_a_planted_atropos_env_folder_link_is_not_followed(kept, tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "atropos_env").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        commands.export(kept, str(out))
    assert list(elsewhere.iterdir()) == []


def test_every_export_file_holding_pairs_is_0600_even_over_a_loose_old_file(kept, tmp_path):
    out = tmp_path / "out"
    (out / "atropos_env").mkdir(parents=True)
    loose = out / "atropos_env" / "pairs.jsonl"
    loose.write_text("old")
    os.chmod(loose, 0o644)
    commands.export(kept, str(out))
    for name in ("dpo.jsonl", "dpo_train.jsonl", "dpo_eval.jsonl", "atropos/pairs.jsonl", "atropos_env/pairs.jsonl"):
        assert mode(out / name) == 0o600, name


def test_the_cli_refuses_a_planted_link_in_one_line(kept, tmp_path, home):
    out = tmp_path / "out"
    out.mkdir()
    (out / "dpo.jsonl").symlink_to(tmp_path / "victim.txt")
    proc = subprocess.run(
        [sys.executable, "-m", "ichor.cli", "export", "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "symbolic link" in line and "Traceback" not in proc.stderr
    assert not (tmp_path / "victim.txt").exists()
