"""The ``/ichor`` verbs, shared by the Hermes slash command and the ``ichor`` CLI.

Each verb is a short function that takes the store and returns the reply text. ``run`` parses one
argument string (what Hermes hands a slash-command handler) and dispatches it.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from . import card, detect_refit
from .export import ExportConfig, write_export
from .store import EXPORTED_STATUSES, Store, StoreError


class CommandError(Exception):
    """Bad input to a verb: one line for the user, exit status 2 on the CLI."""


USAGE = """\
/ichor                       counts and your top mistake types
/ichor review                the oldest pending pair, as a card
/ichor keep|share|discard ID set a pair's status (share queues it for upload)
/ichor export                write dpo.jsonl, atropos/pairs.jsonl and atropos_env/
/ichor share                 upload the queued pairs to your Hugging Face dataset
/ichor set repo NAME         dataset name for /ichor share (default ichor-pairs)
/ichor set public|private    visibility of a newly created dataset (default private)
/ichor off|on [--global]     pause or resume capture in this chat, or everywhere
/ichor forget-all yes        delete every stored pair"""

REPO_NAME = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
DEFAULT_REPO = "ichor-pairs"


def parse_id(text: str) -> int:
    # "²" and huge ids crashed; more than 19 digits can't be a SQLite rowid (and int() refuses 4,300+)
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or not 0 < int(text) < 2**63:
        shown = text if len(text) <= 24 else f"{text[:20]}… ({len(text)} characters)"
        raise CommandError(f"not a pair id: {shown!r} (ids are positive whole numbers)")
    return int(text)


def status_data(store: Store) -> dict:
    """The machine form of ``/ichor``: counts by status and the top mistake types."""
    return {**store.counts(), "top_labels": [[label, n] for label, n in store.top_labels()]}


def status(store: Store) -> str:
    data = status_data(store)
    line = " · ".join(f"{data[s]} {s}" for s in ("pending", "kept", "shared", "uploaded"))
    paused = " · capture paused everywhere" if store.get_setting("capture", True) is False else ""
    lines = [f"ichor · {line}{paused}"]
    if data["top_labels"]:
        lines.append("top mistakes: " + ", ".join(f"{label} ({n})" for label, n in data["top_labels"]))
    return "\n".join(lines)


def review(store: Store) -> str:
    pair = store.oldest_pending()
    if pair is None:
        return "ichor · nothing pending"
    return card.render_card(pair, choices=card.manual_choices(pair.id))


def decide(store: Store, verb: str, pair_id: int) -> str:
    """keep / share / discard one pair."""
    if verb == "discard":
        detect_refit.learn(store, store.require(pair_id), positive=False)
        store.discard(pair_id)
        return card.render_discarded(pair_id)
    current = store.require(pair_id)
    if current.status == "uploaded":
        return f"ichor · pair #{pair_id} is already uploaded"
    detect_refit.learn(store, current, positive=True)
    return card.render_outcome(store.set_status(pair_id, "kept" if verb == "keep" else "shared"))


def export(store: Store, out: str | None = None) -> str:
    folder = Path(out) if out else _stamped_folder(store.path.parent / "exports")
    store.sync_data_dir()
    records = (pair.to_record() for pair in store.iter_pairs(EXPORTED_STATUSES))
    counts = write_export(records, folder, ExportConfig())
    _write_atropos_env(folder)
    return f"ichor · exported {counts['pairs']} pairs ({counts['train']} train, {counts['eval']} eval) to {folder}"


def _stamped_folder(root: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder, n = root / stamp, 1
    while folder.exists():
        n += 1
        folder = root / f"{stamp}-{n}"
    return folder


def _write_atropos_env(folder: Path) -> None:
    try:
        from .atropos_export import write_atropos_env
    except ImportError:
        return
    write_atropos_env(folder)


def share_queued(store: Store) -> str:
    from .share import ShareError
    from .share import share_queued as upload

    try:
        return str(upload(store))
    except ShareError as exc:
        raise CommandError(str(exc)) from None


def set_setting(store: Store, args: list[str]) -> str:
    if args[:1] == ["repo"] and len(args) == 2:
        if not REPO_NAME.match(args[1]) or ".." in args[1]:
            raise CommandError(f"invalid repository name: {args[1]!r}")
        store.set_setting("repo", args[1])
        return f"ichor · pairs will be shared to {args[1]}"
    if args in (["public"], ["private"]):
        store.set_setting("visibility", args[0])
        return f"ichor · new datasets will be created {args[0]}"
    raise CommandError("usage: set repo NAME | set public | set private")


def toggle(store: Store, on: bool, args: list[str], scope: str | None) -> str:
    word = "resumed" if on else "paused"
    if args == ["--global"]:
        store.set_setting("capture", on)
        return f"ichor · capture {word} everywhere"
    if args:
        raise CommandError(f"usage: {'on' if on else 'off'} [--global]")
    if not scope:
        raise CommandError("this surface can't tell which chat you are in; use --global")
    paused = set(store.get_setting("paused_scopes", []))
    if on:
        paused.discard(scope)
    else:
        paused.add(scope)
    store.set_setting("paused_scopes", sorted(paused))
    return f"ichor · capture {word} in this chat"


def forget_all(store: Store, args: list[str]) -> str:
    if args != ["yes"]:
        raise CommandError("this deletes every stored pair; confirm with: forget-all yes")
    deleted = store.forget_all()
    detect_refit.forget(store)
    return f"ichor · deleted {deleted} pairs"


def is_capture_paused(store: Store, scope: str | None) -> bool:
    """Whether capture is off everywhere, or in the chat ``scope``."""
    if store.get_setting("capture", True) is False:
        return True
    return bool(scope) and scope in store.get_setting("paused_scopes", [])


def _one_id(verb: str) -> Callable[[Store, list[str], str | None], str]:
    def handler(store: Store, args: list[str], scope: str | None) -> str:
        if verb == "share" and not args:
            return share_queued(store)
        if len(args) != 1:
            raise CommandError(f"usage: {verb} ID")
        return decide(store, verb, parse_id(args[0]))

    return handler


VERBS: dict[str, Callable[[Store, list[str], str | None], str]] = {
    "status": lambda s, a, _: status(s),
    "review": lambda s, a, _: review(s),
    "keep": _one_id("keep"),
    "share": _one_id("share"),
    "discard": _one_id("discard"),
    "export": lambda s, a, _: export(s),
    "set": lambda s, a, _: set_setting(s, a),
    "off": lambda s, a, scope: toggle(s, False, a, scope),
    "on": lambda s, a, scope: toggle(s, True, a, scope),
    "forget-all": lambda s, a, _: forget_all(s, a),
    "help": lambda s, a, _: USAGE,
}


def run(store: Store, argstring: str = "", scope: str | None = None) -> str:
    """Run one ``/ichor …`` command line and return the reply. Errors come back as one line."""
    try:
        words = shlex.split(argstring or "")
    except ValueError as exc:
        return f"ichor: {exc}"
    verb, args = (words[0].lower(), words[1:]) if words else ("status", [])
    handler = VERBS.get(verb)
    if handler is None:
        return f"ichor: unknown command {verb!r}\n{USAGE}"
    try:
        return handler(store, args, scope)
    except (CommandError, StoreError) as exc:
        return f"ichor: {exc}"
