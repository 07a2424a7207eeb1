"""The ``ichor`` command line. One module per command group; this file only assembles them."""

from __future__ import annotations

import argparse
import sys

from . import pairs, settings, tools
from .common import CliError

DESCRIPTION = """\
Manage the preference pairs ichor captured from your Hermes conversations, and run the detector
and the scrubber on your own data. Pairs live per Hermes profile in
$HERMES_HOME/plugin-data/ichor/ichor.db (HERMES_HOME defaults to ~/.hermes)."""

EPILOG = """\
examples:
  ichor status                     counts and top mistake types
  ichor review                     the oldest pending pair
  ichor keep 4                     keep pair 4 for training (never uploaded)
  ichor --home ~/.hermes/profiles/work status
  echo 'token sk-...' | ichor scrub
  ichor eval my-labelled-windows.jsonl"""


def _groups():
    groups = [pairs, settings, tools]
    try:
        from . import plugin
    except ImportError:  # the Hermes adapter is optional at import time
        return groups
    return [*groups, plugin]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ichor", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--home", metavar="PATH", help="Hermes home (profile) to use; default $HERMES_HOME or ~/.hermes"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in _groups():
        group.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except (CliError, UnicodeDecodeError, RecursionError) as exc:  # bad input bytes or absurd nesting
        print(f"ichor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ichor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
