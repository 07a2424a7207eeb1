"""The card: how a captured pair is shown to the user, and what it turns into after their choice."""

from __future__ import annotations

from .scrub import describe
from .store import Pair

PREVIEW_CHARS = 400
CHOICES = "reply k keep · s share · d discard"
OUTCOMES = {
    "kept": "kept (private)",
    "shared": "queued to share",
    "uploaded": "uploaded",
    "pending": "pending",
}


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One paragraph of at most ``limit`` characters, so a long answer doesn't flood the chat."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def manual_choices(pair_id: int) -> str:
    """How to decide a pair where a one-letter reply can't be claimed (CLI, group chats, review)."""
    return f"/ichor keep {pair_id} · share {pair_id} · discard {pair_id}"


def render_card(pair: Pair, choices: str = CHOICES) -> str:
    """The card posted once per captured pair.

    It shows what the user said, both answers, what the scrubber removed and how to answer.
    """
    title = f"ichor · captured pair #{pair.id}"
    if pair.label:
        title += f" · {pair.label}"
    if pair.kind != "correction":
        title += f" ({pair.kind})"
    lines = [
        title,
        f'you said: "{preview(pair.user_said, 200)}"',
        "rejected",
        preview(pair.rejected),
        "accepted",
        preview(pair.accepted),
        f"scrubbed: {describe(pair.scrubbed)}",
    ]
    if choices:
        lines.append(choices)
    return "\n".join(lines)


def render_outcome(pair: Pair) -> str:
    """What the card becomes after the user's choice."""
    return f"ichor · pair #{pair.id} {OUTCOMES.get(pair.status, pair.status)}"


def render_discarded(pair_id: int) -> str:
    return f"ichor · pair #{pair_id} discarded"
