"""Store commands: the same verbs as ``/ichor`` in chat."""

from __future__ import annotations

import argparse
from contextlib import contextmanager

from .. import commands
from ..store import StoreError
from .common import CliError, open_store, print_json


@contextmanager
def _store(args, read_only_ok: bool = False):
    store = open_store(args, read_only_ok)
    try:
        yield store
    except (commands.CommandError, StoreError, OSError) as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close()


def _status(args) -> int:
    with _store(args, read_only_ok=True) as store:
        if args.json:
            print_json(commands.status_data(store))
        else:
            print(commands.status(store))
    return 0


def review_data(store) -> dict | None:
    pair = store.oldest_pending()
    if pair is None:
        return None
    return {
        "id": pair.id,
        "kind": pair.kind,
        "label": pair.label,
        "user_said": pair.user_said,
        "prompt": pair.prompt,
        "rejected": pair.rejected,
        "accepted": pair.accepted,
        "scrubbed": pair.scrubbed,
    }


def _review(args) -> int:
    with _store(args, read_only_ok=True) as store:
        if args.json:
            print_json(review_data(store))
        else:
            print(commands.review(store))
    return 0


def _decide(verb: str):
    def run(args) -> int:
        with _store(args) as store:
            if verb == "share" and args.id is None:
                print(commands.share_queued(store))
            else:
                print(commands.decide(store, verb, commands.parse_id(args.id)))
        return 0

    return run


def _export(args) -> int:
    with _store(args) as store:
        print(commands.export(store, args.out))
    return 0


def _forget_all(args) -> int:
    with _store(args) as store:
        print(commands.forget_all(store, [args.confirm] if args.confirm else []))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="counts by status and your top mistake types")
    p.add_argument("--json", action="store_true", help="print {pending, kept, shared, uploaded, top_labels}")
    p.set_defaults(func=_status)

    p = sub.add_parser("review", help="show the oldest pending pair as a card")
    p.add_argument("--json", action="store_true", help="print the pair as JSON, or null when none is pending")
    p.set_defaults(func=_review)

    for verb, text in (
        ("keep", "keep a pair for training; it is never uploaded"),
        ("discard", "delete a pair and its stored text"),
    ):
        p = sub.add_parser(verb, help=text)
        p.add_argument("id", help="the pair id shown on its card")
        p.set_defaults(func=_decide(verb))

    p = sub.add_parser("share", help="queue a pair for sharing; with no id, upload every queued pair")
    p.add_argument("id", nargs="?", help="the pair id to queue (omit to upload the queue)")
    p.set_defaults(func=_decide("share"))

    p = sub.add_parser("export", help="write dpo.jsonl (TRL), atropos/pairs.jsonl and atropos_env/ for kept pairs")
    p.add_argument("--out", metavar="DIR", help="folder to write (default: a stamped folder under exports/)")
    p.set_defaults(func=_export)

    p = sub.add_parser("forget-all", help="delete every stored pair (confirm with: forget-all yes)")
    p.add_argument("confirm", nargs="?", help="the word yes")
    p.set_defaults(func=_forget_all)
