"""Faults in the store reach the user as one line and exit status 2, never a traceback."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ichor import paths
from ichor.store import ReadOnlyStore, Store, StoreError
from tests.support import new_pair

ROOT = Path(__file__).resolve().parent.parent

# Root ignores permission bits, so a read-only mount is simulated as fault_scenarios does: every write
# under the folder fails with EROFS and SQLite opens files there with mode=ro.
READ_ONLY_CLI = """
import sys
from ichor.testing.fault_scenarios import ReadOnly
ReadOnly(sys.argv[1]).on()
from ichor.cli import main
sys.exit(main(sys.argv[2:]))
"""


def cli(home: Path, *args: str, read_only: bool = False) -> subprocess.CompletedProcess:
    argv = (
        [sys.executable, "-c", READ_ONLY_CLI, str(paths.plugin_dir(home))]
        if read_only
        else [sys.executable, "-m", "ichor.cli"]
    )
    return subprocess.run(
        [*argv, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    return line


@pytest.fixture
def filled(home):
    with Store.open() as store:
        for n in range(200):  # enough rows to fill pages past the header
            store.add_pair(new_pair(n, accepted="pnpm install " + "x" * 300 + str(n)))
        store.set_status(1, "kept")
    return home


def test_a_read_only_store_opens_for_reading_and_says_read_only(filled):
    proc = cli(filled, "status", read_only=True)
    assert proc.returncode == 0
    assert "199 pending" in proc.stdout and "1 kept" in proc.stdout
    assert "read-only" in one_line(proc)


def test_a_write_to_a_read_only_store_is_one_line_and_exit_2(filled):
    proc = cli(filled, "keep", "2", read_only=True)
    assert proc.returncode == 2
    assert "read-only" in one_line(proc)
    with Store.open() as store:
        assert store.get(2).status == "pending"


def test_a_read_only_store_refuses_writes_in_the_api(filled):
    with Store(paths.db_path(), read_only=True) as store:
        assert store.counts()["kept"] == 1
        with pytest.raises(ReadOnlyStore, match="read-only"):
            store.discard(1)


def damage_past_the_header(db: Path) -> bytes:
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * page, "the store must span pages past the header"
    for offset in range(3 * page, len(data) - page, 2 * page):
        data[offset : offset + page] = b"\xa5" * page  # whole pages of garbage; page 1 stays intact
    db.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize("command", [["status"], ["review"], ["export"], ["keep", "5"], ["discard", "7"]])
def test_damage_past_the_header_is_moved_aside_in_one_line(filled, command):
    db = paths.db_path()
    damaged = damage_past_the_header(db)
    proc = cli(filled, *command)
    assert "Traceback" not in proc.stderr, proc.stderr
    moved_line, *then = proc.stderr.strip().splitlines()
    assert "damaged" in moved_line and "moved it to" in moved_line and "ichor.db.corrupt-" in moved_line
    # Damage is found by the first statement that reads a bad page: at open (a warning, then the command runs
    # on the fresh store) or in the command itself (its one error line). Either way nothing else is printed
    # but what follows from it: a decision about a pair that went with the damaged file can't be made.
    if len(command) == 1:
        assert then == [] and proc.returncode in (0, 2)
    else:
        assert then in ([], [f"ichor: no pair with id {command[1]}"]) and proc.returncode == 2
    [moved] = [p for p in db.parent.glob("ichor.db.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert moved.read_bytes() == damaged
    with Store.open() as store:
        assert store.counts()["kept"] == 0


def test_damage_past_the_header_is_moved_aside_with_one_line_on_open_or_first_read(filled, caplog):
    db = paths.db_path()
    damage_past_the_header(db)
    with caplog.at_level("WARNING", logger="ichor"), Store.open() as store:
        try:
            store.counts()
            [line] = [r.getMessage() for r in caplog.records]  # found at open: logged once
        except StoreError as exc:
            assert caplog.records == []
            line = str(exc)  # found by the query: raised once
        assert store.counts() == {"pending": 0, "kept": 0, "shared": 0, "uploaded": 0}
    assert "damaged" in line and "moved it to" in line and "\n" not in line


def test_damage_a_later_query_finds_raises_one_line_and_starts_afresh(filled, monkeypatch):
    db = paths.db_path()
    with Store.open() as store:
        damage_past_the_header(db)
        store._db.execute("PRAGMA cache_size = 0")  # no page cache: the next query reads the damaged pages
        store._db.close()
        store._db = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        with pytest.raises(StoreError, match="moved it to") as caught:
            list(store.iter_pairs(("pending", "kept")))
        assert "\n" not in str(caught.value)
        assert store.counts() == {"pending": 0, "kept": 0, "shared": 0, "uploaded": 0}


@pytest.mark.parametrize("verb", ["keep", "share", "discard"])
def test_a_5000_digit_id_is_one_short_line_and_exit_2(home, verb):
    proc = cli(home, verb, "9" * 5000)
    assert proc.returncode == 2
    line = one_line(proc)
    assert "not a pair id" in line and len(line) < 200
