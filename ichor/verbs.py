"""The command layer's machinery: a verb is declared once and drives both ``/ichor`` and ``ichor``.

A ``Verb`` names its typed arguments (``Arg``) and a handler that returns a ``Result``. From that one
declaration come the argparse parser of the shell, the parser of the slash command, both help texts,
"did you mean" for typos and shell completion. ``Surface`` says where the text is shown, so a reply
tells a shell user to type ``ichor keep 3`` and a chat user ``/ichor keep 3``.
"""

from __future__ import annotations

import argparse
import difflib
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

SurfaceName = Literal["shell", "chat"]


class CommandError(Exception):
    """Bad input to a verb: one line for the user (exit status 2 in a shell)."""


@dataclass(frozen=True)
class Surface:
    """Where a command runs and its reply is read."""

    name: SurfaceName
    scope: str | None = None  # the chat a /ichor command came from (for /ichor off)

    @property
    def command(self) -> str:
        return "ichor" if self.name == "shell" else "/ichor"

    def say(self, words: str) -> str:
        """``keep 3`` as the user would type it here."""
        return f"{self.command} {words}"


SHELL = Surface("shell")


@dataclass
class Result:
    """What a verb did: the text to show, the data ``--json`` prints, the pairs whose status changed."""

    text: str
    data: Any = None
    decided: tuple[int, ...] = ()
    ok: bool = True


@dataclass(frozen=True)
class Arg:
    """One argument of a verb. A name starting with ``--`` is an option, anything else positional."""

    name: str
    help: str
    type: Callable[[str], Any] = str
    nargs: str | None = None  # "?", "*" or "+"
    choices: tuple[str, ...] = ()
    flag: bool = False  # an option that takes no value
    metavar: str | None = None
    shell_only: bool = False  # meaningless in chat (--json, --out, --scope)

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    def usage(self) -> str:
        if self.name.startswith("--"):
            return f"[{self.name}]" if self.flag else f"[{self.name} {self.metavar or self.dest.upper()}]"
        shown = self.metavar or ("|".join(self.choices) if self.choices else self.name.upper())
        if self.nargs == "+":
            return f"{shown}…"
        if self.nargs == "*":
            return f"[{shown}…]"
        if self.nargs == "?":
            return f"[{shown}]"
        return shown


@dataclass(frozen=True)
class Verb:
    name: str
    help: str
    handler: Callable[..., Result]
    args: tuple[Arg, ...] = ()
    chat: bool = True  # offered as /ichor NAME
    needs_store: bool = True
    reads_only: bool = False  # works on a store that can't be written (shown as it is, said so)

    def usage(self, surface: Surface) -> str:
        parts = [a.usage() for a in self.args if surface.name == "shell" or not a.shell_only]
        return " ".join([self.name, *parts])


def add_arguments(parser: argparse.ArgumentParser, verb: Verb, surface: Surface) -> None:
    for arg in verb.args:
        if arg.shell_only and surface.name != "shell":
            continue
        if arg.flag:
            parser.add_argument(arg.name, action="store_true", help=arg.help)
            continue
        kwargs: dict[str, Any] = {"help": arg.help, "type": arg.type}
        if arg.nargs:
            kwargs["nargs"] = arg.nargs
        if arg.choices:
            kwargs["choices"] = arg.choices
        if arg.metavar:
            kwargs["metavar"] = arg.metavar
        parser.add_argument(arg.name, **kwargs)


def suggestion(word: str, known: Sequence[str]) -> str:
    """`` (did you mean keep?)`` for a near miss, else nothing."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class SuggestingParser(argparse.ArgumentParser):
    """argparse that answers an unknown command with the nearest known one."""

    def _check_value(self, action, value):
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            known = sorted(action.choices)
            raise argparse.ArgumentError(None, f"unknown command {value!r}{suggestion(value, known)}")
        super()._check_value(action, value)


class _ChatParser(SuggestingParser):
    """argparse for the slash command: errors are raised, never printed, and nothing exits."""

    def error(self, message: str):
        raise CommandError(f"{message} (try {self.prog.split()[0]} help)")

    def exit(self, status: int = 0, message: str | None = None):
        raise CommandError(message or "")


def chat_parser(verbs: Sequence[Verb], surface: Surface) -> argparse.ArgumentParser:
    parser = _ChatParser(prog=surface.command, add_help=False)
    sub = parser.add_subparsers(dest="verb")
    for verb in verbs:
        if verb.chat:
            add_arguments(sub.add_parser(verb.name, add_help=False, prog=surface.say(verb.name)), verb, surface)
    return parser


def parse_chat(verbs: Sequence[Verb], argstring: str, surface: Surface) -> tuple[Verb, argparse.Namespace]:
    """The verb and arguments of ``/ichor ARGSTRING``; bare ``/ichor`` is ``status``."""
    try:
        words = shlex.split(argstring or "")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if not words:
        words = ["status"]
    words[0] = words[0].lower()
    by_name = {v.name: v for v in verbs if v.chat}
    if words[0] not in by_name:
        shell_only = any(v.name == words[0] for v in verbs)
        if shell_only:
            raise CommandError(f"{words[0]} runs in a shell only: ichor {words[0]}")
        raise CommandError(f"unknown command {words[0]!r}{suggestion(words[0], sorted(by_name))} (try /ichor help)")
    namespace = chat_parser(verbs, surface).parse_args(words)
    return by_name[words[0]], namespace


def help_table(verbs: Sequence[Verb], surface: Surface) -> list[tuple[str, str]]:
    """(usage, help) for every verb offered on ``surface``."""
    return [(surface.say(v.usage(surface)), v.help) for v in verbs if surface.name == "shell" or v.chat]


def help_text(verbs: Sequence[Verb], surface: Surface) -> str:
    rows = help_table(verbs, surface)
    width = max(len(usage) for usage, _ in rows)
    return "\n".join(f"{usage.ljust(width)}  {text}" for usage, text in rows)


def markdown_table(verbs: Sequence[Verb]) -> str:
    """The README's command table: the shell form, the chat form and what it does."""
    chat = Surface("chat")
    lines = ["| in a shell | in a Hermes chat | what it does |", "|---|---|---|"]
    for verb in verbs:
        shell_form = f"`{SHELL.say(verb.usage(SHELL))}`"
        chat_form = f"`{chat.say(verb.usage(chat))}`" if verb.chat else "shell only"
        lines.append(f"| {shell_form} | {chat_form} | {verb.help} |")
    return "\n".join(lines)
