"""Helpers shared by the command groups."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..store import Store, StoreError


class CliError(Exception):
    """Bad input or a failed action: printed as one line, exit status 2."""


def open_store(args, read_only_ok: bool = False) -> Store:
    """The profile's store; for a read command (``read_only_ok``) a store that can't be written opens
    read-only, with one line on stderr saying so."""
    check_home(args)
    try:
        store = Store.open(getattr(args, "home", None), read_only_ok=read_only_ok)
    except (OSError, StoreError) as exc:
        raise CliError(f"can't open the pair store: {exc}") from None
    if store.read_only and read_only_ok:
        print(f"ichor: the pair store {store.path} is read-only; showing it as it is", file=sys.stderr)
    return store


def check_home(args) -> None:
    """A ``--home`` that is not a folder is a typo: it must not quietly start an empty store."""
    home = getattr(args, "home", None)
    if home and not Path(home).expanduser().is_dir():
        raise CliError(f"no Hermes home at {home} (--home must name an existing folder)")


def one_line(text: str) -> str:
    """``text`` with control characters (a typed ``\\r`` or newline) escaped, so an error stays one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _finite(data):
    """``data`` with NaN and ±Infinity (which JSON can't hold) written as the strings Python's JSON reads."""
    if isinstance(data, float) and not math.isfinite(data):
        return "NaN" if math.isnan(data) else NON_FINITE[data]
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


def to_json(data, **kwargs) -> str:
    """Strict JSON: a NaN or Infinity read from the input comes back as a string, never as invalid JSON."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(_finite(data), allow_nan=False, **kwargs)


def print_json(data) -> None:
    # A lone surrogate (from a "\ud800" escape in the input) can't be UTF-8; write it back as that escape.
    text = to_json(data, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except UnicodeEncodeError:  # an ASCII stdout (PYTHONIOENCODING=ascii): the same JSON, in \u escapes
        text = to_json(data)
    print(text)


@dataclass
class BadLine:
    """A line of JSON lines input that can't be used, and why."""

    where: str
    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"{self.where} line {self.lineno}: {self.reason}"


def binary_stdin():
    """stdin as bytes (decoded per line, so the locale can't change what is accepted)."""
    if sys.stdin is None:
        raise CliError("stdin is closed: pipe JSON lines in or name a FILE")
    return getattr(sys.stdin, "buffer", None) or _encoded(sys.stdin)


def _encoded(text_stream) -> Iterator[bytes]:
    for line in text_stream:
        yield line.encode("utf-8", "surrogateescape")


BOM = b"\xef\xbb\xbf"


def read_json_lines(stream=None, where: str = "stdin") -> Iterator[tuple[int, dict | BadLine]]:
    """``(line_number, object)`` per non-blank line of a byte stream (stdin by default), or
    ``(line_number, BadLine)`` for a line that is not UTF-8, not JSON or not an object; reading goes on."""
    for lineno, raw in enumerate(binary_stdin() if stream is None else stream, 1):
        if lineno == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        found = _json_object(raw)
        if found is not None:
            yield lineno, found if isinstance(found, dict) else BadLine(where, lineno, found)


def _json_object(raw: bytes) -> dict | str | None:
    """The line's object, the reason it has none, or None for a blank line."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})"
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except RecursionError:
        return "not valid JSON (nested too deeply)"
    return obj if isinstance(obj, dict) else "expected a JSON object"


def text_field(obj: dict, key: str) -> str:
    """The text at ``key`` ("" when absent or null); ValueError when it is something else."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"field {key!r} must be a string")
    return value


def user_text(obj: dict) -> str:
    """The window's new message: required, and a string."""
    if not isinstance(obj.get("user"), str):
        raise ValueError("field 'user' must be a string" if "user" in obj else "no field 'user'")
    return obj["user"]


DETECT_FIELDS = ("prev_user", "prev_assistant", "user", "assistant")


@contextlib.contextmanager
def opened_input(path: str | None):
    """``(byte stream, name for messages)`` of FILE; stdin when it is absent or ``-``."""
    if path in (None, "-"):
        yield binary_stdin(), "stdin"
        return
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise CliError(f"can't read {path}: {exc.strerror}") from None
    with fh:
        yield fh, path


def window_of(obj: dict):
    """The window a JSON line describes; ValueError when ``user`` is missing or a text is not a string."""
    from ..confirm import Window

    texts = {key: text_field(obj, key) for key in DETECT_FIELDS if key != "user"}
    return Window(texts["prev_user"], texts["prev_assistant"], user_text(obj), texts["assistant"])


def report_bad(bad: BadLine) -> None:
    print(f"ichor: {bad}", file=sys.stderr)


def wrapped(text: str) -> str:
    """A description wrapped by hand: the raw formatter that keeps the example's lines does not wrap."""
    return textwrap.fill(text, 100)
