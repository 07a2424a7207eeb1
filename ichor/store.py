"""The pair store: one SQLite file per Hermes profile, plus the versioned data directory.

* WAL mode and ``BEGIN IMMEDIATE`` writes make it safe for several threads and processes at once;
  a transaction either lands whole or not at all, so a killed writer leaves no half-written pair.
* Kept and shared pairs are mirrored, already scrubbed, as one ``ichor-<uid>.jsonl`` file each under
  the data directory (``ICHOR_DATA_DIR``, else the ``data_dir`` setting, else the plugin folder).
  Each file is written atomically (temp file + rename), so a pair appears there at most once.
* A corrupt database file is moved aside, never deleted, and a fresh one is started.
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .migrations import migrate

log = logging.getLogger("ichor")

STATUSES = ("pending", "kept", "shared", "uploaded")
KINDS = ("correction", "retry", "undo")
EXPORTED_STATUSES = ("kept", "shared", "uploaded")
DATA_FILE_PREFIX = "ichor-"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class StoreError(Exception):
    """A store problem worth one clear line to the user."""


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

    def __init__(self, db_file: str | os.PathLike, data_dir: str | os.PathLike | None = None):
        self.path = Path(db_file)
        self._data_dir_override = Path(data_dir) if data_dir else None
        self._lock = threading.RLock()
        paths.ensure_private_dir(self.path.parent)
        self._db = self._connect()

    @classmethod
    def open(cls, home: str | os.PathLike | None = None) -> Store:
        return cls(paths.db_path(home), data_dir=None)

    # ---- connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            return self._open_and_migrate()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # locked, read-only, disk full: not corruption
                raise StoreError(f"can't open {self.path}: {exc}") from None
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

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, sql: str, params: Iterable = ()) -> sqlite3.Cursor:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(sql, tuple(params))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return cur

    def _read(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

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
            "accepted, platform, session_id, scrubbed_json, created_at, updated_at) "
            "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            ),
        )
        return _row_to_pair(self._read(f"SELECT {_COLUMNS} FROM pairs WHERE fingerprint = ?", (fp,))[0])

    def get(self, pair_id: int) -> Pair | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM pairs WHERE id = ?", (pair_id,))
        return _row_to_pair(rows[0]) if rows else None

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
        """``ichor edit``: the pair's texts and label become ``edited``'s (already scrubbed); the rest stays."""
        cur = self._write(
            "UPDATE pairs SET label = ?, user_said = ?, prompt_json = ?, rejected = ?, accepted = ?, "
            "scrubbed_json = ?, updated_at = ? WHERE id = ?",
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
        if status not in STATUSES:
            raise StoreError(f"unknown status {status!r}")
        cur = self._write("UPDATE pairs SET status = ?, updated_at = ? WHERE id = ?", (status, time.time(), pair_id))
        if cur.rowcount == 0:
            raise UnknownPair(pair_id)
        pair = self.require(pair_id)
        if status in EXPORTED_STATUSES:
            self._write_data_file(pair)
        else:
            self._remove_data_file(pair.uid)
        return pair

    def mark_uploaded(self, pair_ids: Iterable[int], upload_ref: str) -> int:
        ids = list(pair_ids)
        if not ids:
            return 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                n = 0
                for pid in ids:
                    n += self._db.execute(
                        "UPDATE pairs SET status = 'uploaded', upload_ref = ?, updated_at = ? "
                        "WHERE id = ? AND status = 'shared'",
                        (upload_ref, time.time(), pid),
                    ).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return n

    def discard(self, pair_id: int) -> None:
        """Delete the pair and its text, here and in the data directory."""
        pair = self.require(pair_id)
        # File first: if we are killed in between, the pair is still in the store and can be discarded again.
        self._remove_data_file(pair.uid)
        self._write("DELETE FROM pairs WHERE id = ?", (pair_id,))

    def forget_all(self) -> int:
        """Delete every stored pair. Settings stay."""
        uids = [r[0] for r in self._read("SELECT uid FROM pairs")]
        for uid in uids:
            self._remove_data_file(uid)
        self._write("DELETE FROM pairs")
        return len(uids)

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
    def data_dir(self) -> Path:
        env = os.environ.get("ICHOR_DATA_DIR")
        if env:
            return Path(env).expanduser()
        if self._data_dir_override:
            return self._data_dir_override
        setting = self.get_setting("data_dir")
        return Path(setting).expanduser() if setting else self.path.parent / "pairs"

    def data_file(self, uid: str) -> Path:
        if not uid.isalnum():
            raise StoreError(f"invalid pair uid {uid!r}")
        return self.data_dir / f"{DATA_FILE_PREFIX}{uid}.jsonl"

    def _write_data_file(self, pair: Pair) -> None:
        target = self.data_file(pair.uid)
        body = json.dumps(pair.to_record(), ensure_ascii=False, sort_keys=True) + "\n"
        if target.exists() and target.read_text(encoding="utf-8") == body:
            return
        paths.ensure_private_dir(target.parent)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)  # never leave a copy of the pair's text behind
            raise

    def _remove_data_file(self, uid: str) -> None:
        try:
            self.data_file(uid).unlink()
        except FileNotFoundError:
            pass

    def sync_data_dir(self) -> int:
        """Write any kept or shared pair whose data file is missing (say, after a crash). Returns how many.

        It never deletes: several profiles may share one data directory, and their files are not ours.
        """
        written = 0
        for pair in self.iter_pairs(EXPORTED_STATUSES):
            if not self.data_file(pair.uid).exists():
                self._write_data_file(pair)
                written += 1
        return written
