"""The directory install: ``$HERMES_HOME/plugins/ichor/`` with the manifest and a two-line loader.

The loader only imports ``ichor.hermes.register``, so the ``ichor`` package itself must be
installed in Hermes' Python environment (``pip install hermes-ichor``, or ``pip install -e .`` from a
checkout). Installed that way, Hermes also finds ichor through its ``hermes_agent.plugins`` entry
point; the directory install is for setups that prefer a visible plugin folder. The repository's
``hermes-plugin/`` folder holds the same two files, for ``hermes plugins install OWNER/REPO/hermes-plugin``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from .. import paths

LOADER = '''"""ichor for Hermes. The code is the installed `ichor` package: pip install hermes-ichor."""

from ichor.hermes import register  # noqa: F401
'''


class InstallError(Exception):
    """One clear line for the user."""


def manifest_text() -> str:
    return resources.files("ichor.hermes").joinpath("plugin.yaml").read_text(encoding="utf-8")


def install_plugin(home: str | os.PathLike | None = None, force: bool = False) -> Path:
    """Write the plugin folder and return it. An existing, different folder needs ``force``."""
    target = paths.hermes_home(home) / "plugins" / paths.PLUGIN_NAME
    files = {"plugin.yaml": manifest_text(), "__init__.py": LOADER}
    if target.exists() and not force:
        current = {
            name: (target / name).read_text(encoding="utf-8") if (target / name).exists() else None for name in files
        }
        if current != files:
            raise InstallError(f"{target} already exists and differs; pass --force to replace it")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        tmp = target / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target / name)
    return target
