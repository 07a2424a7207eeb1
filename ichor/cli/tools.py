"""Tool commands that need no store: run the detector, the scrubber, or an evaluation on your data."""

from __future__ import annotations

import argparse
import json
import sys

from .common import CliError, print_json, read_json_lines, text_field

DETECT_FIELDS = ("prev_user", "prev_assistant", "user", "assistant")


def _detect(args) -> int:
    from ..detect import detect

    for lineno, obj in read_json_lines():
        if not any(key in obj for key in DETECT_FIELDS):
            raise CliError(f"stdin line {lineno}: none of the fields {', '.join(DETECT_FIELDS)}")
        texts = [text_field(obj, key, lineno) for key in DETECT_FIELDS]
        result = detect(*texts)
        print_json(
            {"id": obj.get("id"), "is_correction": result.is_correction, "kind": result.kind, "label": result.label}
        )
        sys.stdout.flush()
    return 0


def _scrub(args) -> int:
    from ..scrub import scrub

    if not args.jsonl:
        result = scrub(sys.stdin.read())
        print_json({"text": result.text, "removed": result.removed})
        return 0
    for lineno, obj in read_json_lines():
        result = scrub(text_field(obj, "text", lineno))
        print_json({"id": obj.get("id"), "text": result.text, "removed": result.removed})
    return 0


def load_windows(path: str) -> list[dict]:
    """Labelled windows (the dev set's format); every line needs the four texts and is_correction."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"can't read {path}: {exc.strerror}") from None
    rows = []
    with fh:
        for lineno, obj in read_json_lines(fh, where=path):
            for key in DETECT_FIELDS:
                text_field(obj, key, lineno, where=path)
            if not isinstance(obj.get("is_correction"), bool):
                raise CliError(f"{path} line {lineno}: field 'is_correction' must be true or false")
            rows.append(obj)
    if not rows:
        raise CliError(f"{path}: no labelled windows")
    return rows


def _eval(args) -> int:
    from ..evaluate import evaluate, format_report

    metrics = evaluate(load_windows(args.file))
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        print(format_report(metrics))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "detect",
        help="classify conversation windows read as JSON lines on stdin",
        description="Reads JSON lines with prev_user, prev_assistant, user, assistant (and optionally id); "
        "writes one line each: {id, is_correction, kind, label}.",
    )
    p.set_defaults(func=_detect)

    p = sub.add_parser(
        "scrub",
        help="scrub secrets and personal data from stdin",
        description="Prints {text, removed}. With --jsonl, each input line {id, text} gives {id, text, removed}.",
    )
    p.add_argument("--jsonl", action="store_true", help="read and write JSON lines")
    p.set_defaults(func=_scrub)

    p = sub.add_parser(
        "eval",
        help="precision, recall and F1 (95%% Wilson intervals) of the detector on labelled windows",
        description="FILE holds JSON lines like the dev set: prev_user, prev_assistant, user, assistant, "
        "is_correction and kind (correction, retry or none).",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_eval)
