import json
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ichor import paths
from ichor.migrations import MIGRATIONS
from ichor.store import Store, StoreError, UnknownPair
from tests.support import REPO, new_pair


def table_columns(db, table):
    return [(r[1], r[2], r[3], r[4], r[5]) for r in db.execute(f"PRAGMA table_info({table})")]


def test_migrate_blank_pins_the_schema(store):
    db = sqlite3.connect(store.path)
    assert [r[0] for r in db.execute("SELECT name FROM _ichor_migrations ORDER BY rowid")] == [
        "m001_initial",
        "m002_status_index",
        "m003_upload_ref",
        "m004_data_file_location",
        "m005_detector_ids",
    ]
    assert [fn.__name__ for fn in MIGRATIONS] == [
        "m001_initial",
        "m002_status_index",
        "m003_upload_ref",
        "m004_data_file_location",
        "m005_detector_ids",
    ]
    assert table_columns(db, "pairs") == [
        ("id", "INTEGER", 0, None, 1),
        ("uid", "TEXT", 1, None, 0),
        ("fingerprint", "TEXT", 1, None, 0),
        ("status", "TEXT", 1, "'pending'", 0),
        ("kind", "TEXT", 1, None, 0),
        ("label", "TEXT", 0, None, 0),
        ("user_said", "TEXT", 1, None, 0),
        ("prompt_json", "TEXT", 1, None, 0),
        ("rejected", "TEXT", 1, None, 0),
        ("accepted", "TEXT", 1, None, 0),
        ("platform", "TEXT", 1, "''", 0),
        ("session_id", "TEXT", 1, "''", 0),
        ("scrubbed_json", "TEXT", 1, "'{}'", 0),
        ("created_at", "REAL", 1, None, 0),
        ("updated_at", "REAL", 1, None, 0),
        ("upload_ref", "TEXT", 0, None, 0),
        ("data_dir", "TEXT", 0, None, 0),
        ("detector_ids", "TEXT", 0, None, 0),
    ]
    assert table_columns(db, "forgotten") == [("uid", "TEXT", 0, None, 1), ("forgotten_at", "REAL", 1, None, 0)]
    assert table_columns(db, "data_dirs") == [("path", "TEXT", 0, None, 1)]
    assert table_columns(db, "settings") == [("key", "TEXT", 0, None, 1), ("value", "TEXT", 1, None, 0)]
    indexes = {r[1] for r in db.execute("PRAGMA index_list(pairs)")}
    assert "pairs_status_id" in indexes
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopening_applies_no_migration_twice(home):
    Store.open().close()
    Store.open().close()
    db = sqlite3.connect(paths.db_path())
    assert db.execute("SELECT COUNT(*) FROM _ichor_migrations").fetchone()[0] == len(MIGRATIONS)


def test_a_store_from_before_detector_ids_keeps_its_pairs_and_exports_no_ids(home, tmp_path):
    import dataclasses

    from ichor import migrations

    older = [fn for fn in MIGRATIONS if fn.__name__ != "m005_detector_ids"]
    path = paths.db_path()
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path, isolation_level=None)
    migrations.MIGRATIONS, kept = older, migrations.MIGRATIONS
    try:
        migrations.migrate(db)
    finally:
        migrations.MIGRATIONS = kept
    db.execute(
        "INSERT INTO pairs (uid, fingerprint, kind, user_said, prompt_json, rejected, accepted, created_at, "
        "updated_at) VALUES ('u1', 'f1', 'correction', 'no, use pnpm', '[]', 'npm i', 'pnpm i', 1, 1)"
    )
    db.close()
    with Store.open() as store:
        [old] = store.iter_pairs(("pending",))
        assert (old.user_said, store.detector_ids(old.id)) == ("no, use pnpm", None)
        new = store.add_pair(dataclasses.replace(new_pair(1), detector_ids={"reply": [7, 9]}))
        assert store.detector_ids(new.id) == {"reply": [7, 9]}
        assert "detector_ids" not in json.dumps(store.get(new.id).to_record())


def test_store_lives_in_the_profile_and_is_private(store, home):
    assert store.path == home / "plugin-data" / "ichor" / "ichor.db"
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.path.parent).st_mode) == 0o700


def test_profile_is_read_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "a"))
    first = paths.db_path()
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "b"))
    assert paths.db_path() != first
    assert paths.db_path(tmp_path / "c") == tmp_path / "c" / "plugin-data" / "ichor" / "ichor.db"


def test_a_new_pair_is_pending_and_round_trips(store):
    pair = store.add_pair(new_pair(1, scrubbed={"email": 1}))
    assert pair.status == "pending"
    again = store.get(pair.id)
    assert again.prompt == [{"role": "user", "content": "install the dependencies of project 1"}]
    assert (again.rejected, again.accepted, again.scrubbed) == ("npm install  # 1", "pnpm install  # 1", {"email": 1})
    assert store.oldest_pending().id == pair.id


def test_the_same_pair_twice_is_stored_once(store):
    a = store.add_pair(new_pair(1))
    b = store.add_pair(new_pair(1))
    assert a.id == b.id and store.counts()["pending"] == 1


def test_unknown_kind_and_status_are_refused(store):
    with pytest.raises(StoreError):
        store.add_pair(new_pair(1, kind="sideways"))
    pair = store.add_pair(new_pair(1))
    with pytest.raises(StoreError):
        store.set_status(pair.id, "lost")
    with pytest.raises(UnknownPair):
        store.set_status(999, "kept")
    with pytest.raises(UnknownPair):
        store.discard(999)


def test_kept_pairs_are_mirrored_once_into_the_data_dir(store, tmp_path, monkeypatch):
    data = tmp_path / "pairs"
    monkeypatch.setenv("ICHOR_DATA_DIR", str(data))
    pair = store.add_pair(new_pair(1))
    assert not list(data.glob("*.jsonl")) if data.exists() else True
    store.set_status(pair.id, "kept")
    store.set_status(pair.id, "shared")
    files = list(data.glob("ichor-*.jsonl"))
    assert [f.name for f in files] == [f"ichor-{pair.uid}.jsonl"]
    lines = files[0].read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["accepted"] == "pnpm install  # 1" and "session_id" not in record
    assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
    store.set_status(pair.id, "pending")
    assert not list(data.glob("ichor-*.jsonl"))


def test_data_dir_follows_env_then_setting_then_default(store, tmp_path, monkeypatch):
    assert store.data_dir == store.path.parent / "pairs"
    store.set_setting("data_dir", str(tmp_path / "from-setting"))
    assert store.data_dir == tmp_path / "from-setting"
    monkeypatch.setenv("ICHOR_DATA_DIR", str(tmp_path / "from-env"))
    assert store.data_dir == tmp_path / "from-env"


def test_discard_deletes_the_text_everywhere(store):
    pair = store.add_pair(new_pair(1))
    store.set_status(pair.id, "kept")
    store.discard(pair.id)
    assert store.get(pair.id) is None
    assert not store.data_file(pair.uid).exists()
    db = sqlite3.connect(store.path)
    assert db.execute("SELECT COUNT(*) FROM pairs WHERE accepted LIKE '%pnpm%'").fetchone()[0] == 0


def test_forget_all_deletes_every_pair_and_keeps_settings(store):
    for n in range(3):
        store.set_status(store.add_pair(new_pair(n)).id, "kept")
    store.set_setting("repo", "mine")
    assert store.forget_all() == 3
    assert sum(store.counts().values()) == 0
    assert not list(store.data_dir.glob("ichor-*.jsonl"))
    assert store.get_setting("repo") == "mine"


def test_sync_rewrites_missing_data_files_and_never_deletes_others(store):
    pair = store.set_status(store.add_pair(new_pair(1)).id, "kept")
    store.data_file(pair.uid).unlink()
    foreign = store.data_dir / "ichor-0123abc.jsonl"
    foreign.write_text("{}\n")
    assert store.sync_data_dir() == 1
    assert store.data_file(pair.uid).exists() and foreign.exists()


def test_counts_and_top_labels(store):
    for n in range(3):
        store.add_pair(new_pair(n))
    store.add_pair(new_pair(9, label="missing option"))
    store.set_status(1, "kept")
    assert store.counts() == {"pending": 3, "kept": 1, "shared": 0, "uploaded": 0}
    assert store.top_labels() == [("wrong package manager", 3), ("missing option", 1)]


def test_mark_uploaded_only_moves_shared_pairs(store):
    a = store.add_pair(new_pair(1))
    b = store.add_pair(new_pair(2))
    store.set_status(a.id, "shared")
    assert store.mark_uploaded([a.id, b.id], "commit-1") == 1
    assert store.get(a.id).status == "uploaded" and store.get(a.id).upload_ref == "commit-1"
    assert store.get(b.id).status == "pending"


def test_iter_pairs_streams_in_batches(store):
    ids = [store.set_status(store.add_pair(new_pair(n)).id, "kept").id for n in range(7)]
    assert [p.id for p in store.iter_pairs(batch=3)] == ids


def test_a_corrupt_database_is_moved_aside_not_deleted(home):
    db_file = paths.db_path()
    paths.ensure_private_dir(db_file.parent)
    db_file.write_bytes(b"this is not a database" * 100)
    store = Store.open()
    assert store.counts()["pending"] == 0
    moved = list(db_file.parent.glob("ichor.db.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_bytes().startswith(b"this is not a database")
    store.close()


def test_threads_share_one_store(store):
    def write(t):
        for n in range(50):
            store.add_pair(new_pair(t * 1000 + n))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.counts()["pending"] == 200


# Run with ``python -c`` from the repository root, so ``tests`` imports as a package.
WRITER = textwrap.dedent("""
    import sys
    from tests.support import new_pair
    from ichor.store import Store
    store = Store(sys.argv[1])
    worker, count = int(sys.argv[2]), int(sys.argv[3])
    for n in range(count):
        pair = store.add_pair(new_pair(worker * 100000 + n))
        print(pair.uid, flush=True)
""")


def _start_writer(db, worker: int, count: int) -> subprocess.Popen:
    args = [sys.executable, "-c", WRITER, str(db), str(worker), str(count)]
    return subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)


def test_eight_writer_processes_lose_and_duplicate_nothing(tmp_path):
    db = tmp_path / "ichor.db"
    Store(db).close()
    procs = [_start_writer(db, w, 60) for w in range(8)]
    acknowledged = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        acknowledged += out.split()
    with Store(db) as store:
        assert store.counts()["pending"] == 480
        uids = [r[0] for r in sqlite3.connect(db).execute("SELECT uid FROM pairs")]
    assert sorted(uids) == sorted(acknowledged) and len(set(uids)) == 480


def test_a_writer_killed_mid_write_leaves_a_sound_database(tmp_path):
    db = tmp_path / "ichor.db"
    Store(db).close()
    rng = random.Random(7)
    acknowledged = []
    for round_ in range(3):
        proc = _start_writer(db, round_, 100000)
        first = proc.stdout.readline()  # the writer is running and has committed at least once
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate()
        acknowledged += (first + rest).split()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = [r[0] for r in conn.execute("SELECT uid FROM pairs")]
    assert len(stored) == len(set(stored))
    assert set(acknowledged) <= set(stored)


def test_a_lone_surrogate_is_stored_as_a_replacement_character(store):
    pair = store.add_pair(new_pair(1, user_said="no\ud800", accepted="pnpm\udfff install"))
    again = store.get(pair.id)
    assert (again.user_said, again.accepted) == ("no\ufffd", "pnpm\ufffd install")
    store.set_status(pair.id, "kept")
    assert "\ufffd" in store.data_file(pair.uid).read_text(encoding="utf-8")


def test_a_failed_data_file_write_leaves_no_copy_behind(store, monkeypatch):
    pair = store.add_pair(new_pair(1))

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ichor.store.os.fsync", full_disk)
    with pytest.raises(OSError):
        store.set_status(pair.id, "kept")
    assert list(store.data_dir.iterdir()) == []
