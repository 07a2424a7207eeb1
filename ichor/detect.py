"""Correction detector, stage 1: does the user's new message correct or re-send the previous request?

A trained linear model (``ichor.detect_model``, weights in ``ichor/data/detector.json``, fitted by
``python -m ichor.detect_fit``) scores every window from word n-grams of the message, its shape and
relation to the previous turn, the hand rules of ``ichor.detect_rules`` as features and, when known,
the opening of the reply.  Only the labelling rules' clear cases skip the model: an identical re-send
is a retry, a bare yes/no/continue/thanks never a correction.  Two operating points, both chosen by
cross-validation grouped by repository: ``standalone`` (best F1, used when nothing confirms) and
``candidate`` (aimed at recall 0.97, for a confirming second stage).  Pure Python: it runs inside Hermes'
own environment.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import detect_model
from .detect_features import features
from .detect_label import mistake_label
from .detect_rules import bare_reply, identical_resend, rule_hits
from .detect_text import MAX_CHARS, Window, normalise

log = logging.getLogger(__name__)

__all__ = ["KINDS", "MAX_CHARS", "Detection", "Window", "detect", "detect_window", "mistake_label"]

KINDS = ("correction", "retry", "none")
# Rules that point at a fresh failure or a rejection rather than the same request asked again.
_NOT_A_REPEAT = ("still", "opener", "failure", "complaint", "restated", "dispute", "redirect")


@dataclass(frozen=True)
class Detection:
    kind: str
    label: str | None
    score: float
    layers: tuple[str, ...] = ()

    @property
    def is_correction(self) -> bool:
        return self.kind in ("correction", "retry")


def detect(
    prev_user,
    prev_assistant,
    user,
    assistant=None,
    *,
    threshold: str | float = "standalone",
    model_path: str | Path | None = None,
) -> Detection:
    """Classify the user's new message as a correction, a retry or neither.

    ``assistant`` (the reply to ``user``) is optional: with it the ``reply`` model also reads how the
    reply opens.  ``threshold`` is an operating point name or a probability; ``model_path`` names a
    profile's refitted model (the shipped one is the fallback).
    """
    try:
        window = Window.of(prev_user, prev_assistant, user, assistant)
        return detect_window(window, threshold, detect_model.load(model_path))
    except Exception as exc:  # never let a detector bug break a user's turn
        _say_once(exc)
        return Detection("none", None, 0.0, ("error",))


_SAID: set[str] = set()


def _say_once(exc: Exception) -> None:
    """One log line per kind of failure: each turn would repeat it, yet silence would hide that capture
    has stopped. Where it failed, not its message: a message may quote the user's text."""
    kind = type(exc).__name__
    if kind not in _SAID:
        _SAID.add(kind)
        where = traceback.extract_tb(exc.__traceback__)[-1]
        place = f"{Path(where.filename).name}:{where.lineno}"
        log.warning("ichor: the detector failed (%s at %s); it answers 'none' until this is fixed", kind, place)


def model_name(w: Window) -> str:
    return "reply" if w.assistant.strip() else "no_reply"


def window_score(w: Window, model: dict) -> float:
    linear = model["models"][model_name(w)]
    return detect_model.score(detect_model.feature_ids(features(w, tuple(linear["families"]))), linear)


def detect_window(w: Window, threshold: str | float, model: dict) -> Detection:
    decided = gate(w)
    if decided is not None:
        return _GATED[decided]
    linear = model["models"][model_name(w)]
    score = window_score(w, model)
    if score < detect_model.threshold(linear, threshold):
        return Detection("none", None, score, ("model",))
    hits = rule_hits(w)
    if _is_repeat(hits):
        return Detection("retry", "rephrased re-send", score, ("model",) + hits)
    return Detection("correction", mistake_label(w.user, w.prev_assistant), score, ("model",) + hits)


_GATED = {
    True: Detection("retry", "identical re-send", 1.0, ("gate",)),
    False: Detection("none", None, 0.0, ("gate",)),
}


def gate(w: Window) -> bool | None:
    """The labelling rules' clear cases, decided without the model: an empty message or a bare
    yes/no/continue/thanks is never a correction; an identical re-send is a retry."""
    if not w.user.strip() or bare_reply(normalise(w.user)):
        return False
    if identical_resend(w):
        return True
    return None


def _is_repeat(hits: tuple[str, ...]) -> bool:
    if any(h in hits for h in _NOT_A_REPEAT):
        return False
    return "rephrase" in hits or "reworded" in hits
