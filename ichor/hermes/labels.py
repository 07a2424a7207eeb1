"""Opt-in mistake labels from the session's own model (setting ``llm_labels``).

One short ``ctx.llm.complete`` call per captured pair, on a background thread, never per turn.
The local label (the detector's, from the user's own words) stays when the call fails.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

log = logging.getLogger("hermes_plugins.ichor")

PROMPT = (
    "An assistant's answer was rejected by the user. Name the kind of mistake in 2 to 4 plain words, "
    "lower case, no punctuation (for example: wrong package manager, ignored sort order). "
    "Reply with the label only."
)
MAX_WORDS = 4


def clean_label(text: str) -> str | None:
    """2–4 lower-case words from a model's reply, or None when it isn't usable."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    words = re.findall(r"[a-z0-9][a-z0-9'-]*", line.lower())
    if len(words) < 2:
        return None
    return " ".join(words[:MAX_WORDS])


def ask_label(llm, pair) -> str | None:
    question = (
        f"The user asked:\n{pair.prompt[-1]['content'][:1500]}\n\nRejected answer:\n{pair.rejected[:1500]}\n\n"
        f"The user then said:\n{pair.user_said[:600]}"
    )
    result = llm.complete(
        messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": question}],
        max_tokens=16,
        temperature=0,
        timeout=30,
        purpose="ichor mistake label",
    )
    return clean_label(getattr(result, "text", "") or "")


def label_in_background(llm, pair, save: Callable[[int, str], None]) -> threading.Thread:
    def work() -> None:
        try:
            label = ask_label(llm, pair)
            if label:
                save(pair.id, label)
        except Exception as exc:
            log.warning("ichor: model label for pair #%s failed, keeping the local one: %s", pair.id, exc)

    thread = threading.Thread(target=work, name=f"ichor-label-{pair.id}", daemon=True)
    thread.start()
    return thread
