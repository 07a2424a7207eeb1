"""Open cards and the rules for claiming a one-letter reply to one.

A short reply is taken out of the conversation only when nothing else could have been meant:
it is in a direct chat, within ``CLAIM_WINDOW_S`` of the card, exactly one of the choice words,
and that card is the only one open on the platform. Everything else goes to the agent untouched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CLAIM_WINDOW_S = 120.0
CHOICES = {"k": "keep", "keep": "keep", "s": "share", "share": "share", "d": "discard", "discard": "discard"}


def choice_of(text: str | None) -> str | None:
    """``keep``/``share``/``discard`` when the whole message is one of the choice words."""
    if not isinstance(text, str):
        return None
    return CHOICES.get(text.strip().lower())


@dataclass
class OpenCard:
    pair_id: int
    platform: str
    chat_id: str
    chat_type: str
    message_id: str | None
    opened_at: float
    post: Any = None  # the Surface the card went out on, to edit it later


class CardBoard:
    """The cards posted in this process that still wait for an answer."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = CLAIM_WINDOW_S):
        self.clock = clock
        self.window = window
        self._cards: dict[int, OpenCard] = {}
        self._lock = threading.Lock()

    def open(self, card: OpenCard) -> None:
        with self._lock:
            self._expire()
            self._cards[card.pair_id] = card

    def close(self, pair_id: int) -> OpenCard | None:
        with self._lock:
            return self._cards.pop(pair_id, None)

    def open_cards(self, platform: str | None = None) -> list[OpenCard]:
        with self._lock:
            self._expire()
            return [c for c in self._cards.values() if platform is None or c.platform == platform]

    def claimable(self, platform: str, chat_id: str, chat_type: str, text: str | None) -> tuple[OpenCard, str] | None:
        """The card a reply answers and the choice it makes, or None when the reply is not ours."""
        choice = choice_of(text)
        if choice is None or chat_type != "dm":
            return None
        cards = self.open_cards(platform)
        if len(cards) != 1:
            return None
        card = cards[0]
        if card.chat_id != chat_id or card.chat_type != "dm":
            return None
        return card, choice

    def _expire(self) -> None:
        now = self.clock()
        for pid in [pid for pid, c in self._cards.items() if now - c.opened_at > self.window]:
            del self._cards[pid]
