"""The ``ichor`` command line: argparse built from ``ichor.commands.VERBS``, plus the shell-only tools."""

from __future__ import annotations

import argparse
import os
import sys

from .. import DISTRIBUTION, __version__, commands
from ..settings import SettingError
from ..store import StoreError
from ..verbs import SHELL, CommandError, Result, SuggestingParser, Verb, add_arguments, help_text
from . import completion, detect, evaluation, scrub
from .common import CliError, one_line, open_store, print_json

DESCRIPTION = """\
Manage the preference pairs ichor captured from your Hermes conversations, and run the detector
and the scrubber on your own data. Pairs live per Hermes profile in
$HERMES_HOME/plugin-data/ichor/ichor.db (HERMES_HOME defaults to ~/.hermes).
In a Hermes chat the same commands are /ichor COMMAND."""

EPILOG = """\
examples:
  ichor list --status pending      what is waiting for a decision
  ichor show 4                     pair 4 in full
  ichor keep 4 5 7                 keep pairs 4, 5 and 7 for training (never uploaded)
  ichor share --dry-run            what `ichor share` would upload, and where
  ichor status --home ~/.hermes/profiles/work
  echo 'token sk-...' | ichor scrub
  ichor detect windows.jsonl       classify conversation windows (JSON lines) with the local detector
  ichor eval labelled.jsonl        precision, recall and F1 of the detector on your labelled windows
  ichor completion bash > ~/.local/share/bash-completion/completions/ichor"""

STDOUT_CLOSED = "stdout is closed: nowhere to write the output"
HOME_HELP = "Hermes home (profile) to use; default $HERMES_HOME or ~/.hermes. Accepted anywhere on the line"


def _groups():
    groups = [detect, scrub, evaluation, completion]
    try:
        from . import plugin
    except ImportError:  # the Hermes adapter is optional at import time
        return groups
    return [*groups, plugin]


def _verb_runner(verb: Verb):
    def run(args) -> int:
        result = _run_verb(verb, args)
        if getattr(args, "json", False):
            print_json(result.data)
        elif result.text:
            print(result.text)
        return 0

    return run


def _run_verb(verb: Verb, args) -> Result:
    store = open_store(args, read_only_ok=verb.reads_only) if verb.needs_store else None
    try:
        return verb.handler(commands.Context(store, SHELL), args)
    except (CommandError, StoreError, SettingError) as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}") from None
    finally:
        if store is not None:
            store.close()


class _ShellParser(SuggestingParser):
    """argparse whose usage errors are one line, like every other ichor error."""

    def error(self, message: str):
        self.exit(2, f"ichor: {one_line(message)} (see: {self.prog} --help)\n")

    def _print_message(self, message: str, file=None) -> None:
        # argparse swallows a failed write (--help > /dev/full): let it reach main, which says so. No file
        # means argparse meant stdout, and it is closed.
        if message:
            if file is None:
                raise CliError(STDOUT_CLOSED)
            file.write(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _ShellParser(
        prog="ichor", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", metavar="PATH", help=HOME_HELP)
    parser.add_argument("--version", action="version", version=f"ichor {__version__} ({DISTRIBUTION})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for verb in commands.VERBS:
        p = sub.add_parser(verb.name, help=verb.help, description=verb.help)
        add_arguments(p, verb, SHELL)
        p.set_defaults(func=_verb_runner(verb))
    for group in _groups():
        group.add_parser(sub)
    for p in sub.choices.values():
        if "--home" not in p._option_string_actions:
            p.add_argument("--home", metavar="PATH", default=argparse.SUPPRESS, help=HOME_HELP)
    return parser


def shell_help(parser: argparse.ArgumentParser) -> str:
    """``ichor help``: the verbs, then the shell-only tools."""
    tools_rows = [
        (f"ichor {name}", text)
        for name, text in completion.subcommand_helps(parser).items()
        if name not in commands.VERB_BY_NAME
    ]
    width = max(len(u) for u, _ in tools_rows)
    return (
        help_text(commands.VERBS, SHELL)
        + "\n\nshell-only tools:\n"
        + "\n".join(f"{u.ljust(width)}  {t}" for u, t in tools_rows)
        + "\n\nichor --version · ichor COMMAND --help · in a Hermes chat: /ichor help"
    )


def _silence_stdout() -> None:
    """The reader went away (``ichor list | head -1``) or the output can't be written: drop the rest of it,
    so the interpreter's last flush at exit can't fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):  # no stdout at all (``>&-``)
        pass


def _flush_or_silence() -> None:
    """Keep what was printed if stdout still takes it; drop it if stdout is what failed."""
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError, OSError):
        _silence_stdout()


def _command_help(parser: argparse.ArgumentParser, name: str) -> str | None:
    """``ichor help NAME`` for a shell-only command (detect, eval, scrub…): its --help; None for a verb."""
    if name in commands.VERB_BY_NAME:
        return None
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices.get(name)
    return command.format_help().rstrip() if command else None


def _run(parser: argparse.ArgumentParser, args) -> int:
    if sys.stdout is None:
        raise CliError(STDOUT_CLOSED)
    if args.command == "help":
        text = shell_help(parser) if not args.verb else _command_help(parser, args.verb)
        if text is not None:
            print(text)
            return 0
    return args.func(args) or 0


def _output_error(exc: OSError) -> str:
    names = " → ".join(str(name) for name in (exc.filename, exc.filename2) if name)
    where = f": {names}" if names else " (the output)"
    return f"can't write{where}: {exc.strerror or exc}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        code = _parse_and_run(parser, argv)
        if sys.stdout is not None:
            sys.stdout.flush()  # here, so a full disk is reported like any other failed write
        return code
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:  # a full disk (``> /dev/full``) or another failed write
        _flush_or_silence()
        print(f"ichor: {one_line(_output_error(exc))}", file=sys.stderr)
        return 2
    except UnicodeEncodeError as exc:  # text for a stdout that can't hold it (PYTHONIOENCODING=ascii)
        _flush_or_silence()
        print(f"ichor: stdout's encoding ({exc.encoding}) can't hold this text: use UTF-8", file=sys.stderr)
        return 2
    except (CliError, UnicodeDecodeError, RecursionError) as exc:  # bad input bytes or absurd nesting
        print(f"ichor: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ichor: interrupted", file=sys.stderr)
        return 130


def _parse_and_run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed as one line
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return _run(parser, args)


if __name__ == "__main__":
    sys.exit(main())
