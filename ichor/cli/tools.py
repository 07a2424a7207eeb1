"""Tool commands that need no store: run the detector, the scrubber, or an evaluation on your data."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import sys
import textwrap
from pathlib import Path

from .. import paths
from ..settings import KEY_ENV_MESSAGE, is_env_name
from .common import (
    BadLine,
    CliError,
    binary_stdin,
    check_home,
    open_store,
    print_json,
    read_json_lines,
    text_field,
    to_json,
    user_text,
)

DETECT_FIELDS = ("prev_user", "prev_assistant", "user", "assistant")
# The actions on this profile's refitted detector, each with the one option it takes.
PROFILE_ACTIONS = {"refit": "--json", "forget": "--yes"}
MAX_TIMEOUT = 600.0


# ------------------------------------------------------------------------------------ input


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


# ----------------------------------------------------------------------------------- detect


def _detect(args) -> int:
    for action, option in PROFILE_ACTIONS.items():
        if getattr(args, option[2:]) and args.target != action:
            raise CliError(f"{option} goes with 'ichor detect {action}' (see: ichor detect --help)")
    if args.target in PROFILE_ACTIONS:
        check_no_model_options(args, f"detect {args.target}")
        return _refit(args) if args.target == "refit" else _forget(args)
    check_home(args)
    complete = model_endpoint(args)
    model_path = refitted_model(args) if args.refitted else None
    seen = skipped = 0
    with opened_input(args.target) as (stream, where):
        for lineno, obj in read_json_lines(stream, where):
            seen += 1
            decided = decide_line(obj, where, lineno, complete, args.timeout, model_path)
            if isinstance(decided, BadLine):
                report_bad(decided)
                skipped += 1
                continue
            print_json(decided)
            sys.stdout.flush()
    if skipped:
        raise CliError(f"{skipped} of {seen} lines skipped")
    if complete is not None and complete.calls and not complete.answers:
        print(
            f"ichor: the model answered none of {complete.calls} calls ({complete.first_failure}): "
            "every line above is the local detector's decision",
            file=sys.stderr,
        )
        return 1
    return 0


def decide_line(obj, where: str, lineno: int, complete, timeout: float, model_path) -> dict | BadLine:
    """The output line for one input line, or why it has none."""
    if isinstance(obj, BadLine):
        return obj
    try:
        window = window_of(obj)
    except ValueError as exc:
        return BadLine(where, lineno, str(exc))
    if complete is None:
        from ..confirm import stage1

        return {"id": obj.get("id"), **_answer(stage1(window, "standalone", model_path))}
    from ..confirm import two_stage

    decision = two_stage(window, complete, timeout, model_path)
    return {"id": obj.get("id"), **_answer(decision), "stage": decision.stage}


def _answer(result) -> dict:
    return {"is_correction": result.is_correction, "kind": result.kind, "label": result.label}


# ------------------------------------------------------------------------- refit and forget


def profile_home(args) -> Path:
    """The Hermes home of --home or $HERMES_HOME, which must exist: a typo must not create a profile."""
    home = paths.hermes_home(getattr(args, "home", None))
    if not home.is_dir():
        raise CliError(f"no Hermes home at {home} (check --home or $HERMES_HOME)")
    return home


def refitted_model(args) -> Path:
    """This profile's refitted detector (``--refitted``); a clear error when it has none."""
    from ..detect_refit import profile_model_path

    home = profile_home(args)
    if paths.db_path(home).exists():
        with open_store(args, read_only_ok=True) as store:
            path = profile_model_path(store)
        if path.is_file():
            return path
    raise CliError(f"no refitted detector in {home} (make one with: ichor detect refit)")


def _refit(args) -> int:
    from ..detect_refit import refit

    profile_home(args)
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
        "undo: ichor detect forget --yes (the shipped detector decides again)",
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


# -------------------------------------------------------------------------------- stage 2


def timeout_seconds(raw: str) -> float:
    """``--timeout``: a finite number of seconds above 0, at most ``MAX_TIMEOUT``."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}")
    return value


def check_no_model_options(args, what: str) -> None:
    for option in ("--llm", "--model", "--key-env", "--timeout", "--refitted"):
        if getattr(args, option[2:].replace("-", "_")) not in (None, False):
            raise CliError(f"{option} does not go with 'ichor {what}'")


def check_model_options(args) -> None:
    """--model, --key-env and --timeout only with --llm; --llm needs a URL and --model; --key-env a name."""
    if args.llm is None:
        for option in ("--model", "--key-env", "--timeout"):
            if getattr(args, option[2:].replace("-", "_")) is not None:
                raise CliError(f"{option} goes with --llm URL")
        return
    if not args.llm.strip():
        raise CliError("--llm needs the endpoint's URL, e.g. http://127.0.0.1:8080/v1")
    if not args.model:
        raise CliError("--llm needs --model NAME")
    if args.key_env is not None and not is_env_name(args.key_env):
        raise CliError(KEY_ENV_MESSAGE)  # the value may be the key itself: never echo it
    if args.key_env and not os.environ.get(args.key_env):
        raise CliError(f"environment variable {args.key_env} (from --key-env) is not set")


class Endpoint:
    """``complete_fn`` for stage 2 at ``--llm URL --model NAME`` (key from ``--key-env``); it remembers
    the first failure, to name it when no call succeeds."""

    def __init__(self, args):
        self.url, self.model, self.key_env = args.llm, args.model, args.key_env
        self.first_failure: str | None = None
        self.calls = self.answers = 0

    def __call__(self, messages, timeout):
        from ..confirm import MAX_TOKENS
        from ..openai_chat import ChatError, complete

        self.calls += 1
        try:
            answer = complete(
                messages,
                url=self.url,
                model=self.model,
                api_key_env=self.key_env,
                timeout=timeout,
                max_tokens=MAX_TOKENS,
                temperature=0.0,
            )
        except ChatError as exc:
            self.first_failure = self.first_failure or str(exc)
            raise
        self.answers += 1
        return answer


def model_endpoint(args) -> Endpoint | None:
    """The stage 2 endpoint of ``--llm``, or None without it; the options are checked first."""
    check_model_options(args)
    if args.llm is None:
        return None
    from ..confirm import TIMEOUT

    args.timeout = args.timeout or TIMEOUT
    return Endpoint(args)


# ------------------------------------------------------------------------------------ scrub


def _scrub(args) -> int:
    from ..scrub import scrub

    if not args.jsonl:
        result = scrub(stdin_text())
        print_json({"text": result.text, "removed": result.removed})
        return 0
    seen = skipped = 0
    for lineno, obj in read_json_lines():
        seen += 1
        try:
            text = obj if isinstance(obj, BadLine) else text_field(obj, "text")
        except ValueError as exc:
            text = BadLine("stdin", lineno, str(exc))
        if isinstance(text, BadLine):
            report_bad(text)
            skipped += 1
            continue
        result = scrub(text)
        print_json({"id": obj.get("id"), "text": result.text, "removed": result.removed})
    if skipped:
        raise CliError(f"{skipped} of {seen} lines skipped")
    return 0


def stdin_text() -> str:
    """All of stdin as UTF-8 text (a leading BOM dropped); invalid UTF-8 is an error, never replaced."""
    data = b"".join(binary_stdin())
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise CliError(f"stdin: not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte {exc.start + 1})") from None


# ------------------------------------------------------------------------------------- eval

MAX_BAD_SHOWN = 5
GOLD_KINDS = ("correction", "retry", "none")


def load_windows(path: str) -> list[dict]:
    """Labelled windows (the dev set's format); a file with any bad line is refused, its first
    ``MAX_BAD_SHOWN`` bad lines listed on stderr."""
    rows, bad = [], []
    with opened_input(path) as (stream, where):
        for lineno, obj in read_json_lines(stream, where):
            problem = obj if isinstance(obj, BadLine) else labelled_problem(obj, where, lineno)
            if problem:
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
    if "kind" in obj and kind not in GOLD_KINDS:
        return BadLine(where, lineno, f"field 'kind' must be one of {', '.join(GOLD_KINDS)} (or absent)")
    if "kind" in obj and (kind != "none") != flag:
        return BadLine(where, lineno, f"'kind': {json.dumps(kind)} disagrees with 'is_correction': {json.dumps(flag)}")
    return None


def _eval(args) -> int:
    from ..evaluate import evaluate, format_report, with_nulls

    check_home(args)
    complete = model_endpoint(args)
    model_path = refitted_model(args) if args.refitted else None
    rows = load_windows(args.file)
    if complete is None:
        from ..detect import detect

        metrics = evaluate(rows, functools.partial(detect, model_path=model_path))
        print(to_json(with_nulls(metrics), indent=2) if args.json else format_report(metrics))
        return 0
    from ..evaluate import evaluate_two_stage, format_two_stage

    report = evaluate_two_stage(rows, complete, args.timeout, model_path)
    print(to_json(with_nulls(report), indent=2) if args.json else format_two_stage(report))
    return _stage2_verdict(report, complete)


def _stage2_verdict(report: dict, endpoint: Endpoint) -> int:
    """Exit 1, saying why, when stage 2 answered no call at all: its figures are then stage 1's."""
    asked, answered = report["reached_stage2"]["k"], report["answered_stage2"]
    if not asked or answered:
        return 0
    reason = endpoint.first_failure or ", ".join(sorted(report["fallbacks"])) or "no answer"
    sys.stdout.flush()
    print(
        f"ichor: stage 2 answered none of {asked} calls ({reason}): the stage 1 + 2 figures are stage 1's",
        file=sys.stderr,
    )
    return 1


# ----------------------------------------------------------------------------------- parsers


def _add_model_options(p: argparse.ArgumentParser) -> None:
    from ..confirm import TIMEOUT

    g = p.add_argument_group("stage 2: confirm candidates with a chat model")
    g.add_argument("--llm", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--model", metavar="NAME", help="model name at that endpoint (required with --llm)")
    g.add_argument(
        "--key-env", metavar="VAR", help="name of the environment variable holding the API key (never the key)"
    )
    g.add_argument(
        "--timeout",
        metavar="S",
        type=timeout_seconds,
        help=f"seconds per call, above 0 and at most {MAX_TIMEOUT:g} (default {TIMEOUT:g})",
    )


REFITTED_HELP = (
    "use this profile's refitted detector (made by 'ichor detect refit'); by default the shipped detector decides"
)

DETECT_EPILOG = """\
example:
  echo '{"id": 1, "prev_user": "install deps", "prev_assistant": "npm install", "user": "no, use pnpm"}' \\
    | ichor detect
  {"id": 1, "is_correction": true, "kind": "correction", "label": "..."}"""

EVAL_EPILOG = """\
example:
  ichor eval corrections-dev.jsonl                 precision, recall and F1 of the shipped detector
  ichor eval corrections-dev.jsonl --llm http://127.0.0.1:8080/v1 --model qwen --key-env OPENAI_API_KEY"""


def _wrapped(text: str) -> str:
    """A description wrapped by hand: the raw formatter that keeps the example's lines does not wrap."""
    return textwrap.fill(text, 100)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "detect",
        help="classify conversation windows read as JSON lines (FILE or stdin)",
        description=_wrapped(
            "Reads JSON lines with user (required), prev_user, prev_assistant, assistant (absent: empty) "
            "and optionally id; writes one line each: {id, is_correction, kind, label}. A bad line is reported on "
            "stderr and skipped; the exit status is then 2. Alone, the local detector decides at its standalone "
            "point. With --llm, its candidates are confirmed by the model there (one call each) and each line adds "
            "stage: 2 when the model decided, 1 when the local detector did (no candidate, or the call timed out, "
            "failed or answered garbage: one line on stderr). 'ichor detect refit' refits the local detector from "
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
    p.add_argument("--refitted", action="store_true", help=REFITTED_HELP)
    _add_model_options(p)
    p.set_defaults(func=_detect)

    p = sub.add_parser(
        "scrub",
        help="scrub secrets and personal data from stdin",
        description="Prints {text, removed}. With --jsonl, each input line {id, text} gives {id, text, removed}; "
        "a bad line is reported on stderr and skipped (exit status 2).",
    )
    p.add_argument("--jsonl", action="store_true", help="read and write JSON lines")
    p.set_defaults(func=_scrub)

    p = sub.add_parser(
        "eval",
        help="precision, recall and F1 (95%% Wilson intervals) of the detector on labelled windows",
        description=_wrapped(
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
    p.add_argument("--refitted", action="store_true", help=REFITTED_HELP)
    _add_model_options(p)
    p.set_defaults(func=_eval)
