"""The data directory: one scrubbed ``ichor-<uid>.jsonl`` file per kept or shared pair.

The store decides *when* a file is written or removed (under its write lock, see ``Store.set_status``);
this module only knows *how*: where the folder is, how a file is written without ever leaving a
half-written copy that outlives its writer, and how such copies are found again.

* ``ICHOR_DATA_DIR`` overrides the ``data_dir`` setting. A relative value is made absolute once per
  process, the first time it is read, so a later ``chdir`` can't move the folder under a running writer.
* Files are written to a hidden temp file (``.ichor-<uid>.jsonl.<pid>.<thread>.tmp``, mode 0600,
  never through a symbolic link) and renamed into place. A writer killed mid-write leaves that temp
  file; ``clean_temp_files`` removes the ones whose writing process is gone.
* Missing folders are created 0700; a folder that already exists is never re-moded.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from . import paths

log = logging.getLogger("ichor")

ENV_VAR = "ICHOR_DATA_DIR"
FILE_PREFIX = "ichor-"
_TEMP_NAME = re.compile(r"^\.ichor-\w+\.jsonl\.(\d+)\.\d+\.tmp$")
_WRITE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)


class DataDirError(Exception):
    """A data-directory problem worth one line to the user."""


@functools.cache
def _absolute(raw: str) -> Path:
    return Path(raw).expanduser().absolute()


def env_override() -> Path | None:
    """``ICHOR_DATA_DIR`` as an absolute path, or None when it is unset or empty."""
    raw = os.environ.get(ENV_VAR, "").strip()
    return _absolute(raw) if raw else None


_warned: set[tuple[str, str]] = set()


def warn_if_overridden(env: Path, configured: Path) -> None:
    """Log once per process when ``ICHOR_DATA_DIR`` sends pairs somewhere other than the setting."""
    key = (str(env), str(configured))
    if env != configured and key not in _warned:
        _warned.add(key)
        log.warning(
            "ichor: %s=%s overrides the data_dir setting (%s); kept pairs go to %s", ENV_VAR, env, configured, env
        )


def file_name(uid: str) -> str:
    if not uid.isalnum():
        raise DataDirError(f"invalid pair uid {uid!r}")
    return f"{FILE_PREFIX}{uid}.jsonl"


def write_file(target: Path, body: str, mode: int = 0o600) -> None:
    """Write ``body`` to ``target`` atomically, with ``mode``; a failed write leaves no copy behind."""
    paths.make_dirs(target.parent)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.unlink(missing_ok=True)  # our own leftover from a write this thread failed to clean
    fd = os.open(tmp, _WRITE_FLAGS, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)  # a symlink planted at target is replaced, never followed
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_file(path: Path) -> str | None:
    """The text of a regular data file, or None when there is none (another process may remove it any time)."""
    try:
        if path.is_symlink():
            return None
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None


def remove_file(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _process_gone(pid: int) -> bool:
    # On Windows os.kill(pid, 0) sends CTRL_C_EVENT rather than probing: leave such files alone there.
    if pid == os.getpid() or os.name == "nt":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    return False


def stale_temp_files(folder: Path) -> list[Path]:
    """Temp files in ``folder`` whose writing process no longer runs."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    stale = []
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match and _process_gone(int(match.group(1))):
            stale.append(Path(entry.path))
    return stale


def clean_temp_files(folders: Iterable[Path]) -> int:
    """Remove the temp files a killed writer left in ``folders``. Returns how many."""
    removed = 0
    for folder in dict.fromkeys(folders):
        for tmp in stale_temp_files(folder):
            try:
                removed += remove_file(tmp)
            except OSError as exc:
                log.warning("ichor: can't remove the leftover temp file %s: %s", tmp, exc.strerror)
    return removed
