"""ichor inside Hermes Agent: the thin adapter between Hermes' hooks and ichor's core.

Registered surfaces (``plugin.yaml`` declares exactly these):

* ``post_llm_call``: tell the tracker which turn follows which, on the turn's own thread; the rest
  runs on the plugin's background ``worker``: detection, the pair cut and scrubbed, stored as pending
  and shown as a card (gateway chat, terminal, or nowhere: then it waits for ``/ichor review``).
  A detector candidate is first confirmed by the host's model on a thread of its own (``confirmation``);
* ``pre_gateway_dispatch``: remember the chat of the inbound message (for the card and for
  ``/ichor off``), and claim a bare k/s/d reply to the single open card of a direct chat;
* ``on_session_finalize``: drop the session's state;
* the ``/ichor`` slash command.

Every hook is wrapped: whatever goes wrong inside ichor (a broken database, a full disk, a read-only
home) is logged as one line and the turn carries on as if ichor weren't installed. The store is
opened at call time from Hermes' active home, so each profile keeps its own pairs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
from pathlib import Path

from .. import card, commands, detect_refit, paths, settings
from ..capture import Pending, Tracker, Turn, capture
from ..store import NewPair, Store
from ..verbs import Result, Surface
from .cards import CardBoard, OpenCard
from .confirmation import confirm_in_background, standalone
from .surface import ChatPost, can_post, current_route, print_to_terminal, route_from_event, session_scope
from .worker import Coalescing, Worker

log = logging.getLogger("hermes_plugins.ichor")

HOOKS = ("post_llm_call", "pre_gateway_dispatch", "on_session_finalize")
COMMAND = "ichor"
COMMAND_HINT = "[" + "|".join(v.name for v in commands.VERBS if v.chat) + "] (/ichor help)"
COMMAND_HELP = "Preference pairs from your corrections: list, show, keep, share, export, pause"
CHAT = Surface("chat")


def hermes_home():
    """The active profile's home, read on every call (a profile switch needs no restart)."""
    try:
        from hermes_constants import get_hermes_home
    except ImportError:
        from ..paths import hermes_home as get_hermes_home
    return get_hermes_home()


_STORES: dict[Path, Store] = {}
_STORES_LOCK = threading.Lock()


@contextlib.contextmanager
def open_store():
    """The active profile's store, kept open between turns.

    Opening per call would close the last connection each time, and closing the last connection to
    a WAL database checkpoints and syncs it: tens of milliseconds on a turn that captured a pair.
    A store that fails is dropped, so the next call opens it afresh.
    """
    home = Path(hermes_home())
    with _STORES_LOCK:
        store = _STORES.get(home)
        if store is None:
            store = _STORES[home] = Store.open(home)
    try:
        yield store
    except Exception:
        with _STORES_LOCK:
            if _STORES.get(home) is store:
                del _STORES[home]
        raise


def guarded(fallback=None):
    """Never let an ichor failure reach Hermes: log one line and return ``fallback``."""

    def wrap(fn):
        @functools.wraps(fn)
        def safe(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                log.warning(
                    "ichor: %s failed, Hermes carries on without it: %s: %s", fn.__name__, type(exc).__name__, exc
                )
                return fallback(exc) if callable(fallback) else fallback

        return safe

    return wrap


class IchorPlugin:
    def __init__(self, ctx=None, tracker: Tracker | None = None, board: CardBoard | None = None):
        self.ctx = ctx
        self.tracker = tracker or Tracker()
        self.board = board or CardBoard()
        self.worker = Worker()
        # The detector's refit takes seconds on a long decision log: a thread of its own, so captures never
        # wait behind it.
        self.refits = Coalescing("ichor-refit")
        self._confirming: list[threading.Thread] = []
        self._confirming_lock = threading.Lock()

    # ---- hooks --------------------------------------------------------------------------------

    @guarded()
    def post_llm_call(
        self, session_id="", user_message=None, assistant_response=None, conversation_history=None, platform="", **_
    ):
        """On the turn's thread: only which turn follows which. The rest goes to the worker."""
        history = conversation_history or []
        turn = Turn(str(session_id or ""), str(platform or ""), user_message, assistant_response, history)
        pending = self.tracker.advance(turn)
        if pending is not None:
            self.worker.submit(functools.partial(self.capture_turn, pending, getattr(self.ctx, "llm", None)))
        return None

    @guarded()
    def capture_turn(self, pending: Pending, llm) -> None:
        """On the worker: the pair a turn makes, stored and shown, or first handed to stage 2 to confirm."""
        refitted = paths.plugin_dir(hermes_home()) / detect_refit.PROFILE_MODEL
        captured = capture(pending, "candidate" if llm is not None else "standalone", refitted)
        if captured is None:
            return
        with open_store() as store:
            if commands.is_capture_paused(store, session_scope(pending.platform)):
                return
            confirming = llm is not None and settings.get(store, "confirm") is True
            model = settings.get(store, "confirm_model")
        if captured.detected and confirming:
            decided = functools.partial(self.post_llm_call_confirmed, captured.pair)
            self._track(confirm_in_background(llm, model, captured, decided, refitted))
            return
        if captured.detected and llm is not None and not standalone(captured, refitted):
            return  # a candidate only, and nothing will confirm it
        self.keep(captured.pair)

    @guarded()
    def post_llm_call_confirmed(self, new_pair: NewPair, decision) -> None:
        """Stage 2's decision on a candidate (on the confirmation's thread): a card, or nothing."""
        if decision.is_correction:
            self.keep(dataclasses.replace(new_pair, kind=decision.kind, label=decision.label or new_pair.label))

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until the turns so far are captured, confirmed and stored (for tests and harnesses; Hermes
        never calls it). False when that takes longer than ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if not (self.worker.drain(timeout) and self.refits.drain(max(0.0, deadline - time.monotonic()))):
            return False
        for thread in self._confirmations():
            thread.join(max(0.0, deadline - time.monotonic()))
        return not self._confirmations()

    def later(self, job) -> bool:
        """``commands.Context.later``: a decision's follow-up work (the detector's refit), on its own thread."""
        return self.refits.submit(job)

    def _track(self, thread: threading.Thread) -> None:
        with self._confirming_lock:
            self._confirming = [t for t in self._confirming if t.is_alive()] + [thread]

    def _confirmations(self) -> list[threading.Thread]:
        with self._confirming_lock:
            return [t for t in self._confirming if t.is_alive()]

    def keep(self, new_pair: NewPair) -> None:
        """Store a captured pair as pending and show its card."""
        with open_store() as store:
            pair = store.add_pair(new_pair)
        if pair.status == "pending":  # else the same pair again, already decided
            self.show(pair, new_pair.platform)

    @guarded()
    def pre_gateway_dispatch(self, event=None, gateway=None, **_):
        if event is None or getattr(event, "internal", False) or getattr(event, "source", None) is None:
            return None
        route = route_from_event(event, gateway)
        current_route.set(route)
        hit = self.board.claimable(route.platform, route.chat_id, route.chat_type, getattr(event, "text", None))
        if hit is None:
            return None
        open_card, choice = hit
        with open_store() as store:
            pair = store.get(open_card.pair_id)
            if pair is None or pair.status != "pending":
                self.board.close(open_card.pair_id)
                return None  # decided elsewhere meanwhile: the letter is not ours any more
            outcome = commands.decide(commands.Context(store, CHAT, self.later), choice, [open_card.pair_id])
        self.board.close(open_card.pair_id)
        if open_card.post is not None:
            open_card.post.replace(outcome.text)
        return {"action": "skip", "reason": f"ichor: {choice} pair #{open_card.pair_id}"}

    @guarded()
    def on_session_finalize(self, session_id=None, **_):
        if session_id:
            self.tracker.forget_session(str(session_id))
        return None

    @guarded(fallback=lambda exc: f"ichor: {type(exc).__name__}: {exc}")
    def command(self, raw_args: str = "", *args, **kwargs) -> str:
        with open_store() as store:
            result = commands.run_chat(store, raw_args or "", scope=session_scope(""), later=self.later)
        self._settle_cards(result)
        return result.text

    # ---- the card -----------------------------------------------------------------------------

    def show(self, pair, platform: str) -> None:
        route = current_route.get()
        if route is not None and can_post(route):
            dm = route.chat_type == "dm"
            text = (
                card.render_card(pair)
                if dm
                else card.render(pair, "chat", choices=commands.choices_line(pair.id, CHAT))
            )
            post = ChatPost(route)
            post.send(
                text,
                on_sent=lambda sent: self.board.open(
                    OpenCard(
                        pair.id,
                        route.platform,
                        route.chat_id,
                        route.chat_type,
                        sent.message_id,
                        self.board.clock(),
                        sent,
                    )
                ),
            )
        elif platform in ("cli", "tui"):
            print_to_terminal(card.render(pair, "chat", choices=commands.choices_line(pair.id, CHAT)))
        # elsewhere there is no surface: the pair waits for /ichor review

    def _settle_cards(self, result: Result) -> None:
        """``/ichor keep 4`` while card #4 is open: update that card too."""
        if not result.ok:
            return
        for pair_id in result.decided:
            open_card = self.board.close(pair_id)
            if open_card is not None and open_card.post is not None:
                open_card.post.replace(result.text)


def register(ctx) -> None:
    """Hermes' entry point: wire the hooks and the ``/ichor`` command."""
    plugin = IchorPlugin(ctx)
    for name in HOOKS:
        ctx.register_hook(name, getattr(plugin, name))
    ctx.register_command(COMMAND, plugin.command, description=COMMAND_HELP, args_hint=COMMAND_HINT)
