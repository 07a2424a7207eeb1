"""``ichor eval``: the detector's precision, recall and F1 on labelled windows, alone and with a confirming
model."""

from __future__ import annotations

import argparse
import functools
import json

from ..confirm import Tally
from ..detect import KINDS
from .common import (
    BadLine,
    CliError,
    opened_input,
    read_json_lines,
    report_bad,
    to_json,
    window_of,
    wrapped,
)
from .detector_options import (
    add_detector_options,
    chosen_detector,
    few_fallback_lines,
    stage2_verdict,
)

MAX_BAD_SHOWN = 5


def load_windows(path: str) -> list[dict]:
    """Labelled windows (the dev set's format); a file with any bad line is refused, its first
    ``MAX_BAD_SHOWN`` bad lines listed on stderr."""
    rows: list[dict] = []
    bad: list[BadLine] = []
    with opened_input(path) as (stream, where):
        for lineno, obj in read_json_lines(stream, where):
            if isinstance(obj, BadLine):
                bad.append(obj)
            elif problem := labelled_problem(obj, where, lineno):
                bad.append(problem)
            else:
                rows.append(obj)
    if bad:
        for problem in bad[:MAX_BAD_SHOWN]:
            report_bad(problem)
        more = f", the first {MAX_BAD_SHOWN} above" if len(bad) > MAX_BAD_SHOWN else ""
        raise CliError(f"{where}: {len(bad)} bad line{'s' * (len(bad) > 1)}{more}; nothing evaluated")
    if not rows:
        raise CliError(f"{where}: no labelled windows")
    return rows


def labelled_problem(obj: dict, where: str, lineno: int) -> BadLine | None:
    """Why a labelled window can't be scored, or None."""
    try:
        window_of(obj)
    except ValueError as exc:
        return BadLine(where, lineno, str(exc))
    flag, kind = obj.get("is_correction"), obj.get("kind")
    if not isinstance(flag, bool):
        return BadLine(where, lineno, "field 'is_correction' must be true or false")
    if "kind" in obj and kind not in KINDS:
        return BadLine(where, lineno, f"field 'kind' must be one of {', '.join(KINDS)} (or absent)")
    if "kind" in obj and (kind != "none") != flag:
        return BadLine(where, lineno, f"'kind': {json.dumps(kind)} disagrees with 'is_correction': {json.dumps(flag)}")
    return None


def _eval(args) -> int:
    from ..evaluate import evaluate, format_report, with_nulls

    complete, model_path = chosen_detector(args)
    rows = load_windows(args.file)
    if complete is None:
        from ..detect import detect

        metrics = evaluate(rows, functools.partial(detect, model_path=model_path))
        print(to_json(with_nulls(metrics), indent=2) if args.json else format_report(metrics))
        return 0
    from ..evaluate import evaluate_two_stage, format_two_stage

    with few_fallback_lines():
        report = evaluate_two_stage(rows, complete, args.timeout, model_path)
    print(to_json(with_nulls(report), indent=2) if args.json else format_two_stage(report))
    tally = Tally(report["reached_stage2"]["k"], report["answered_stage2"], report["fallbacks"])
    return stage2_verdict(tally, complete, "the stage 1 + 2 figures are stage 1's")


EVAL_EPILOG = """\
example:
  ichor eval corrections-dev.jsonl                 precision, recall and F1 of the shipped detector
  ichor eval corrections-dev.jsonl --llm http://127.0.0.1:8080/v1 --model qwen --key-env OPENAI_API_KEY"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="precision, recall and F1 (95%% Wilson intervals) of the detector on labelled windows",
        description=wrapped(
            "Scores the detector on labelled windows. With --llm, reports the local detector alone and "
            "with the model confirming its candidates, the share of windows that reached the model, its fallbacks "
            "and the tokens per confirmation; when the model answered no call, says so and exits 1."
        ),
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="JSON lines like the dev set (- reads stdin): user, is_correction (true/false), and optionally "
        "prev_user, prev_assistant, assistant, kind (correction, retry or none: it must agree with "
        "is_correction) and source (the repository a window comes from: it drives the F1 interval over "
        "repositories and the warning about repositories the shipped detector was fitted on). "
        "A file with a bad line is refused.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_detector_options(p)
    p.set_defaults(func=_eval)
