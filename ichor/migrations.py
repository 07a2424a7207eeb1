"""Numbered schema migrations for the pair store, in the style of simonw/llm.

Each migration is a function ``mNNN_name(db)`` registered in order with ``@migration``. Applied
names are recorded in ``_ichor_migrations``; a migration never changes once released; add a new one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []


def migration(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    MIGRATIONS.append(fn)
    return fn


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction. Returns the names applied."""
    db.execute("CREATE TABLE IF NOT EXISTS _ichor_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    applied = {row[0] for row in db.execute("SELECT name FROM _ichor_migrations")}
    done = []
    for fn in MIGRATIONS:
        if fn.__name__ in applied:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the write lock.
            if db.execute("SELECT 1 FROM _ichor_migrations WHERE name = ?", (fn.__name__,)).fetchone():
                db.execute("ROLLBACK")
                continue
            fn(db)
            db.execute("INSERT INTO _ichor_migrations (name, applied_at) VALUES (?, ?)", (fn.__name__, time.time()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        done.append(fn.__name__)
    return done


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE pairs (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            fingerprint TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'kept', 'shared', 'uploaded')),
            kind TEXT NOT NULL CHECK (kind IN ('correction', 'retry', 'undo')),
            label TEXT,
            user_said TEXT NOT NULL,
            prompt_json TEXT NOT NULL,
            rejected TEXT NOT NULL,
            accepted TEXT NOT NULL,
            platform TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            scrubbed_json TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
        """
    )
    db.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@migration
def m002_status_index(db: sqlite3.Connection) -> None:
    db.execute("CREATE INDEX pairs_status_id ON pairs (status, id)")


@migration
def m003_upload_ref(db: sqlite3.Connection) -> None:
    # The Hub commit that holds an uploaded pair, so that a retried share can tell what is already there.
    db.execute("ALTER TABLE pairs ADD COLUMN upload_ref TEXT")


@migration
def m004_data_file_location(db: sqlite3.Connection) -> None:
    # The absolute folder each pair's data file was written to, so discard finds it whichever process
    # (and whichever ICHOR_DATA_DIR) wrote it; and the uids of deleted pairs, so the audit stage can drop
    # a file whose pair is gone without touching another profile's files in a shared folder.
    # ``data_dirs`` lists every folder ever written to, so the open-time sweep for temp files a killed writer
    # left reads a handful of rows, not every pair.
    db.execute("ALTER TABLE pairs ADD COLUMN data_dir TEXT")
    db.execute("CREATE TABLE forgotten (uid TEXT PRIMARY KEY, forgotten_at REAL NOT NULL)")
    db.execute("CREATE TABLE data_dirs (path TEXT PRIMARY KEY)")


@migration
def m005_detector_ids(db: sqlite3.Connection) -> None:
    # The hashed features of the window the detector scored (from the scrubbed texts, with the whole turn
    # the assistant wrote), so that a card decision teaches the refit what the detector read. Never exported.
    db.execute("ALTER TABLE pairs ADD COLUMN detector_ids TEXT")
