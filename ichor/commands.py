"""Every ``ichor`` / ``/ichor`` verb, declared once in ``VERBS``.

Each handler takes a ``Context`` (the store and where the command runs) and the parsed arguments, and
returns a ``verbs.Result``. ``run_chat`` is the slash command's entry; the shell builds its argparse
parser from the same table (``ichor.cli``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import card, detect_refit, pair_edit, settings
from .export import ExportConfig, write_export
from .scrub import describe
from .settings import SettingError
from .store import EXPORTED_STATUSES, KINDS, STATUSES, Pair, Store, StoreError
from .verbs import SHELL, Arg, CommandError, Result, Surface, Verb, help_text, parse_chat, suggestion

# What the user reads for a status: "shared" in the store means queued, not yet on the Hub.
STATUS_WORDS = {"pending": "pending", "kept": "kept", "shared": "queued to share", "uploaded": "uploaded"}
STATUS_ALIASES = {"queued": "shared"}
NOT_MISTAKES = ("retry",)  # a re-send says nothing about what was wrong with the answer
UID_LENGTH = 32


@dataclass
class Context:
    store: Store | None
    surface: Surface = SHELL
    # Where work too slow for a chat's own thread goes (the detector's refit): the plugin passes its
    # refit thread's ``submit``; None runs it at once, as the shell does.
    later: Callable[[Callable[[], object]], object] | None = None

    @property
    def db(self) -> Store:
        assert self.store is not None, "this verb needs the store"
        return self.store


# ---- argument types -------------------------------------------------------------------------------


def pair_ref(text: str) -> int | str:
    """A pair id as its card shows it (``3``) or its uid as the audit prints it (32 hex digits)."""
    if len(text) == UID_LENGTH and all(c in "0123456789abcdef" for c in text.lower()):
        return text.lower()
    # "²" and huge ids crashed; more than 19 digits can't be a SQLite rowid (and int() refuses 4,300+)
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or not 0 < int(text) < 2**63:
        shown = text if len(text) <= 24 else f"{text[:20]}… ({len(text)} characters)"
        raise argparse.ArgumentTypeError(f"not a pair id: {shown!r} (an id from a card, or a pair's uid)")
    return int(text)


def status_name(text: str) -> str:
    name = STATUS_ALIASES.get(text, text)
    if name not in STATUSES:
        raise argparse.ArgumentTypeError(f"no status {text!r}; statuses: pending, kept, queued, uploaded")
    return name


def resolve(store: Store, ref: int | str) -> Pair:
    if isinstance(ref, int):
        return store.require(ref)
    for pair in store.iter_pairs(STATUSES):
        if pair.uid == ref:
            return pair
    raise StoreError(f"no pair with uid {ref}")


# ---- reading ---------------------------------------------------------------------------------------


def top_mistakes(store: Store, limit: int = 5) -> list[tuple[str, int]]:
    counts = Counter(p.label for p in store.iter_pairs(STATUSES) if p.label and p.kind not in NOT_MISTAKES)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def paused_chats(store: Store) -> list[str]:
    return sorted(settings.get(store, "paused_scopes"))


def is_capture_paused(store: Store, scope: str | None) -> bool:
    """Whether capture is off everywhere, or in the chat ``scope``."""
    if settings.get(store, "capture") is False:
        return True
    return bool(scope) and scope in paused_chats(store)


def _setting_lines(store: Store, surface: Surface) -> list[str]:
    values = settings.shown(store)
    values["data_dir"] = str(store.data_dir)
    width = max(len(name) for name in values)
    lines = [f"settings (change with: {surface.say('set NAME VALUE')})"]
    for name, value in values.items():
        lines.append(f"  {name.replace('_', '-').ljust(width)}  {settings.as_text(name, value)}")
    return lines


def status(ctx: Context, args) -> Result:
    store = ctx.db
    counts = store.counts()
    mistakes = top_mistakes(store)
    paused = paused_chats(store)
    data = {
        **counts,
        "top_labels": [[label, n] for label, n in mistakes],
        "paused_chats": paused,
        "settings": {**settings.shown(store), "data_dir": str(store.data_dir)},
    }
    line = " · ".join(f"{counts[s]} {STATUS_WORDS[s]}" for s in STATUSES)
    everywhere = " · capture paused everywhere" if settings.get(store, "capture") is False else ""
    lines = [f"ichor · {line}{everywhere}"]
    if mistakes:
        lines.append("top mistakes: " + ", ".join(f"{label} ({n})" for label, n in mistakes))
    if paused:
        lines.append("capture paused in: " + ", ".join(paused))
    return Result("\n".join(lines + _setting_lines(store, ctx.surface)), data)


def choices_line(pair_id: int, surface: Surface) -> str:
    """How to decide a pair from where the user reads it."""
    return (
        f"decide with {surface.say(f'keep {pair_id}')} (train on it, stays on this machine) · "
        f"share {pair_id} (queue for your Hub dataset) · discard {pair_id}"
    )


def _record(pair: Pair) -> dict:
    return dataclasses.asdict(pair)


def review(ctx: Context, args) -> Result:
    pair = ctx.db.oldest_pending()
    if pair is None:
        return Result("ichor · nothing pending", None)
    return Result(card.render(pair, ctx.surface.name, choices=choices_line(pair.id, ctx.surface)), _record(pair))


def _list_line(pair: Pair) -> str:
    label = pair.label or "unlabelled"
    return f'#{pair.id}  {STATUS_WORDS[pair.status]} · {pair.kind} · {label} · "{card.preview(pair.user_said, 60)}"'


def list_pairs(ctx: Context, args) -> Result:
    statuses = (args.status,) if args.status else STATUSES
    pairs = [p for p in ctx.db.iter_pairs(statuses) if not args.kind or p.kind == args.kind]
    rows = [{"id": p.id, "uid": p.uid, "status": p.status, "kind": p.kind, "label": p.label} for p in pairs]
    if not pairs:
        return Result("ichor · no pairs match", rows)
    hint = f"read one in full: {ctx.surface.say(f'show {pairs[0].id}')}"
    return Result("\n".join([*(_list_line(p) for p in pairs), hint]), rows)


def _full_text(pair: Pair, surface: Surface) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(pair.created_at))
    lines = [
        f"ichor · pair #{pair.id} · {STATUS_WORDS[pair.status]} · {pair.kind} · {pair.label or 'unlabelled'}",
        f"uid {pair.uid} · {pair.platform or 'unknown platform'} · captured {when}",
        "prompt",
        *(f"  [{m.get('role')}] {m.get('content')}" for m in pair.prompt),
        f"you said: {pair.user_said}",
        "rejected",
        pair.rejected,
        "accepted",
        pair.accepted,
        f"scrubbed: {describe(pair.scrubbed)}",
    ]
    if pair.status == "pending":
        lines.append(choices_line(pair.id, surface))
    return "\n".join(lines)


def show(ctx: Context, args) -> Result:
    pair = resolve(ctx.db, args.id)
    return Result(_full_text(pair, ctx.surface), _record(pair))


def edit(ctx: Context, args) -> Result:
    pair = resolve(ctx.db, args.id)
    if pair.status == "uploaded":
        raise CommandError(f"pair #{pair.id} is already on the Hub; an edit here would not change that copy")
    saved = pair_edit.edit_in_editor(pair_edit.editable_text(pair))
    if saved == pair_edit.editable_text(pair):
        return Result(f"ichor · pair #{pair.id} unchanged", _record(pair))
    edited = ctx.db.replace_texts(pair.id, pair_edit.parse_edited(saved, pair))
    return Result(f"ichor · pair #{pair.id} saved (scrubbed: {describe(edited.scrubbed)})", _record(edited))


# ---- deciding --------------------------------------------------------------------------------------


def decide(ctx: Context, verb: str, refs: list) -> Result:
    """keep / share / discard several pairs; every id is checked before any pair changes."""
    pairs = list({p.id: p for p in (resolve(ctx.db, ref) for ref in refs)}.values())
    lines = []
    for pair in pairs:
        if verb == "discard":
            detect_refit.learn(ctx.db, pair, positive=False, later=ctx.later)
            ctx.db.discard(pair.id)
            lines.append(card.render_discarded(pair.id))
        elif pair.status == "uploaded":
            lines.append(f"ichor · pair #{pair.id} is already uploaded")
        else:
            detect_refit.learn(ctx.db, pair, positive=True, later=ctx.later)
            lines.append(card.render_outcome(ctx.db.set_status(pair.id, "kept" if verb == "keep" else "shared")))
    return Result("\n".join(lines), [p.id for p in pairs], decided=tuple(p.id for p in pairs))


def keep(ctx: Context, args) -> Result:
    return decide(ctx, "keep", args.ids)


def discard(ctx: Context, args) -> Result:
    return decide(ctx, "discard", args.ids)


def share(ctx: Context, args) -> Result:
    if args.ids and args.dry_run:
        raise CommandError("--dry-run lists what the next upload sends; leave out the ids")
    if args.ids:
        return decide(ctx, "share", args.ids)
    if args.dry_run:
        return share_preview(ctx)
    return upload(ctx)


def share_preview(ctx: Context) -> Result:
    store = ctx.db
    queued = list(store.iter_pairs(("shared",)))
    repo = settings.get(store, "repo")
    where = repo if "/" in repo else f"<your account>/{repo}"
    rows = [{"id": p.id, "uid": p.uid, "kind": p.kind, "label": p.label} for p in queued]
    data = {"repo": repo, "visibility": settings.get(store, "visibility"), "queued": rows}
    if not queued:
        return Result(f"ichor · nothing queued: {ctx.surface.say('share ID')} queues a pair", data)
    head = f"ichor · {ctx.surface.say('share')} would upload {len(queued)} queued pair(s) to {where}"
    head += f" ({data['visibility']})"
    return Result("\n".join([head, *(_list_line(p) for p in queued)]), data)


def upload(ctx: Context) -> Result:
    from .hub import require_client
    from .share import ShareError, share_queued

    try:
        require_client()  # a missing hub extra is named before anything else is asked for
        result = share_queued(ctx.db)
    except ShareError as exc:
        raise CommandError(str(exc)) from None
    return Result(str(result), dataclasses.asdict(result))


# ---- the rest --------------------------------------------------------------------------------------


def export_verb(ctx: Context, args) -> Result:
    return export(ctx.db, getattr(args, "out", None))


def export(store: Store, out: str | None = None) -> Result:
    """Write the kept and shared pairs to ``out`` (default: a stamped folder under exports/)."""
    folder = Path(out) if out else _stamped_folder(store.path.parent / "exports")
    store.sync_data_dir()
    records = (pair.to_record() for pair in store.iter_pairs(EXPORTED_STATUSES))
    counts = write_export(records, folder, ExportConfig())
    _write_atropos_env(folder)
    text = f"ichor · exported {counts['pairs']} pairs ({counts['train']} train, {counts['eval']} eval) to {folder}"
    return Result(text, {**counts, "folder": str(folder)})


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


def shown_settings() -> list[str]:
    return [name.replace("_", "-") for name, s in settings.SETTINGS.items() if s.shown]


def set_setting(ctx: Context, args) -> Result:
    name, value = args.name.replace("_", "-"), args.value
    if value is None and name in ("public", "private"):
        name, value = "visibility", name
    known = shown_settings()
    if name not in known:
        raise CommandError(f"unknown setting {args.name!r}{suggestion(name, known)}; settings: {', '.join(known)}")
    if value is None:
        raise CommandError(f"give a value: {ctx.surface.say(f'set {name} VALUE')}")
    key = name.replace("-", "_")
    stored = settings.put(ctx.db, key, value)
    if key == "repo":
        text = f"ichor · pairs will be shared to {stored}"
    elif key == "visibility":
        text = f"ichor · new datasets will be created {stored}"
    else:
        text = f"ichor · {name} = {settings.as_text(key, stored)}"
    return Result(text, {key: stored})


def toggle(ctx: Context, args, on: bool) -> Result:
    word = "resumed" if on else "paused"
    store = ctx.db
    if getattr(args, "global"):
        settings.put(store, "capture", "on" if on else "off")
        return Result(f"ichor · capture {word} everywhere", {"capture": on})
    scope = getattr(args, "scope", None) or ctx.surface.scope
    if not scope:
        verb = "on" if on else "off"
        raise CommandError(f"say where: {ctx.surface.say(verb + ' --global')} or {ctx.surface.say(verb)} --scope CHAT")
    paused = set(paused_chats(store))
    if on:
        paused.discard(scope)
    else:
        paused.add(scope)
    store.set_setting("paused_scopes", sorted(paused))
    return Result(f"ichor · capture {word} in this chat ({scope})", {"scope": scope, "paused": not on})


def forget_all(ctx: Context, args) -> Result:
    if args.confirm != "yes":
        raise CommandError(f"this deletes every stored pair; confirm with: {ctx.surface.say('forget-all yes')}")
    n = ctx.db.forget_all()
    detect_refit.forget(ctx.db)
    return Result(f"ichor · deleted {n} pairs", {"deleted": n})


def show_help(ctx: Context, args) -> Result:
    if not args.verb:
        return Result(help_text(chat_or_all(ctx.surface), ctx.surface))
    verb = VERB_BY_NAME.get(args.verb)
    if verb is None and args.verb in SHELL_TOOLS:  # in a shell, ichor.cli shows their --help before this
        raise CommandError(f"{args.verb} runs in a shell only: ichor help {args.verb}")
    if verb is None:
        raise CommandError(f"no command {args.verb!r}{suggestion(args.verb, sorted(VERB_BY_NAME))}")
    if ctx.surface.name == "chat" and not verb.chat:
        raise CommandError(f"{verb.name} runs in a shell only: {SHELL.say(verb.usage(SHELL))}")
    lines = [ctx.surface.say(verb.usage(ctx.surface)), f"  {verb.help}"]
    lines += [f"  {a.name:<10} {a.help}" for a in verb.args if ctx.surface.name == "shell" or not a.shell_only]
    return Result("\n".join(lines))


# The shell-only tools of ichor.cli, which are not verbs.
SHELL_TOOLS = ("detect", "scrub", "eval", "completion", "install-plugin")


def chat_or_all(surface: Surface) -> list[Verb]:
    return [v for v in VERBS if surface.name == "shell" or v.chat]


# ---- the table -------------------------------------------------------------------------------------

IDS = Arg("ids", "pair ids (as on the card) or uids (as the audit prints)", pair_ref, nargs="+", metavar="ID")
ONE_ID = Arg("id", "a pair id (as on the card) or uid (as the audit prints)", pair_ref, metavar="ID")
JSON = Arg("--json", "print machine-readable JSON", flag=True, shell_only=True)


# /ichor off and /ichor on take the same arguments.
TOGGLE_ARGS = (
    Arg("--global", "everywhere", flag=True),
    Arg("--scope", "the chat key status lists under paused chats", metavar="CHAT", shell_only=True),
)

VERBS: tuple[Verb, ...] = (
    Verb("status", "counts, top mistakes, paused chats and every setting", status, (JSON,), reads_only=True),
    Verb(
        "list",
        "every pair, one line each",
        list_pairs,
        (
            Arg("--status", "only pairs with this status (pending, kept, queued, uploaded)", status_name),
            Arg("--kind", "only pairs of this kind", choices=KINDS),
            JSON,
        ),
        reads_only=True,
    ),
    Verb("show", "one pair in full, as stored", show, (ONE_ID, JSON), reads_only=True),
    Verb("review", "the oldest pending pair, as a card", review, (JSON,), reads_only=True),
    Verb("edit", "fix a pair in $EDITOR; it is scrubbed again on save", edit, (ONE_ID,), chat=False),
    Verb("keep", "keep pairs for training on this machine (never uploaded)", keep, (IDS,)),
    Verb(
        "share",
        "queue pairs for your Hub dataset; with no id, upload the queue",
        share,
        (
            Arg("ids", "pairs to queue; leave out to upload the queue", pair_ref, nargs="*", metavar="ID"),
            Arg("--dry-run", "list what the upload would send, and where; send nothing", flag=True),
            JSON,
        ),
    ),
    Verb("discard", "delete pairs and their stored text", discard, (IDS,)),
    Verb(
        "export",
        "write dpo.jsonl, atropos/pairs.jsonl and atropos_env/ for kept and shared pairs",
        export_verb,
        (Arg("--out", "folder to write (default: a stamped folder under exports/)", metavar="DIR", shell_only=True),),
    ),
    Verb(
        "set",
        "change a setting that status lists; set public, set private and set repo NAME too",
        set_setting,
        (
            Arg("name", f"one of {', '.join(shown_settings())}; or public|private", metavar="NAME"),
            Arg("value", "its new value (required, except after public or private)", nargs="?", metavar="VALUE"),
        ),
    ),
    Verb(
        "off",
        "pause capture in this chat (or everywhere with --global)",
        lambda ctx, args: toggle(ctx, args, on=False),
        TOGGLE_ARGS,
    ),
    Verb(
        "on",
        "resume capture in this chat (or everywhere with --global)",
        lambda ctx, args: toggle(ctx, args, on=True),
        TOGGLE_ARGS,
    ),
    Verb(
        "forget-all",
        "delete every stored pair (confirm with: forget-all yes)",
        forget_all,
        (Arg("confirm", "the word yes", nargs="?", metavar="yes"),),
    ),
    Verb(
        "help",
        "this list, or one command's arguments",
        show_help,
        (Arg("verb", "a command", nargs="?", metavar="COMMAND"),),
        needs_store=False,
    ),
)
VERB_BY_NAME = {v.name: v for v in VERBS}


def run_chat(store: Store | None, argstring: str = "", scope: str | None = None, later=None) -> Result:
    """Run one ``/ichor …`` line; errors come back as a one-line Result with ``ok=False``.
    ``later`` is ``Context.later``."""
    surface = Surface("chat", scope)
    try:
        verb, args = parse_chat(VERBS, argstring, surface)
        return verb.handler(Context(store, surface, later), args)
    except (CommandError, StoreError, SettingError) as exc:
        return Result(f"ichor: {exc}", ok=False)
