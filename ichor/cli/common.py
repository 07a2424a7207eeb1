"""Helpers shared by the command groups."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from ..store import Store, StoreError


class CliError(Exception):
    """Bad input or a failed action: printed as one line, exit status 2."""


def open_store(args, read_only_ok: bool = False) -> Store:
    """The profile's store; for a read command (``read_only_ok``) a store that can't be written opens
    read-only, with one line on stderr saying so."""
    home = getattr(args, "home", None)
    if home and not Path(home).expanduser().is_dir():  # a typo must not quietly start an empty store
        raise CliError(f"no Hermes home at {home} (--home must name an existing folder)")
    try:
        store = Store.open(home, read_only_ok=read_only_ok)
    except (OSError, StoreError) as exc:
        raise CliError(f"can't open the pair store: {exc}") from None
    if store.read_only and read_only_ok:
        print(f"ichor: the pair store {store.path} is read-only; showing it as it is", file=sys.stderr)
    return store


def one_line(text: str) -> str:
    """``text`` with control characters (a typed ``\\r`` or newline) escaped, so an error stays one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def print_json(data) -> None:
    # A lone surrogate (from a "\ud800" escape in the input) can't be UTF-8; write it back as that escape.
    print(json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8"))


def read_json_lines(stream=None, where: str = "stdin") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` per non-blank line; a bad line raises CliError naming it."""
    for lineno, line in enumerate(stream or sys.stdin, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{where} line {lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise CliError(f"{where} line {lineno}: expected a JSON object")
        yield lineno, obj


def text_field(obj: dict, key: str, lineno: int, where: str = "stdin") -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CliError(f"{where} line {lineno}: field {key!r} must be a string")
    return value
