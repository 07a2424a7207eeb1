"""Stage 2 inside Hermes: the host's own model confirms a detector candidate, off the turn's thread.

One ``ctx.llm.complete`` call per candidate, on a thread of its own that the capture worker starts with
a copy of the turn's context (so the card still finds the chat it belongs to). Neither the turn nor the
captures queued behind this one wait for the model; the card follows when it has answered.
``confirm_model`` passes ``model=`` to the call, which Hermes allows only when
``plugins.entries.ichor.llm.allow_model_override`` is true; refused, the call fails and stage 1's
standalone decision stands (one log line), as on any other failure.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
from collections.abc import Callable, Sequence

from .. import confirm
from ..capture import Capture
from ..detect_text import pair_window

log = logging.getLogger("hermes_plugins.ichor")

PURPOSE = "ichor correction confirmation"


def host_complete(llm, model: str | None) -> confirm.CompleteFn:
    """``complete_fn`` for ``confirm.confirm`` through Hermes' ``ctx.llm``."""

    def complete(messages: Sequence[dict], timeout: float) -> tuple[str, dict]:
        extra = {"model": model} if model else {}
        result = llm.complete(
            messages=list(messages),
            max_tokens=confirm.MAX_TOKENS,
            temperature=0,
            timeout=timeout,
            purpose=PURPOSE,
            **extra,
        )
        usage = getattr(result, "usage", None)
        return str(getattr(result, "text", "") or ""), {
            "prompt_tokens": getattr(usage, "input_tokens", 0) or 0,
            "completion_tokens": getattr(usage, "output_tokens", 0) or 0,
            "total_tokens": getattr(usage, "total_tokens", 0) or 0,
        }

    return complete


def window_of(captured: Capture) -> confirm.Window:
    """The scrubbed exchange as the detector read it (the whole turn the assistant wrote)."""
    return pair_window(captured.pair, captured.said)


def standalone(captured: Capture, model_path=None) -> bool:
    """Stage 1's decision at its standalone point, for a candidate that no model will confirm."""
    return confirm.stage1(window_of(captured), "standalone", model_path).is_correction


def confirm_in_background(
    llm, model: str | None, captured: Capture, decided: Callable[[confirm.Decision], None], model_path=None
) -> threading.Thread:
    """Confirm a captured candidate on a worker thread and hand the decision to ``decided`` there."""
    window = window_of(captured)

    def work() -> None:
        try:
            standalone = functools.partial(confirm.stage1, window, "standalone", model_path)
            decided(confirm.confirm(window, host_complete(llm, model), confirm.TIMEOUT, standalone))
        except Exception as exc:
            log.warning("ichor: confirmation failed, no card for this turn: %s: %s", type(exc).__name__, exc)

    context = contextvars.copy_context()
    # Not a daemon: a one-shot `hermes chat -q` would otherwise exit before the answer and lose the pair.
    # The interpreter waits for it at exit, at most confirm.TIMEOUT.
    thread = threading.Thread(target=context.run, args=(work,), name="ichor-confirm", daemon=False)
    thread.start()
    return thread
