"""``ichor scrub``: the scrubber on stdin, as text or JSON lines."""

from __future__ import annotations

import argparse

from .common import (
    BadLine,
    CliError,
    binary_stdin,
    print_json,
    read_json_lines,
    report_bad,
    text_field,
)


def _scrub(args) -> int:
    from ..scrub import scrub

    if not args.jsonl:
        result = scrub(stdin_text())
        print_json({"text": result.text, "removed": result.removed})
        return 0
    seen = skipped = 0
    for lineno, obj in read_json_lines():
        seen += 1
        read = _text_of(obj, lineno)
        if isinstance(read, BadLine):
            report_bad(read)
            skipped += 1
            continue
        line_id, text = read
        result = scrub(text)
        print_json({"id": line_id, "text": result.text, "removed": result.removed})
    if skipped:
        raise CliError(f"{skipped} of {seen} lines skipped")
    return 0


def _text_of(obj: dict | BadLine, lineno: int) -> tuple[object, str] | BadLine:
    """A JSON line's ``(id, text)``, or why it has none."""
    if isinstance(obj, BadLine):
        return obj
    try:
        return obj.get("id"), text_field(obj, "text")
    except ValueError as exc:
        return BadLine("stdin", lineno, str(exc))


def stdin_text() -> str:
    """All of stdin as UTF-8 text (a leading BOM dropped); invalid UTF-8 is an error, never replaced."""
    data = b"".join(binary_stdin())
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise CliError(f"stdin: not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte {exc.start + 1})") from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scrub",
        help="scrub secrets and personal data from stdin",
        description="Prints {text, removed}. With --jsonl, each input line {id, text} gives {id, text, removed}; "
        "a bad line is reported on stderr and skipped (exit status 2).",
    )
    p.add_argument("--jsonl", action="store_true", help="read and write JSON lines")
    p.set_defaults(func=_scrub)
