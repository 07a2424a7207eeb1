"""The data directory never keeps a pair the user decided against, whichever process wrote it."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.bench_datadir import RACER
from ichor import datadir
from ichor.store import Store
from tests.support import new_pair

ROOT = Path(__file__).resolve().parent.parent


def data_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ------------------------------------------------------------------- keep and discard racing


def test_keep_and_discard_racing_in_separate_processes_leave_no_orphan(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    db = tmp_path / "p" / "ichor.db"
    rounds = 60
    with Store(db) as store:
        ids = [store.add_pair(new_pair(n)).id for n in range(rounds)]
        folder = store.data_dir
    start = time.time() + 1.5  # both interpreters are up and spinning before the first decision
    arg = ",".join(map(str, ids))
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(db), verb, arg, str(start)], env={**os.environ})
        for verb in ("kept", "chase", "shared")
    ]
    assert [p.wait(timeout=120) for p in racers] == [0, 0, 0]
    with Store(db) as store:
        assert store.counts() == {"pending": 0, "kept": 0, "shared": 0, "uploaded": 0}
    assert data_files(folder) == []  # every pair was discarded in the end, so no file may remain


def test_a_pair_kept_after_the_race_has_exactly_its_one_file(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    db = tmp_path / "p" / "ichor.db"
    with Store(db) as store:
        ids = [store.add_pair(new_pair(n)).id for n in range(40)]
        folder = store.data_dir
    start = time.time() + 1.5
    keep, discard = ",".join(map(str, ids)), ",".join(map(str, ids[::2]))
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(db), verb, arg, str(start)])
        for verb, arg in (("kept", keep), ("discard", discard))
    ]
    assert [p.wait(timeout=120) for p in racers] == [0, 0]
    with Store(db) as store:
        survivors = {store.get(i).uid for i in ids[1::2]}
        assert {store.get(i) for i in ids[::2]} == {None}
    assert data_files(folder) == sorted(f"ichor-{uid}.jsonl" for uid in survivors)


# ------------------------------------------------------------------- one pair, two data dirs


def test_discard_from_a_shell_without_the_override_removes_the_file_the_agent_wrote(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    home, agent_dir = tmp_path / "home", tmp_path / "repo" / "data" / "pairs"
    with Store.open(home) as store:
        pid = store.add_pair(new_pair(1)).id
    keep = "import sys\nfrom ichor.store import Store\nStore.open(sys.argv[1]).set_status(int(sys.argv[2]), 'kept')"
    proc = subprocess.run(
        [sys.executable, "-c", keep, str(home), str(pid)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "ICHOR_DATA_DIR": str(agent_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(data_files(agent_dir)) == 1
    shell_env = {k: v for k, v in os.environ.items() if k != "ICHOR_DATA_DIR"}
    discard = subprocess.run(
        [sys.executable, "-m", "ichor.cli", "--home", str(home), "discard", str(pid)],
        env={**shell_env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert discard.returncode == 0 and discard.stdout.strip() == f"ichor · pair #{pid} discarded", discard
    assert data_files(agent_dir) == []
    with Store.open(home) as store:
        assert store.data_dir != agent_dir and store.get(pid) is None


def test_forget_all_removes_files_in_every_data_dir_the_pairs_went_to(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    with Store(tmp_path / "p" / "ichor.db") as store:
        a, b = (store.add_pair(new_pair(n)).id for n in (1, 2))
        monkeypatch.setenv("ICHOR_DATA_DIR", str(first))
        store.set_status(a, "kept")
        monkeypatch.setenv("ICHOR_DATA_DIR", str(second))
        store.set_status(b, "shared")
        monkeypatch.delenv("ICHOR_DATA_DIR")
        assert len(data_files(first)) == len(data_files(second)) == 1
        assert store.forget_all() == 2
    assert data_files(first) == data_files(second) == []


def test_keeping_again_in_another_data_dir_moves_the_file(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    with Store(tmp_path / "p" / "ichor.db") as store:
        pair = store.add_pair(new_pair(1))
        monkeypatch.setenv("ICHOR_DATA_DIR", str(first))
        store.set_status(pair.id, "kept")
        monkeypatch.setenv("ICHOR_DATA_DIR", str(second))
        store.set_status(pair.id, "shared")
    assert data_files(first) == []
    assert data_files(second) == [f"ichor-{pair.uid}.jsonl"]


def test_making_a_pair_pending_again_removes_its_file(store):
    pair = store.set_status(store.add_pair(new_pair(1)).id, "kept")
    assert data_files(store.data_dir) == [f"ichor-{pair.uid}.jsonl"]
    store.set_status(pair.id, "pending")
    assert data_files(store.data_dir) == []


def test_a_relative_override_is_made_absolute_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICHOR_DATA_DIR", "rel-pairs")
    first = datadir.env_override()
    monkeypatch.chdir(tmp_path / "..")
    assert datadir.env_override() == first == tmp_path / "rel-pairs"


def test_an_override_that_differs_from_the_setting_is_warned_about_once(tmp_path, monkeypatch, caplog):
    with Store(tmp_path / "p" / "ichor.db") as store:
        store.set_setting("data_dir", str(tmp_path / "configured"))
        monkeypatch.setenv("ICHOR_DATA_DIR", str(tmp_path / "elsewhere"))
        with caplog.at_level(logging.WARNING, logger="ichor"):
            assert store.data_dir == tmp_path / "elsewhere"
            assert store.data_dir == tmp_path / "elsewhere"
        monkeypatch.setenv("ICHOR_DATA_DIR", str(tmp_path / "configured"))
        with caplog.at_level(logging.WARNING, logger="ichor"):
            assert store.data_dir == tmp_path / "configured"
    [warning] = [r.getMessage() for r in caplog.records]
    assert "ICHOR_DATA_DIR" in warning and "elsewhere" in warning and "configured" in warning


def test_a_relative_data_dir_setting_is_read_as_stored(tmp_path, monkeypatch):
    # ``settings.put`` stores an absolute path; a value stored otherwise still resolves to one path.
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    with Store(tmp_path / "p" / "ichor.db") as store:
        store.set_setting("data_dir", str(tmp_path / "chosen"))
        assert store.data_dir == tmp_path / "chosen"
        assert store.data_dir.is_absolute()


# ------------------------------------------------------------------- killed mid-write


KILLED_WRITER = """
import os, sys, time
from bench.bench_datadir import RACER
from ichor import datadir
from ichor.store import Store
real_fsync = os.fsync
def stall(fd):
    real_fsync(fd)
    print("writing", flush=True)
    time.sleep(60)  # killed here: the temp file holds the pair, the rename never happens
os.fsync = stall
with Store(sys.argv[1]) as store:
    store.set_status(int(sys.argv[2]), "kept")
"""


def test_a_writer_killed_during_a_data_file_write_leaves_a_temp_file_the_next_open_removes(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    db = tmp_path / "p" / "ichor.db"
    with Store(db) as store:
        pid = store.add_pair(new_pair(1)).id
        folder = store.data_dir
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db), str(pid)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout.readline().strip() == "writing"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    [leftover] = data_files(folder)
    assert leftover.startswith(".ichor-") and leftover.endswith(".tmp")
    with Store(db) as store:
        assert data_files(folder) == []
        assert store.get(pid).status == "kept"  # the decision landed; its file is written again by sync
        assert store.sync_data_dir() == 1
        uid = store.get(pid).uid
    assert data_files(folder) == [f"ichor-{uid}.jsonl"]


def test_a_live_writers_temp_file_is_left_alone(tmp_path):
    folder = tmp_path / "pairs"
    folder.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = folder / f".ichor-abc.jsonl.{sleeper.pid}.1.tmp"
        live.write_text("{}")
        assert datadir.clean_temp_files([folder]) == 0
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert datadir.clean_temp_files([folder]) == 1
    assert data_files(folder) == []


# ------------------------------------------------------------------- folders and links


def test_a_folder_the_user_chose_keeps_its_mode(tmp_path, monkeypatch):
    chosen = tmp_path / "shared-with-team"
    chosen.mkdir()
    os.chmod(chosen, 0o755)
    link = tmp_path / "link"
    link.symlink_to(chosen)
    monkeypatch.setenv("ICHOR_DATA_DIR", str(link))
    with Store(tmp_path / "p" / "ichor.db") as store:
        pair = store.set_status(store.add_pair(new_pair(1)).id, "kept")
    assert chosen.stat().st_mode & 0o777 == 0o755
    assert (chosen / f"ichor-{pair.uid}.jsonl").stat().st_mode & 0o777 == 0o600


def test_folders_ichor_creates_are_private(tmp_path, monkeypatch):
    monkeypatch.setenv("ICHOR_DATA_DIR", str(tmp_path / "new" / "pairs"))
    with Store(tmp_path / "p" / "ichor.db") as store:
        store.set_status(store.add_pair(new_pair(1)).id, "kept")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "new" / "pairs").stat().st_mode & 0o777 == 0o700


def test_a_symlink_planted_at_a_data_file_is_replaced_not_followed(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    with Store(tmp_path / "p" / "ichor.db") as store:
        pair = store.add_pair(new_pair(1))
        target = store.data_file(pair.uid)
        target.parent.mkdir(parents=True)
        target.symlink_to(victim)
        store.set_status(pair.id, "kept")
    assert victim.read_text() == "untouched"
    assert not target.is_symlink() and json.loads(target.read_text())["uid"] == pair.uid


# ------------------------------------------------------------------- what the audit can ask


def test_export_states_names_only_uids_the_store_held(store):
    kept = store.set_status(store.add_pair(new_pair(1)).id, "kept")
    pending = store.add_pair(new_pair(2))
    gone = store.set_status(store.add_pair(new_pair(3)).id, "kept")
    store.discard(gone.id)
    states = store.export_states([kept.uid, pending.uid, gone.uid, "someoneelses"])
    assert states == {kept.uid: "exported", pending.uid: "pending", gone.uid: "forgotten"}


def test_the_audit_drops_files_whose_pair_the_store_no_longer_has_and_says_how_many(home, tmp_path, capsys):
    from pipelines import audit

    folder = tmp_path / "pairs"
    with Store.open() as store:
        store.set_setting("data_dir", str(folder))
        kept, gone, again = (store.set_status(store.add_pair(new_pair(n)).id, "kept") for n in (1, 2, 3))
        stale = {p.uid: (folder / f"ichor-{p.uid}.jsonl").read_text() for p in (gone, again)}
        store.discard(gone.id)
        store.set_status(again.id, "pending")
    for uid, text in stale.items():  # files a crash or an older ichor left behind
        (folder / f"ichor-{uid}.jsonl").write_text(text)
    other = json.loads(stale[gone.uid]) | {"uid": "anotherprofile1"}
    (folder / "ichor-anotherprofile1.jsonl").write_text(json.dumps(other) + "\n")

    argv = ["--pairs", str(folder), "--samples", str(tmp_path / "none")]
    argv += ["--out", str(tmp_path / "audited.jsonl"), "--metrics", str(tmp_path / "audit.json")]
    assert audit.main(argv) == 0
    stats = json.loads((tmp_path / "audit.json").read_text())
    uids = [json.loads(line)["uid"] for line in (tmp_path / "audited.jsonl").read_text().splitlines()]
    assert sorted(uids) == sorted([kept.uid, "anotherprofile1"])
    assert stats["dropped_not_in_store"] == 2
    assert "2 dropped as no longer in the pair store" in capsys.readouterr().out


def test_the_audit_without_a_visible_store_drops_nothing_and_says_so(tmp_path, monkeypatch):
    from pipelines import audit

    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "no-home"))
    records = [{"uid": "a1"}, {"uid": "b2"}]
    stats: dict = {}
    assert list(audit.without_forgotten(records, tmp_path / "no-home" / "ichor.db", stats)) == records
    assert stats["dropped_not_in_store"] == 0
    assert stats["store"] == f"not checked: no pair store at {tmp_path / 'no-home' / 'ichor.db'}"
    assert audit.store_check_line(stats) == f"kept pairs were {stats['store']}"


def test_the_cli_warns_in_one_line_when_the_override_differs_from_the_setting(tmp_path, monkeypatch):
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    home, configured, override = tmp_path / "home", tmp_path / "configured", tmp_path / "override"
    with Store.open(home) as store:
        store.set_setting("data_dir", str(configured))
        pid = store.add_pair(new_pair(1)).id
    proc = subprocess.run(
        [sys.executable, "-m", "ichor.cli", "--home", str(home), "keep", str(pid)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "ICHOR_DATA_DIR": str(override)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"ichor · pair #{pid} kept (private)"
    [warning] = proc.stderr.strip().splitlines()
    assert f"ICHOR_DATA_DIR={override} overrides the data_dir setting ({configured})" in warning
    assert len(data_files(override)) == 1 and data_files(configured) == []


def test_rewriting_a_kept_pairs_file_goes_where_it_was_written(tmp_path, monkeypatch):
    first = tmp_path / "first"
    with Store(tmp_path / "p" / "ichor.db") as store:
        pair = store.add_pair(new_pair(1))
        monkeypatch.setenv("ICHOR_DATA_DIR", str(first))
        store.set_status(pair.id, "kept")
        monkeypatch.delenv("ICHOR_DATA_DIR")
        store._db.execute("UPDATE pairs SET accepted = 'pnpm install --frozen-lockfile' WHERE id = ?", (pair.id,))
        store._write_data_file(store.require(pair.id))  # what an edit does after changing the texts
        assert data_files(store.data_dir) == []
    [name] = data_files(first)
    assert json.loads((first / name).read_text())["accepted"] == "pnpm install --frozen-lockfile"
