"""``ichor detect``: classify windows with the local detector (and a confirming model), and refit or forget
this profile's own detector."""

from __future__ import annotations

import argparse
import sys

from .. import paths
from ..confirm import Tally
from .common import (
    BadLine,
    CliError,
    open_store,
    opened_input,
    print_json,
    read_json_lines,
    report_bad,
    to_json,
    window_of,
    wrapped,
)
from .detector_options import (
    add_detector_options,
    check_no_model_options,
    chosen_detector,
    few_fallback_lines,
    profile_home,
    stage2_verdict,
)

# The actions on this profile's refitted detector, each with the one option it takes.
PROFILE_ACTIONS = {"refit": "--json", "forget": "--yes"}


def _detect(args) -> int:
    for action, option in PROFILE_ACTIONS.items():
        if getattr(args, option[2:]) and args.target != action:
            raise CliError(f"{option} goes with 'ichor detect {action}' (see: ichor detect --help)")
    if args.target in PROFILE_ACTIONS:
        check_no_model_options(args, f"detect {args.target}")
        return _refit(args) if args.target == "refit" else _forget(args)
    complete, model_path = chosen_detector(args)
    seen = skipped = 0
    decisions = []
    with opened_input(args.target) as (stream, where), few_fallback_lines():
        for lineno, obj in read_json_lines(stream, where):
            seen += 1
            decided = decide_line(obj, where, lineno, complete, args.timeout, model_path)
            if isinstance(decided, BadLine):
                report_bad(decided)
                skipped += 1
                continue
            line, decision = decided
            decisions.append(decision)
            print_json(line)
            sys.stdout.flush()
    if skipped:
        raise CliError(f"{skipped} of {seen} lines skipped")
    if complete is None:
        return 0
    return stage2_verdict(Tally.of(decisions), complete, "every line above is the local detector's decision")


def decide_line(obj, where: str, lineno: int, complete, timeout: float, model_path):
    """``(output line, decision)`` for one input line, or why it has none."""
    if isinstance(obj, BadLine):
        return obj
    try:
        window = window_of(obj)
    except ValueError as exc:
        return BadLine(where, lineno, str(exc))
    from ..confirm import Decision, stage1, two_stage

    if complete is None:
        found = stage1(window, "standalone", model_path)
        decision = Decision(found.is_correction, found.kind, found.label, 1)
        return {"id": obj.get("id"), **_answer(decision)}, decision
    decision = two_stage(window, complete, timeout, model_path)
    return {"id": obj.get("id"), **_answer(decision), "stage": decision.stage}, decision


def _answer(result) -> dict:
    return {"is_correction": result.is_correction, "kind": result.kind, "label": result.label}


def _refit(args) -> int:
    from ..detect_refit import refit

    if not paths.db_path(profile_home(args)).exists():
        report = {"decisions": 0, "positives": 0, "models": {}, "written": None}  # no profile: nothing decided
    else:
        with open_store(args) as store:
            report = refit(store)
    print(to_json(report, indent=2) if args.json else format_refit(report))
    return 0


MODEL_WORDS = {"reply": "windows with the assistant's reply", "no_reply": "windows without the assistant's reply"}


def format_refit(report: dict) -> str:
    if not report["decisions"]:
        return "no decisions yet: keep, share or discard some cards first (the shipped detector stays)"
    n = report["decisions"]
    lines = [
        f"refit from {n} decisions ({report['positives']} kept or shared): {report['written']}",
        f"agreement with those {n} decisions, the ones it was fitted on (so not a measure of quality):",
    ]
    for words, m in _distinct_models(report["models"]):
        lines.append(f"  {words}: {m['agree_before']}/{m['of']} before, {m['agree_after']}/{m['of']} after")
    lines += [
        "the refitted detector now decides in Hermes for this profile "
        "(from a shell: ichor detect --refitted, ichor eval FILE --refitted)",
        "to undo it: ichor detect forget --yes (deletes it and your recorded decisions; "
        "the shipped detector decides again)",
    ]
    return "\n".join(lines)


def _distinct_models(models: dict) -> list[tuple[str, dict]]:
    """One row per distinct set of figures: both models often agree with the same decisions alike."""
    rows = [(name, m) for name, m in models.items() if m["of"]]
    figures = {(m["agree_before"], m["agree_after"], m["of"]) for _, m in rows}
    if len(rows) > 1 and len(figures) == 1:
        return [("windows with or without the assistant's reply", rows[0][1])]
    return [(MODEL_WORDS.get(name, name), m) for name, m in rows]


def _forget(args) -> int:
    from ..detect_refit import DECISIONS, forget, profile_dir, profile_model_path

    home = profile_home(args)
    if not paths.db_path(home).exists():
        print(f"nothing to forget: no ichor profile in {home}")
        return 0
    with open_store(args, read_only_ok=not args.yes) as store:
        present = [p for p in (profile_dir(store) / DECISIONS, profile_model_path(store)) if p.exists()]
        if not present:
            print("nothing to forget: this profile has no decision log and no refitted detector")
            return 0
        listed = " and ".join(str(p) for p in present)
        if not args.yes:
            raise CliError(f"this deletes {listed}; confirm with: ichor detect forget --yes")
        forget(store)
    print(f"deleted {listed}: the shipped detector decides again")
    return 0


DETECT_EPILOG = """\
example:
  echo '{"id": 1, "prev_user": "install deps", "prev_assistant": "npm install", "user": "no, use pnpm"}' \\
    | ichor detect
  {"id": 1, "is_correction": true, "kind": "correction", "label": "..."}"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "detect",
        help="classify conversation windows read as JSON lines (FILE or stdin)",
        description=wrapped(
            "Reads JSON lines with user (required), prev_user, prev_assistant, assistant (absent: empty) "
            "and optionally id; writes one line each: {id, is_correction, kind, label}. A bad line is reported on "
            "stderr and skipped; the exit status is then 2. Alone, the local detector decides at its standalone "
            "point. With --llm, its candidates are confirmed by the model there (one call each) and each line adds "
            "stage: 2 when the model decided, 1 when the local detector did (no candidate, or the call timed out, "
            "failed or answered garbage: a line on stderr, the first three in full, then a count); when no call "
            "was answered, the last line on stderr "
            "says so and the exit status is 1. 'ichor detect refit' refits the local detector from "
            "the shipped model and this profile's keep/share/discard decisions; 'ichor detect forget' deletes them "
            "and the refitted detector."
        ),
        epilog=DETECT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        nargs="?",
        metavar="FILE|refit|forget",
        help="JSON lines to classify (default or -: stdin; a file named refit or forget: ./refit), "
        "or refit / forget this profile's refitted detector",
    )
    p.add_argument("--json", action="store_true", help="with refit: the report as JSON")
    p.add_argument("--yes", action="store_true", help="with forget: delete without asking")
    add_detector_options(p)
    p.set_defaults(func=_detect)
