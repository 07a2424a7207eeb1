"""The pair store: one SQLite file per Hermes profile, plus the versioned data directory.

* WAL mode and ``BEGIN IMMEDIATE`` writes make it safe for several threads and processes at once;
  a transaction either lands whole or not at all, so a killed writer leaves no half-written pair.
* Kept and shared pairs are mirrored, already scrubbed, as one ``ichor-<uid>.jsonl`` file each under
  the data directory (``ICHOR_DATA_DIR``, else the ``data_dir`` setting, else the plugin folder); see
  ``ichor.datadir``. Each pair records the absolute folder its file went to, so a discard removes that
  file whichever process wrote it. A status change and its file are ordered by the write lock that all
  processes share, so no file outlives its pair (see ``set_status``).
* A damaged database (in the header, or a bad page found later by a query) is moved aside, never
  deleted, and a fresh one is started. A store that can't be written opens read-only when the caller
  allows it (``Store.open(read_only_ok=True)``); every write then raises ``ReadOnlyStore``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import datadir, paths, settings
from .migrations import MIGRATIONS, migrate

log = logging.getLogger("ichor")

STATUSES = ("pending", "kept", "shared", "uploaded")
KINDS = ("correction", "retry", "undo")
EXPORTED_STATUSES = ("kept", "shared", "uploaded")
DATA_FILE_PREFIX = datadir.FILE_PREFIX
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB


class StoreError(Exception):
    """A store problem worth one clear line to the user."""


class ReadOnlyStore(StoreError):
    def __init__(self, path: Path):
        super().__init__(f"the pair store {path} is read-only: nothing was changed")


class DamagedStore(StoreError):
    """The database was damaged; it has been moved aside and a fresh one started."""


class UnknownPair(StoreError):
    def __init__(self, pair_id):
        super().__init__(f"no pair with id {pair_id}")
        self.pair_id = pair_id


@dataclass
class NewPair:
    """What capture hands to the store. Every text must already be scrubbed."""

    kind: str
    user_said: str
    prompt: list[dict]
    rejected: str
    accepted: str
    label: str | None = None
    platform: str = ""
    session_id: str = ""
    scrubbed: dict[str, int] = field(default_factory=dict)
    # The detector's hashed features of the window it scored, per model entry (``detect_refit.window_ids``).
    detector_ids: dict[str, list[int]] | None = None

    def fingerprint(self) -> str:
        blob = json.dumps([self.session_id, self.prompt, self.rejected, self.accepted], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Pair:
    id: int
    uid: str
    status: str
    kind: str
    label: str | None
    user_said: str
    prompt: list[dict]
    rejected: str
    accepted: str
    platform: str
    session_id: str
    scrubbed: dict[str, int]
    created_at: float
    updated_at: float
    upload_ref: str | None = None

    def to_record(self) -> dict:
        """The data-directory record: everything a training pipeline needs, no session identifier."""
        return {
            "uid": self.uid,
            "kind": self.kind,
            "label": self.label,
            "user_said": self.user_said,
            "prompt": self.prompt,
            "rejected": self.rejected,
            "accepted": self.accepted,
            "platform": self.platform,
            "scrubbed": self.scrubbed,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created_at)),
        }


_COLUMNS = (
    "id, uid, status, kind, label, user_said, prompt_json, rejected, accepted, platform, session_id, "
    "scrubbed_json, created_at, updated_at, upload_ref"
)


def _row_to_pair(row: tuple) -> Pair:
    (pid, uid, status, kind, label, said, prompt, rejected, accepted, platform, session, scrubbed, ct, ut, ref) = row
    return Pair(
        pid,
        uid,
        status,
        kind,
        label,
        said,
        json.loads(prompt),
        rejected,
        accepted,
        platform,
        session,
        json.loads(scrubbed),
        ct,
        ut,
        ref,
    )


def _valid_text(text: str | None) -> str | None:
    """SQLite stores UTF-8 only: a lone surrogate (say, from a JSON ``\\ud800`` escape) becomes U+FFFD."""
    if text is None:
        return None
    return _LONE_SURROGATE.sub("\ufffd", text)


def _is_corruption(exc: BaseException) -> bool:
    return type(exc) is sqlite3.DatabaseError or getattr(exc, "sqlite_errorcode", None) in _CORRUPT_CODES


def _is_read_only(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    return isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc).replace("-", "").replace(" ", "")


def _writable(db: sqlite3.Connection) -> bool:
    """Whether SQLite can write ``db``: a read-only file opens without error and fails at the first write."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("PRAGMA user_version = 0")  # a header write, rolled back below
    except sqlite3.OperationalError as exc:
        # Busy or locked says nothing about writability; the write that meets it reports it.
        return not _is_read_only(exc)
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return True


def _create_private_file(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def _move_aside(path: Path) -> Path:
    target = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, Path(str(target) + suffix))
    return target


class Store:
    """A handle on one profile's pair store. Cheap to open; safe to share between threads."""

    def __init__(self, db_file: str | os.PathLike, data_dir: str | os.PathLike | None = None, read_only: bool = False):
        self.path = Path(db_file).absolute()
        self._data_dir_override = Path(data_dir).absolute() if data_dir else None
        self._lock = threading.RLock()
        self.read_only = read_only
        if not read_only:
            paths.ensure_private_dir(self.path.parent)
        self._db = self._connect()
        if not read_only and not _writable(self._db):
            self.read_only = True  # the file or its folder can't be written: reads work, writes say so
        if not self.read_only:
            self._clean_leftovers()

    @classmethod
    def open(cls, home: str | os.PathLike | None = None, read_only_ok: bool = False) -> Store:
        """The profile's store. With ``read_only_ok`` (read commands), a store that can't be written
        opens read-only instead of failing: ``read_only`` is then True."""
        try:
            return cls(paths.db_path(home))
        except (OSError, StoreError) as exc:
            cause = (exc.__cause__ or exc.__context__) if isinstance(exc, StoreError) else exc
            if not (read_only_ok and cause is not None and _is_read_only(cause)):
                raise
        return cls(paths.db_path(home), read_only=True)

    # ---- connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return self._open_read_only()
        try:
            return self._open_and_migrate()
        except sqlite3.DatabaseError as exc:
            if not _is_corruption(exc):  # locked, read-only, disk full: not corruption
                raise StoreError(f"can't open {self.path}: {exc}") from exc
            moved = _move_aside(self.path)
            log.warning(
                "ichor: database %s was unreadable (%s); moved it to %s and started a new one", self.path, exc, moved
            )
            return self._open_and_migrate()

    def _open_and_migrate(self) -> sqlite3.Connection:
        if not self.path.exists():
            _create_private_file(self.path)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA busy_timeout = 30000")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(f"can't open {self.path}: there is no pair store yet and it can't be created (read-only)")
        try:
            db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            db.isolation_level = None
            applied = {row[0] for row in db.execute("SELECT name FROM _ichor_migrations")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"can't read {self.path} (read-only): {exc}") from None
        if any(fn.__name__ not in applied for fn in MIGRATIONS):
            db.close()
            raise StoreError(f"{self.path} is read-only and needs an upgrade: open it once with write access")
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, sql: str, params: Iterable = ()) -> sqlite3.Cursor:
        with self._transaction() as db:
            return db.execute(sql, tuple(params))

    def _read(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self._lock, self._damage_guard():
            return self._db.execute(sql, tuple(params)).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database's write lock that every process shares."""
        if self.read_only:
            raise ReadOnlyStore(self.path)
        with self._lock, self._damage_guard():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _damage_guard(self) -> Iterator[None]:
        """SQLite errors as one line: a read-only file says so; damage a query finds past the header (a
        bad page) is handled as at open, the file moved aside and a fresh one started."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if _is_read_only(exc):
                self.read_only = True
                raise ReadOnlyStore(self.path) from None
            raise StoreError(f"the pair store {self.path}: {exc}") from exc  # locked, disk full, I/O
        except sqlite3.DatabaseError as exc:
            if not _is_corruption(exc):
                raise
            if self.read_only:
                raise StoreError(f"the pair store {self.path} is damaged ({exc}) and read-only") from None
            self._db.close()
            moved = _move_aside(self.path)
            self._db = self._open_and_migrate()
            raise DamagedStore(
                f"the pair store {self.path} was damaged ({exc}); moved it to {moved.name} and started a new one"
            ) from None

    # ---- settings ---------------------------------------------------------------------------

    def get_setting(self, key: str, default=None):
        rows = self._read("SELECT value FROM settings WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_setting(self, key: str, value) -> None:
        self._write(
            "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def settings(self) -> dict:
        return {k: json.loads(v) for k, v in self._read("SELECT key, value FROM settings ORDER BY key")}

    # ---- pairs ------------------------------------------------------------------------------

    def add_pair(self, new: NewPair) -> Pair:
        """Store a pending pair. Adding the same pair twice returns the first one."""
        if new.kind not in KINDS:
            raise StoreError(f"unknown pair kind {new.kind!r}")
        now = time.time()
        fp = new.fingerprint()
        self._write(
            "INSERT OR IGNORE INTO pairs (uid, fingerprint, status, kind, label, user_said, prompt_json, rejected, "
            "accepted, platform, session_id, scrubbed_json, created_at, updated_at, detector_ids) "
            "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uuid.uuid4().hex,
                fp,
                new.kind,
                _valid_text(new.label),
                _valid_text(new.user_said),
                json.dumps(new.prompt),
                _valid_text(new.rejected),
                _valid_text(new.accepted),
                _valid_text(new.platform),
                _valid_text(new.session_id),
                json.dumps(new.scrubbed),
                now,
                now,
                None if new.detector_ids is None else json.dumps(new.detector_ids),
            ),
        )
        return _row_to_pair(self._read(f"SELECT {_COLUMNS} FROM pairs WHERE fingerprint = ?", (fp,))[0])

    def get(self, pair_id: int) -> Pair | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM pairs WHERE id = ?", (pair_id,))
        return _row_to_pair(rows[0]) if rows else None

    def detector_ids(self, pair_id: int) -> dict[str, list[int]] | None:
        """The hashed features the detector scored when it captured the pair; None for a pair it did not
        capture, or one captured before they were kept."""
        rows = self._read("SELECT detector_ids FROM pairs WHERE id = ?", (pair_id,))
        return json.loads(rows[0][0]) if rows and rows[0][0] else None

    def require(self, pair_id: int) -> Pair:
        pair = self.get(pair_id)
        if pair is None:
            raise UnknownPair(pair_id)
        return pair

    def oldest_pending(self) -> Pair | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM pairs WHERE status = 'pending' ORDER BY id LIMIT 1")
        return _row_to_pair(rows[0]) if rows else None

    def set_label(self, pair_id: int, label: str) -> None:
        self._write("UPDATE pairs SET label = ?, updated_at = ? WHERE id = ?", (label, time.time(), pair_id))

    def replace_texts(self, pair_id: int, edited: NewPair) -> Pair:
        """``ichor edit``: the pair's texts and label become ``edited``'s (already scrubbed); the rest stays, but
        the detector's features of the old texts go: what the user took out must not reach the refit."""
        cur = self._write(
            "UPDATE pairs SET label = ?, user_said = ?, prompt_json = ?, rejected = ?, accepted = ?, "
            "scrubbed_json = ?, detector_ids = NULL, updated_at = ? WHERE id = ?",
            (
                _valid_text(edited.label),
                _valid_text(edited.user_said),
                json.dumps(edited.prompt),
                _valid_text(edited.rejected),
                _valid_text(edited.accepted),
                json.dumps(edited.scrubbed),
                time.time(),
                pair_id,
            ),
        )
        if cur.rowcount == 0:
            raise UnknownPair(pair_id)
        pair = self.require(pair_id)
        if pair.status in EXPORTED_STATUSES:
            self._write_data_file(pair)
        return pair

    def set_status(self, pair_id: int, status: str) -> Pair:
        """Change a pair's status and its data file so that no file outlives the decision.

        The status and the folder its file goes to commit first, under the write lock; the file is
        written; then, under the lock again, the pair is checked: if a discard (in any process) removed
        it meanwhile, or it is no longer kept, the file goes. Making a pair pending again removes its
        file inside the transaction that changes the status.
        """
        if status not in STATUSES:
            raise StoreError(f"unknown status {status!r}")
        folder = self.data_dir if status in EXPORTED_STATUSES else None
        with self._transaction() as db:
            row = db.execute("SELECT uid, data_dir FROM pairs WHERE id = ?", (pair_id,)).fetchone()
            if row is None:
                raise UnknownPair(pair_id)
            uid, old_dir = row
            if folder is None:
                self._remove_data_files(uid, old_dir)
            db.execute(
                "UPDATE pairs SET status = ?, data_dir = ?, updated_at = ? WHERE id = ?",
                (status, str(folder) if folder else None, time.time(), pair_id),
            )
            if folder is not None:
                db.execute("INSERT OR IGNORE INTO data_dirs (path) VALUES (?)", (str(folder),))
        pair = self.require(pair_id)
        if folder is not None:
            self._mirror(pair, folder, old_dir)
        return pair

    def _mirror(self, pair: Pair, folder: Path, old_dir: str | None) -> None:
        target = folder / self._file_name(pair.uid)
        body = json.dumps(pair.to_record(), ensure_ascii=False, sort_keys=True) + "\n"
        if datadir.read_file(target) != body:
            datadir.write_file(target, body)
        with self._transaction() as db:
            row = db.execute("SELECT status, data_dir FROM pairs WHERE id = ?", (pair.id,)).fetchone()
            if row is None or row[0] not in EXPORTED_STATUSES or row[1] != str(folder):
                datadir.remove_file(target)  # decided otherwise while we wrote: the file must not outlive that
            elif old_dir and old_dir != str(folder):
                datadir.remove_file(Path(old_dir) / target.name)  # the pair moved to another data dir

    def _write_data_file(self, pair: Pair) -> None:
        """Rewrite a kept pair's data file (after its texts changed), in the folder it was written to."""
        rows = self._read("SELECT data_dir FROM pairs WHERE id = ?", (pair.id,))
        recorded = rows[0][0] if rows else None
        folder = Path(recorded) if recorded else self.data_dir
        if not recorded:
            with self._transaction() as db:
                db.execute("UPDATE pairs SET data_dir = ? WHERE id = ?", (str(folder), pair.id))
                db.execute("INSERT OR IGNORE INTO data_dirs (path) VALUES (?)", (str(folder),))
        self._mirror(pair, folder, None)

    def mark_uploaded(self, pair_ids: Iterable[int], upload_ref: str) -> int:
        ids = list(pair_ids)
        if not ids:
            return 0
        n = 0
        with self._transaction() as db:
            for pid in ids:
                n += db.execute(
                    "UPDATE pairs SET status = 'uploaded', upload_ref = ?, updated_at = ? "
                    "WHERE id = ? AND status = 'shared'",
                    (upload_ref, time.time(), pid),
                ).rowcount
        return n

    def discard(self, pair_id: int) -> None:
        """Delete the pair and its text, here and in the data directory its file was written to."""
        with self._transaction() as db:
            row = db.execute("SELECT uid, data_dir FROM pairs WHERE id = ?", (pair_id,)).fetchone()
            if row is None:
                raise UnknownPair(pair_id)
            # Inside the transaction: killed in between, the pair is still in the store and can be discarded again.
            self._remove_data_files(*row)
            db.execute("DELETE FROM pairs WHERE id = ?", (pair_id,))
            self._remember_forgotten(db, [row[0]])

    def forget_all(self) -> int:
        """Delete every stored pair and its data file. Settings stay."""
        with self._transaction() as db:
            rows = db.execute("SELECT uid, data_dir FROM pairs").fetchall()
            for uid, folder in rows:
                self._remove_data_files(uid, folder)
            db.execute("DELETE FROM pairs")
            self._remember_forgotten(db, [uid for uid, _ in rows])
        return len(rows)

    @staticmethod
    def _remember_forgotten(db: sqlite3.Connection, uids: list[str]) -> None:
        now = time.time()
        db.executemany("INSERT OR IGNORE INTO forgotten (uid, forgotten_at) VALUES (?, ?)", [(u, now) for u in uids])

    def export_states(self, uids: Iterable[str]) -> dict[str, str]:
        """For each uid this store knows: ``exported`` (kept, shared, uploaded), ``pending`` or ``forgotten``.

        A uid it never held is left out: in a data dir that several profiles share, that file is not ours.
        """
        states: dict[str, str] = {}
        wanted = list(dict.fromkeys(uids))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for uid, status in self._read(f"SELECT uid, status FROM pairs WHERE uid IN ({marks})", chunk):
                states[uid] = "exported" if status in EXPORTED_STATUSES else "pending"
            for (uid,) in self._read(f"SELECT uid FROM forgotten WHERE uid IN ({marks})", chunk):
                states.setdefault(uid, "forgotten")
        return states

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for status, n in self._read("SELECT status, COUNT(*) FROM pairs GROUP BY status"):
            counts[status] = n
        return counts

    def top_labels(self, limit: int = 5) -> list[tuple[str, int]]:
        rows = self._read(
            "SELECT label, COUNT(*) AS n FROM pairs WHERE label IS NOT NULL AND label != '' "
            "GROUP BY label ORDER BY n DESC, label LIMIT ?",
            (limit,),
        )
        return [(label, n) for label, n in rows]

    def iter_pairs(self, statuses: Iterable[str] = EXPORTED_STATUSES, batch: int = 500) -> Iterator[Pair]:
        """Stream pairs in id order, a batch at a time, so exports stay flat in memory."""
        wanted = tuple(statuses)
        marks = ",".join("?" * len(wanted))
        last = 0
        while True:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM pairs WHERE status IN ({marks}) AND id > ? ORDER BY id LIMIT ?",
                (*wanted, last, batch),
            )
            if not rows:
                return
            for row in rows:
                yield _row_to_pair(row)
            last = rows[-1][0]

    # ---- the versioned data directory -------------------------------------------------------

    @property
    def configured_data_dir(self) -> Path:
        """The data dir the settings name (absolute), ignoring ``ICHOR_DATA_DIR``."""
        if self._data_dir_override:
            return self._data_dir_override
        setting = settings.get(self, "data_dir")
        return Path(setting).expanduser().absolute() if setting else self.path.parent / "pairs"

    @property
    def data_dir(self) -> Path:
        """Where new data files go: ``ICHOR_DATA_DIR`` (warned about once when it differs), else the setting."""
        configured = self.configured_data_dir
        env = datadir.env_override()
        if env is None:
            return configured
        datadir.warn_if_overridden(env, configured)
        return env

    @staticmethod
    def _file_name(uid: str) -> str:
        try:
            return datadir.file_name(uid)
        except datadir.DataDirError as exc:
            raise StoreError(str(exc)) from None

    def data_file(self, uid: str) -> Path:
        return self.data_dir / self._file_name(uid)

    def _remove_data_files(self, uid: str, recorded_dir: str | None) -> None:
        """The file where it was written, and where the current data dir would put it."""
        name = self._file_name(uid)
        for folder in dict.fromkeys(f for f in (recorded_dir, str(self.data_dir)) if f):
            datadir.remove_file(Path(folder) / name)

    def _clean_leftovers(self) -> None:
        """Remove the temp files that writers killed mid-write left in any folder this store writes to."""
        try:
            rows = self._read("SELECT path FROM data_dirs")
            removed = datadir.clean_temp_files([self.data_dir, *(Path(r[0]) for r in rows)])
        except DamagedStore as exc:
            log.warning("ichor: %s", exc)
            return
        except (StoreError, OSError) as exc:
            log.warning("ichor: can't check the data directory for leftover temp files: %s", exc)
            return
        if removed:
            log.info("ichor: removed %d temp file(s) left by an interrupted write", removed)

    def sync_data_dir(self) -> int:
        """Write any kept or shared pair whose data file is missing (say, after a crash). Returns how many.

        It never deletes: several profiles may share one data directory, and their files are not ours.
        """
        written = 0
        for pair in self.iter_pairs(EXPORTED_STATUSES):
            rows = self._read("SELECT data_dir FROM pairs WHERE id = ?", (pair.id,))
            old_dir = rows[0][0] if rows else None
            if old_dir and (Path(old_dir) / self._file_name(pair.uid)).is_file():
                continue
            folder = self.data_dir
            with self._transaction() as db:
                db.execute("UPDATE pairs SET data_dir = ? WHERE id = ?", (str(folder), pair.id))
                db.execute("INSERT OR IGNORE INTO data_dirs (path) VALUES (?)", (str(folder),))
            self._mirror(pair, folder, old_dir)
            written += 1
        return written
