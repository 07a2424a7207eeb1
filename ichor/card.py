"""The card: how a captured pair is shown to the user, and what it turns into after their choice.

The card is the human check before anything is kept, so it shows what ``keep`` would store: the
request the answers respond to (the last user message of the prompt, and how many earlier messages
come with it), what the user said, both answers with their line breaks, what the scrubber removed,
and the command that prints the whole pair. Long texts show their first ``MAX_LINES`` lines (within a
character budget per block, so the card fits one chat message) and say how many more there are, so
nothing stored is hidden without the card saying so.

``surface`` is where the card is read: ``"chat"`` (Hermes, where ``/ichor`` commands work) or
``"shell"`` (the ``ichor`` command line); it picks the wording of the commands the card names.
"""

from __future__ import annotations

from .scrub import describe
from .store import Pair

SURFACES = ("chat", "shell")
MAX_LINES = 15
MAX_LINE_CHARS = 200
# Characters per block, so that a whole card stays one chat message (Telegram's limit is 4,096).
BUDGETS = {"prompt": 700, "user_said": 400, "answer": 1000}
INDENT = "  "
CHOICES = "reply k keep · s share · d discard"
OUTCOMES = {
    "kept": "kept (private)",
    "shared": "queued to share",
    "uploaded": "uploaded",
    "pending": "pending",
}


def preview(text: str, limit: int = 400) -> str:
    """One paragraph of at most ``limit`` characters: for one-line listings, not for the card."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def command(surface: str, verb: str, pair_id: int | None = None) -> str:
    """How to type ``verb`` where the card is read: ``/ichor keep 4`` in chat, ``ichor keep 4`` in a shell."""
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}; expected one of {', '.join(SURFACES)}")
    prefix = "/ichor" if surface == "chat" else "ichor"
    return f"{prefix} {verb}" if pair_id is None else f"{prefix} {verb} {pair_id}"


def excerpt(text: str, max_lines: int = MAX_LINES, width: int = MAX_LINE_CHARS, budget: int = 1000) -> list[str]:
    """The first lines of ``text`` (at most ``max_lines``, each cut to ``width``, ``budget`` characters in
    all), and a line saying how many lines are left out."""
    lines = text.splitlines() or [""]
    shown: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        room = min(width, budget - used)
        if room <= 1 and shown:
            break
        shown.append(line if len(line) <= room else line[: max(room - 1, 0)] + "…")
        used += min(len(line), room)
    more = len(lines) - len(shown)
    if more:
        shown.append(f"… {more} more line{'s' if more != 1 else ''}")
    return shown


def _block(title: str, text: str, budget: int) -> list[str]:
    return [title, *(INDENT + line for line in excerpt(text, budget=budget))]


def _request(pair: Pair) -> tuple[str, int]:
    """The last user message of the prompt, and how many messages come before it."""
    for index in range(len(pair.prompt) - 1, -1, -1):
        message = pair.prompt[index]
        if message.get("role") == "user":
            return str(message.get("content", "")), index
    return "", len(pair.prompt)


def manual_choices(pair_id: int, surface: str = "chat") -> str:
    """How to decide a pair where a one-letter reply can't be claimed (a shell, group chats, review)."""
    return f"{command(surface, 'keep', pair_id)} · share {pair_id} · discard {pair_id}"


def render(pair: Pair, surface: str = "chat", choices: str | None = None) -> str:
    """The card for ``pair`` as read on ``surface``; ``choices`` overrides the line saying how to answer."""
    title = f"ichor · captured pair #{pair.id}"
    if pair.label:
        title += f" · {pair.label}"
    if pair.kind != "correction":
        title += f" ({pair.kind})"
    request, earlier = _request(pair)
    prompt_title = "prompt" + (f" (+{earlier} earlier message{'s' if earlier != 1 else ''})" if earlier else "")
    lines = [
        title,
        *_block(f"{prompt_title}:", request, BUDGETS["prompt"]),
        *_block("you said:", pair.user_said, BUDGETS["user_said"]),
        *_block("rejected:", pair.rejected, BUDGETS["answer"]),
        *_block("accepted:", pair.accepted, BUDGETS["answer"]),
        f"scrubbed: {describe(pair.scrubbed)}",
        f"whole pair, as it would be stored: {command(surface, 'show', pair.id)}",
    ]
    answer = manual_choices(pair.id, surface) if choices is None else choices
    if answer:
        lines.append(answer)
    return "\n".join(lines)


def render_card(pair: Pair, choices: str = CHOICES) -> str:
    """The card as posted in a Hermes chat (the caller picks the choices line)."""
    return render(pair, "chat", choices)


def render_outcome(pair: Pair) -> str:
    """What the card becomes after the user's choice."""
    return f"ichor · pair #{pair.id} {OUTCOMES.get(pair.status, pair.status)}"


def render_discarded(pair_id: int) -> str:
    return f"ichor · pair #{pair_id} discarded"
