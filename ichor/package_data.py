"""Files shipped in ``ichor/data`` (the model, word and phrase lists, the scrub catalogue)."""

from __future__ import annotations

import json
from importlib import resources


def read_text(name: str) -> str:
    """``ichor/data/<name>``, as text."""
    return resources.files("ichor").joinpath("data", name).read_text(encoding="utf-8")


def load_json(name: str):
    """``ichor/data/<name>``, parsed."""
    return json.loads(read_text(name))
