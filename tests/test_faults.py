"""Fault injection across the plugin's hooks, in a real Hermes Agent loop (see ``ichor.testing.fault_scenarios``).

For each fault: the turn it hits completes with the model's answer, unchanged; ichor logs exactly one
line about it, with no traceback; and once the fault is gone the next correction is captured. A corrupt
database is moved aside byte for byte, never deleted. Plus the store-level cases the loop can't reach.
"""

import errno
import re
import sqlite3

import pytest

from ichor import paths
from ichor import store as store_module
from ichor.store import Store, StoreError
from ichor.testing.fault_scenarios import CORRUPT_BYTES, SEEDED_SESSION, run_fault_scenario
from tests.support import new_pair

ASK = "list the files in this folder, largest first"
TURNS = [
    {"user": ASK, "reply": "ls -S"},
    {"user": "no, make it human readable and sorted by size", "reply": "ls -lhS"},  # the fault hits this turn
    {"user": "no, that is still wrong, it misses hidden files", "reply": "ls -lahS"},  # the fault is gone
]
REPLIES = [t["reply"] for t in TURNS]


def ichor_warnings(lines):
    return [line for line in lines if line.split(" ", 1)[0] in ("WARNING", "ERROR", "CRITICAL") and "ichor" in line]


def assert_one_clear_line(lines, *words):
    [line] = ichor_warnings(lines)
    assert "\n" not in line and "Traceback" not in line
    assert all(w in line for w in words), line
    assert not [ln for ln in lines if "raised" in ln and "hook" in ln.lower()]  # nothing reached Hermes' own handler


def captured_pairs(report):
    """(status, rejected, accepted) of the pairs the scenario's turns captured, leaving out the seeded ones."""
    return [(p["status"], p["rejected"], p["accepted"]) for p in report["pairs"] if p["session_id"] != SEEDED_SESSION]


def test_read_only_home_costs_the_pair_not_the_turn(tmp_path):
    report = run_fault_scenario({"fault": "readonly", "turns": TURNS, "fault_on": [1], "seed": 2}, tmp_path / "home")
    assert report["responses"] == REPLIES
    assert_one_clear_line(report["logs"][1], "post_llm_call")
    assert re.search(r"read-?only", ichor_warnings(report["logs"][1])[0], re.I)
    assert ichor_warnings(report["logs"][2]) == []
    # recovered: the next correction is stored, the pairs kept before the fault are untouched, nothing moved aside
    assert captured_pairs(report) == [("pending", "ls -lhS", "ls -lahS")]
    assert [p["status"] for p in report["pairs"] if p["session_id"] == SEEDED_SESSION] == ["kept", "kept"]
    assert not [f for f in report["files"] if ".corrupt-" in f]


def test_read_only_home_before_ichor_ever_wrote(tmp_path):
    report = run_fault_scenario({"fault": "readonly", "turns": TURNS, "fault_on": [1]}, tmp_path / "home")
    assert report["responses"] == REPLIES
    assert_one_clear_line(report["logs"][1], "Read-only file system")
    assert captured_pairs(report) == [("pending", "ls -lhS", "ls -lahS")]


def test_full_disk_costs_the_pair_not_the_turn(tmp_path):
    report = run_fault_scenario({"fault": "enospc", "turns": TURNS, "fault_on": [1], "seed": 1}, tmp_path / "home")
    assert report["responses"] == REPLIES
    assert_one_clear_line(report["logs"][1], "post_llm_call", "No space left on device")
    assert ichor_warnings(report["logs"][2]) == []
    assert captured_pairs(report) == [("pending", "ls -lhS", "ls -lahS")]
    assert len(report["pairs"]) == 2


def test_corrupt_database_is_moved_aside_and_capture_carries_on(tmp_path):
    report = run_fault_scenario({"fault": "corrupt", "turns": TURNS, "fault_on": [1], "seed": 2}, tmp_path / "home")
    assert report["responses"] == REPLIES
    assert_one_clear_line(report["logs"][1], "unreadable", "moved it to")
    assert ichor_warnings(report["logs"][2]) == []
    # the corrupt file is kept, byte for byte, next to a fresh database holding both new pairs
    [(name, identical)] = report["moved_aside"].items()
    assert name.startswith("ichor.db.corrupt-") and identical
    assert "ichor.db" in report["files"]
    assert [p["rejected"] for p in report["pairs"]] == ["ls -S", "ls -lhS"]
    assert all(p["session_id"] != SEEDED_SESSION for p in report["pairs"])


# ------------------------------------------------------- store-level faults the loop can't reach


def test_sqlite_operational_errors_never_move_a_healthy_database_aside(store, monkeypatch):
    store.set_status(store.add_pair(new_pair(1)).id, "kept")
    store.close()
    before = store.path.read_bytes()

    def disk_full(db):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(store_module, "migrate", disk_full)
        with pytest.raises(StoreError, match="disk is full"):
            Store.open()
    assert sorted(p.name for p in store.path.parent.glob("ichor.db*")) in (
        ["ichor.db"],
        ["ichor.db", "ichor.db-wal", "ichor.db-shm"],
    )
    assert store.path.read_bytes() == before
    with Store.open() as again:
        assert again.counts()["kept"] == 1


def test_a_failed_data_file_write_is_retried_by_sync(store, monkeypatch):
    pair = store.add_pair(new_pair(1))
    real_fsync = store_module.os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_module.os, "fsync", full)
    with pytest.raises(OSError):
        store.set_status(pair.id, "kept")
    monkeypatch.setattr(store_module.os, "fsync", real_fsync)
    assert list(store.data_dir.glob("*.jsonl")) == []
    assert store.sync_data_dir() == 1  # the status landed; its file is written once the disk has room
    assert [p.name for p in store.data_dir.glob("*.jsonl")] == [f"ichor-{pair.uid}.jsonl"]


def test_corrupt_database_is_moved_aside_never_deleted(home):
    with Store.open() as s:
        s.add_pair(new_pair(1))
    db = paths.db_path()
    db.write_bytes(CORRUPT_BYTES)
    with Store.open() as s:
        assert s.counts()["pending"] == 0
    [moved] = [p for p in db.parent.glob("ichor.db.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert moved.read_bytes() == CORRUPT_BYTES
