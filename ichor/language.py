"""Which language group a text belongs to: English or not, from its script and its function words."""

from __future__ import annotations

import re

_NON_LATIN = re.compile(r"[\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WORDS = re.compile(r"[^\W\d_]{1,20}")
_ENGLISH = frozenset(
    "the a an to of and is it in that this for you i my on with be not but can do what please now are was".split()
)
_OTHER = frozenset(
    "le la les des une est pas pour que dans avec je il et du au "  # French
    "el los las por con una para como pero muy "  # Spanish
    "um uma não para com isso está "  # Portuguese
    "je to na se že jak ale pro jsem není "  # Czech
    "der die das und ist nicht mit ich sie auf "  # German
    "yang dan ini itu tidak dengan untuk saya ada "  # Indonesian
    "di il che per non sono della ".split()  # Italian
)


def language_group(text: str) -> str:
    """ "English" or "non-English", from the script and a count of common function words of the message's head."""
    head = (text or "")[:600]
    if _NON_LATIN.search(head):
        return "non-English"
    words = [w.lower() for w in _WORDS.findall(head)]
    english = sum(w in _ENGLISH for w in words)
    other = sum(w in _OTHER for w in words)
    return "non-English" if other > english else "English"
