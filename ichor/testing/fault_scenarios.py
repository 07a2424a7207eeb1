"""Fault-injection scenarios for ``tests/test_faults.py``, run in a fresh interpreter per scenario.

It reuses the Hermes plugin harness (``hermes_harness``: loopback model stub and home;
``hermes_scenarios``: the real ``AIAgent`` loop, plugin discovery and the log tap) and adds one thing:
a fault switched on before chosen turns and off again after them, so we see both the failing turn and
the recovery. ``python -m ichor.testing.fault_scenarios SPEC.json`` prints one ``ICHOR-FAULT-RESULT {json}`` line.

Faults:

* ``readonly``: ichor's folder in the Hermes home is read-only. The tests run as root in some
  sandboxes, where permission bits don't bind, so every write path answers as a read-only mount does:
  ``EROFS`` from mkdir/open-for-write/rename/unlink/chmod, and SQLite opens the database ``mode=ro``.
* ``enospc``: the disk is full: the store's write path raises ``OSError(ENOSPC)``.
* ``corrupt``: the database file is overwritten with bytes that are not SQLite.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import sys
from pathlib import Path

from ichor.testing import hermes_scenarios as hs
from ichor.testing.hermes_harness import StubLLM, run_script, write_home

MARKER = "ICHOR-FAULT-RESULT "
SEEDED_SESSION = "before"  # the session of the pairs kept before the fault
CORRUPT_BYTES = b"this is not an SQLite database, it is what a crash mid-copy left behind\n" * 64


# ------------------------------------------------------------------------------------ faults


class ReadOnly:
    """Every write under ``root`` fails with EROFS; SQLite opens files there read-only."""

    def __init__(self, root: Path):
        self.root = str(root)
        self.saved: dict = {}

    def _inside(self, path) -> bool:
        try:
            return os.path.abspath(os.fsdecode(path)).startswith(self.root)
        except TypeError:
            return False

    def _deny(self, name):
        real = getattr(os, name)

        def guarded(path, *args, **kwargs):
            if self._inside(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
            return real(path, *args, **kwargs)

        return real, guarded

    def on(self) -> None:
        for name in ("mkdir", "rename", "replace", "unlink", "remove", "chmod", "rmdir"):
            self.saved[name], guarded = self._deny(name)
            setattr(os, name, guarded)
        real_open, real_connect = os.open, sqlite3.connect
        writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

        def open_(path, flags, *args, **kwargs):
            if flags & writes and self._inside(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
            return real_open(path, flags, *args, **kwargs)

        def connect(database, *args, **kwargs):
            if isinstance(database, (str, os.PathLike)) and self._inside(database) and not kwargs.get("uri"):
                return real_connect(f"file:{os.fsdecode(database)}?mode=ro", *args, uri=True, **kwargs)
            return real_connect(database, *args, **kwargs)

        self.saved["open"], self.saved["connect"] = real_open, real_connect
        os.open, sqlite3.connect = open_, connect

    def off(self) -> None:
        for name, real in self.saved.items():
            if name == "connect":
                sqlite3.connect = real
            else:
                setattr(os, name, real)
        self.saved.clear()


class DiskFull:
    """The store's write path (every transaction and every data file) raises ENOSPC."""

    def __init__(self, home: Path):
        self.saved: dict = {}

    def on(self) -> None:
        from ichor import store

        def full(*args, **kwargs):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        for name in ("_transaction", "_mirror"):
            self.saved[name] = getattr(store.Store, name)
            setattr(store.Store, name, full)

    def off(self) -> None:
        from ichor import store

        for name, real in self.saved.items():
            setattr(store.Store, name, real)
        self.saved.clear()


class Corrupt:
    """The database file is overwritten once; there is nothing to switch off."""

    def __init__(self, db_file: Path):
        self.db_file = db_file

    def on(self) -> None:
        self.db_file.write_bytes(CORRUPT_BYTES)

    def off(self) -> None:
        pass


# ------------------------------------------------------------------------------ the scenario


def seed_store(home: Path, n: int) -> None:
    """Pairs a user kept before the fault: they must survive it."""
    from ichor.store import Store

    with Store.open(home) as store:
        for i in range(n):
            pair = store.add_pair(hs.seeded_pair(i, SEEDED_SESSION))
            store.set_status(pair.id, "kept")


def make_fault(kind: str, home: Path):
    from ichor import paths

    if kind == "readonly":
        return ReadOnly(paths.plugin_dir(home))
    if kind == "enospc":
        return DiskFull(home)
    if kind == "corrupt":
        return Corrupt(paths.db_path(home))
    raise ValueError(kind)


def run(spec: dict) -> dict:
    home = Path(os.environ["HERMES_HOME"])
    stub = StubLLM()
    write_home(home, stub.base_url)
    hs._skip_environment_probe()
    tap = hs.LogTap()
    import logging

    logging.getLogger().addHandler(tap)
    logging.getLogger().setLevel(logging.INFO)
    if spec.get("seed"):
        seed_store(home, spec["seed"])
    fault = make_fault(spec["fault"], home)
    try:
        hs._discover()
        agent = hs._agent(stub, spec.get("platform", "cli"), True)
        messages: list[dict] = []
        responses, logs = [], []
        for n, step in enumerate(spec["turns"]):
            stub.replies.append(step["reply"])
            faulty = n in spec["fault_on"]
            if faulty:
                fault.on()
            seen = len(tap.lines)
            try:
                result = agent.run_conversation(step["user"], conversation_history=messages)
                hs.drain()  # the background half of the turn (capture, store, card) runs under the same fault
            finally:
                if faulty:
                    fault.off()
            responses.append(result["final_response"])
            messages = result["messages"]
            logs.append(tap.lines[seen:])
    finally:
        stub.close()
    from ichor import paths

    folder = paths.plugin_dir(home)
    return {
        "responses": responses,
        "logs": logs,
        "pairs": hs._pairs(),
        "files": sorted(p.name for p in folder.iterdir()) if folder.exists() else [],
        "moved_aside": {
            p.name: p.read_bytes() == CORRUPT_BYTES
            for p in folder.glob("ichor.db.corrupt-*")
            if not p.name.endswith(("-wal", "-shm"))
        }
        if folder.exists()
        else {},
    }


def run_fault_scenario(spec: dict, home: Path, timeout: float = 120) -> dict:
    """Run ``spec`` in a fresh interpreter with ``HERMES_HOME=home``; return its report."""
    return run_script("ichor.testing.fault_scenarios", spec, home, MARKER, timeout)[0]


if __name__ == "__main__":
    report = run(json.loads(Path(sys.argv[1]).read_text()))
    sys.stdout.flush()
    print(MARKER + json.dumps(report), flush=True)
