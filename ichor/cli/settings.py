"""Settings commands: where pairs are shared, and whether capture runs."""

from __future__ import annotations

import argparse

from .. import commands
from .common import CliError, open_store


def _run(build):
    def run(args) -> int:
        store = open_store(args)
        try:
            print(build(store, args))
        except commands.CommandError as exc:
            raise CliError(str(exc)) from None
        finally:
            store.close()
        return 0

    return run


def _toggle(on: bool):
    def build(store, args) -> str:
        return commands.toggle(store, on, ["--global"] if args.globally else [], args.scope)

    return _run(build)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("set", help="set repo NAME | set public | set private")
    p.add_argument("words", nargs="+", metavar="WORD", help="repo NAME, public or private")
    p.set_defaults(func=_run(lambda store, args: commands.set_setting(store, args.words)))

    for name, on in (("off", False), ("on", True)):
        verb = "resume" if on else "pause"
        p = sub.add_parser(name, help=f"{verb} capture everywhere (--global) or in one chat (--scope)")
        group = p.add_mutually_exclusive_group(required=True)
        group.add_argument("--global", dest="globally", action="store_true", help=f"{verb} in every chat")
        group.add_argument("--scope", help="the chat key the Hermes plugin shows in `/ichor off` replies")
        p.set_defaults(func=_toggle(on))
