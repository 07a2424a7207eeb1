"""Where ichor keeps its state. Every path is computed at call time, so a Hermes profile switch
(a different ``HERMES_HOME``) is honoured without a restart."""

from __future__ import annotations

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
    """Create ``path`` (and parents) with mode 0700; tighten it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path
