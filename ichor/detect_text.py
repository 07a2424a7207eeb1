"""The judged window and the text helpers the detector's rules and features share.

Every input is cut to ``MAX_CHARS`` once, and rules and features look only at bounded heads of each
text, so hostile input cannot stall a turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHARS = 20000
# Only the start of each text carries the signal the features look at; this also bounds cost.
USER_HEAD = 600
ASSISTANT_HEAD = 240
PREV_HEAD = 2000
HEAD_TOKENS = 60  # the message's words stage 1 reads: the first 60 tokens within USER_HEAD characters
TAIL_CHARS = 600


@dataclass(frozen=True)
class Window:
    """One judged exchange: the previous request and answer, the message, and the reply to it ("" when unknown)."""

    prev_user: str
    prev_assistant: str
    user: str
    assistant: str = ""

    @classmethod
    def of(cls, prev_user, prev_assistant, user, assistant) -> Window:
        return cls(*(cut(x) for x in (prev_user, prev_assistant, user, assistant)))


def pair_window(pair, said: str = "") -> Window:
    """The window a captured pair was detected in, from its scrubbed texts: the previous request, all the
    assistant wrote in that turn (``said``; the pair keeps only the final answer), the message and its reply."""
    last = pair.prompt[-1] if pair.prompt else {}
    prev_user = last.get("content", "") if isinstance(last, dict) else ""
    return Window.of(prev_user, said or pair.rejected, pair.user_said, pair.accepted)


def cut(text) -> str:
    """Any value as text, cut to MAX_CHARS (None is "")."""
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    return text[:MAX_CHARS]


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


HAN_KANA = "\u3040-\u30ff\u3400-\u9fff"  # written without spaces: each character is a token
# A word is letters and digits of any script (about a fifth of real messages are not English); ASCII is tried first
# because it is most of the text.
_TOKEN = re.compile(rf"(?:[a-z0-9']|[^\W_{HAN_KANA}]){{1,30}}|[{HAN_KANA}]")
_ONE_HAN_KANA = re.compile(f"[{HAN_KANA}]")


def tokens(text: str, limit: int) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text.lower()):
        out.append(m.group())
        if len(out) >= limit:
            break
    return out


def with_compounds(toks: list[str]) -> list[str]:
    """The tokens, then every run of two or three Han/kana tokens joined (the words a lexicon can name)."""
    out = list(toks)
    han = [_ONE_HAN_KANA.fullmatch(t) is not None for t in toks]
    if not any(han):
        return out
    for n in (2, 3):
        for i in range(len(toks) - n + 1):
            if all(han[i : i + n]):
                out.append("".join(toks[i : i + n]))
    return out


def rest_of(text: str) -> str:
    """The message after its head (the first HEAD_TOKENS tokens within USER_HEAD characters); "" for most."""
    end = min(len(text), USER_HEAD)
    for n, m in enumerate(_TOKEN.finditer(text[:USER_HEAD].lower()), 1):
        if n == HEAD_TOKENS:
            end = m.end()
            break
    return text[end:]


def tail_of(rest: str) -> str:
    """The end of the rest that the tail features read: its last TAIL_CHARS characters."""
    return rest[-TAIL_CHARS:]


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def bucket(name: str, value: float, edges: tuple[float, ...]) -> str:
    i = sum(value >= e for e in edges)
    return f"{name}{i}"
