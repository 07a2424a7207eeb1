"""JSON files shipped in ``ichor/data`` (word and phrase lists), read at import by the modules that use them."""

from __future__ import annotations

import json
from importlib import resources


def load_json(name: str):
    """``ichor/data/<name>``, parsed."""
    return json.loads(resources.files("ichor").joinpath("data", name).read_text(encoding="utf-8"))
