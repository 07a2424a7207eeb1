"""Tool commands that need no store: run the detector, the scrubber, or an evaluation on your data."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .common import CliError, open_store, print_json, read_json_lines, text_field

DETECT_FIELDS = ("prev_user", "prev_assistant", "user", "assistant")


def _detect(args) -> int:
    if args.action == "refit":
        return _refit(args)
    from ..confirm import Window, stage1, two_stage

    complete = model_endpoint(args)
    for lineno, obj in read_json_lines():
        if not any(key in obj for key in DETECT_FIELDS):
            raise CliError(f"stdin line {lineno}: none of the fields {', '.join(DETECT_FIELDS)}")
        window = Window(*(text_field(obj, key, lineno) for key in DETECT_FIELDS))
        if complete is None:
            result = stage1(window, "standalone")
            print_json({"id": obj.get("id"), **_answer(result)})
        else:
            decision = two_stage(window, complete, args.timeout)
            print_json({"id": obj.get("id"), **_answer(decision), "stage": decision.stage})
        sys.stdout.flush()
    return 0


def _refit(args) -> int:
    from ..detect_refit import refit

    with open_store(args) as store:
        report = refit(store)
    print(json.dumps(report, indent=2) if args.json else format_refit(report))
    return 0


def format_refit(report: dict) -> str:
    if not report["decisions"]:
        return "no decisions yet: keep, share or discard some cards first (the shipped detector stays)"
    lines = [f"refit from {report['decisions']} decisions ({report['positives']} kept or shared): {report['written']}"]
    for name, m in report["models"].items():
        if m["of"]:
            lines.append(
                f"  {name}: agreed with {m['agree_before']}/{m['of']} before, {m['agree_after']}/{m['of']} after"
            )
    lines.append("the shipped detector stays the fallback")
    return "\n".join(lines)


def _answer(result) -> dict:
    return {"is_correction": result.is_correction, "kind": result.kind, "label": result.label}


def model_endpoint(args):
    """``complete_fn`` for stage 2 at ``--llm URL --model NAME`` (key from ``--key-env``), or None."""
    if not args.llm:
        return None
    if not args.model:
        raise CliError("--llm needs --model NAME")
    if args.key_env and not os.environ.get(args.key_env):
        raise CliError(f"environment variable {args.key_env} (from --key-env) is not set")
    from ..confirm import MAX_TOKENS
    from ..openai_chat import complete

    def call(messages, timeout):
        return complete(
            messages,
            url=args.llm,
            model=args.model,
            api_key_env=args.key_env,
            timeout=timeout,
            max_tokens=MAX_TOKENS,
            temperature=0.0,
        )

    return call


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

    rows = load_windows(args.file)
    complete = model_endpoint(args)
    if complete is None:
        metrics = evaluate(rows)
        print(json.dumps(metrics, indent=2) if args.json else format_report(metrics))
        return 0
    from ..evaluate import evaluate_two_stage, format_two_stage

    report = evaluate_two_stage(rows, complete, args.timeout)
    print(json.dumps(report, indent=2) if args.json else format_two_stage(report))
    return 0


def _add_model_options(p: argparse.ArgumentParser) -> None:
    from ..confirm import TIMEOUT

    g = p.add_argument_group("stage 2: confirm candidates with a chat model")
    g.add_argument("--llm", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--model", metavar="NAME", help="model name at that endpoint (required with --llm)")
    g.add_argument("--key-env", metavar="VAR", help="environment variable holding the API key (never the key itself)")
    g.add_argument(
        "--timeout", metavar="S", type=float, default=TIMEOUT, help="seconds per call (default %(default)s)"
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "detect",
        help="classify conversation windows read as JSON lines on stdin",
        description="Reads JSON lines with prev_user, prev_assistant, user, assistant (and optionally id); "
        "writes one line each: {id, is_correction, kind, label}. Alone, the local detector decides at its "
        "standalone point. With --llm, its candidates are confirmed by the model there (one call each) and "
        "each line adds stage: 2 when the model decided, 1 when the local detector did (no candidate, or the "
        "call timed out, failed or answered garbage: one line on stderr). 'ichor detect refit' refits the "
        "local detector from the shipped model and this profile's keep/share/discard decisions.",
    )
    p.add_argument("action", nargs="?", choices=["refit"], help="refit the local detector from your decisions")
    p.add_argument("--json", action="store_true", help="with refit: the report as JSON")
    _add_model_options(p)
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
        "is_correction and kind (correction, retry or none). With --llm, reports the local detector alone and "
        "with the model confirming its candidates, the share of windows that reached the model, its fallbacks "
        "and the tokens per confirmation.",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_model_options(p)
    p.set_defaults(func=_eval)
