"""Where ichor keeps its state. Every path is computed at call time, so a Hermes profile switch
(a different ``HERMES_HOME``) is honoured without a restart."""

from __future__ import annotations

import errno
import os
from pathlib import Path

PLUGIN_NAME = "ichor"


def hermes_home(override: str | os.PathLike | None = None) -> Path:
    """The active Hermes home: ``override``, else ``$HERMES_HOME``, else ``~/.hermes``."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("HERMES_HOME")
    return Path(env).expanduser() if env else Path.home() / ".hermes"


def plugin_dir(home: str | os.PathLike | None = None) -> Path:
    """``<HERMES_HOME>/plugin-data/ichor``, the same folder newer Hermes' ``plugin_data_dir`` gives."""
    return hermes_home(home) / "plugin-data" / PLUGIN_NAME


def db_path(home: str | os.PathLike | None = None) -> Path:
    return plugin_dir(home) / "ichor.db"


def default_data_dir(home: str | os.PathLike | None = None) -> Path:
    return plugin_dir(home) / "pairs"


def exports_dir(home: str | os.PathLike | None = None) -> Path:
    return plugin_dir(home) / "exports"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700; tighten it if it already exists.

    Only for ichor's own folders (the plugin folder): a folder the user chose goes through ``make_dirs``."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path


def make_dirs(path: Path) -> Path:
    """Create the missing folders of ``path`` with mode 0700, leaving every existing folder as it is.

    A folder the user chose (a data dir, an export target) may be shared on purpose; ichor tightens
    only what it creates, and never changes a folder it reaches through a symbolic link.
    """
    missing = []
    folder = Path(path)
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=0o700)
        except FileExistsError:
            continue  # another process made it first: theirs to mode, not ours to change
        os.chmod(created, 0o700)  # mkdir's mode is filtered by the umask
    return Path(path)


def open_private(path: str | os.PathLike, mode: str = "w"):
    """Open ``path`` for writing as a file only its owner can read (0600), never through a symbolic link.

    A link planted where an export is written could point anywhere the user can write; it is refused.
    Text mode writes a lone surrogate as its backslash escape rather than failing.
    """
    flags = os.O_CREAT | os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    if Path(path).is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link; ichor does not write through links", os.fspath(path))
    fd = os.open(path, flags, 0o600)
    if hasattr(os, "fchmod"):  # POSIX: an existing file keeps its old mode through O_TRUNC
        os.fchmod(fd, 0o600)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", errors="backslashreplace")
