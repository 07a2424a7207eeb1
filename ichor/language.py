"""Which language group a text belongs to: English or not, from its script and its function words."""

from __future__ import annotations

import re
from functools import lru_cache

from .package_data import load_json

_NON_LATIN = re.compile(r"[\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WORDS = re.compile(r"[^\W\d_]{1,20}")
# Function words of English and 14 Latin-script languages, written from the languages alone, leaving out
# words common in English or code (docs/function_words_brief.md).
_LISTS = load_json("function_words.json")
_ENGLISH = frozenset(_LISTS["en"])
_OTHER = frozenset(w for lang, words in _LISTS.items() if lang != "en" for w in words)


# The rules and the word classes both ask of the same message: answer once.
@lru_cache(maxsize=16)
def foreign(text: str) -> bool:
    """Whether a text is not English: where the translated word classes and rule phrases apply (some of their
    words are English words or names)."""
    return language_group(text) == "non-English"


def language_group(text: str) -> str:
    """ "English" or "non-English", from the script and a count of common function words of the message's head."""
    head = (text or "")[:600]
    if _NON_LATIN.search(head):
        return "non-English"
    words = [w.lower() for w in _WORDS.findall(head)]
    english = sum(w in _ENGLISH for w in words)
    other = sum(w in _OTHER for w in words)
    return "non-English" if other > english else "English"
