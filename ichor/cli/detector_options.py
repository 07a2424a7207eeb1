"""The options ``detect`` and ``eval`` share: which detector decides (``--refitted``) and the chat model that
confirms its candidates (``--llm`` and the rest of stage 2)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
from pathlib import Path

from .. import paths
from ..confirm import Tally
from ..settings import is_env_name
from .common import CliError, check_home, open_store

MAX_TIMEOUT = 600.0


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
        raise CliError("--key-env takes the name of an environment variable, not a key")  # never echo a key
    if args.key_env and not os.environ.get(args.key_env):
        raise CliError(f"environment variable {args.key_env} (from --key-env) is not set")


class Endpoint:
    """``complete_fn`` for stage 2 at ``--llm URL --model NAME`` (key from ``--key-env``); it remembers
    the first failure, to name it when no call succeeds."""

    def __init__(self, args):
        self.url, self.model, self.key_env = args.llm, args.model, args.key_env
        self.first_failure: str | None = None

    def __call__(self, messages, timeout):
        from ..confirm import MAX_TOKENS
        from ..openai_chat import ChatError, complete

        try:
            return complete(
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


def chosen_detector(args) -> tuple[Endpoint | None, Path | None]:
    """What ``detect`` and ``eval`` decide with: the stage 2 endpoint (None without --llm) and the refitted
    detector's path (None: the shipped one). Every option is checked first."""
    check_home(args)
    complete = model_endpoint(args)
    return complete, refitted_model(args) if args.refitted else None


def model_endpoint(args) -> Endpoint | None:
    """The stage 2 endpoint of ``--llm``, or None without it; the options are checked first."""
    check_model_options(args)
    if args.llm is None:
        return None
    from ..confirm import TIMEOUT

    args.timeout = args.timeout or TIMEOUT
    return Endpoint(args)


REFITTED_HELP = (
    "use this profile's refitted detector (made by 'ichor detect refit'); by default the shipped detector decides"
)


def add_detector_options(p: argparse.ArgumentParser) -> None:
    """The options ``chosen_detector`` reads: --refitted, and stage 2's."""
    from ..confirm import TIMEOUT

    p.add_argument("--refitted", action="store_true", help=REFITTED_HELP)
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


def stage2_verdict(tally: Tally, endpoint: Endpoint, consequence: str) -> int:
    """Exit 1, saying why and what it means, when windows reached stage 2 but no answer decided one."""
    if not tally.asked or tally.answered:
        return 0
    reason = endpoint.first_failure or ", ".join(sorted(tally.fallbacks)) or "no answer"
    sys.stdout.flush()
    print(f"ichor: stage 2 answered none of {tally.asked} calls ({reason}): {consequence}", file=sys.stderr)
    return 1


FALLBACK_LINES_SHOWN = 3


@contextlib.contextmanager
def few_fallback_lines(shown: int = FALLBACK_LINES_SHOWN):
    """Stage 2's fallback lines on stderr: the first ``shown`` in full, then how many more there were (a
    dead endpoint would otherwise print one per window)."""
    handler = _FirstFew(shown)
    logger = logging.getLogger("ichor.confirm")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        if handler.hidden:
            print(f"ichor: {handler.hidden} more stage-2 fallbacks like these", file=sys.stderr)


class _FirstFew(logging.Handler):
    def __init__(self, shown: int):
        super().__init__(logging.WARNING)
        self.shown, self.hidden = shown, 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.shown:
            self.shown -= 1
            print(record.getMessage(), file=sys.stderr)
        else:
            self.hidden += 1
