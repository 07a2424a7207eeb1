"""The turn tracker: reads a session's turns and decides when one of them makes a preference pair.

Pure and host-free (no Hermes import), so it is tested and benchmarked on its own. The Hermes
adapter feeds it one ``Turn`` per finished agent turn (``post_llm_call``) in two halves:
``Tracker.advance`` does the cheap bookkeeping on the turn's own thread and returns a ``Pending``;
``capture`` (detection, cutting, scrubbing) needs nothing but that and runs wherever the caller likes.

Each session remembers its last turn: the history before it, the user message and the answer.
When nothing is remembered (the process restarted, ``hermes chat -r`` resumed the session, a one-shot
``hermes chat -q`` turn), the last turn is rebuilt from the history Hermes passes with this one: its
last user message and the final answer to it. The next turn of that session is then compared with it:

* the history grew by exactly that exchange → an ordinary next message: a **correction** if the
  detector says the new message rejects the previous answer (or a **retry** if it re-sends it);
* the history is the same as before the last turn → that exchange was taken back: the same user
  message again is a **retry** (``/retry``), a different one is an **undo** (``/undo`` + a new ask).
  The history no longer holds an answer taken back, so these need the remembered turn;
* anything else (compression, ``/new``, a reset, several exchanges rolled back, missed turns)
  makes no pair and just starts over from this turn.

An answer that came back unchanged never makes a pair, and cron, subagent and batch turns are
ignored. Every text is cut to ``MAX_CHARS`` and scrubbed before it leaves this module.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from . import detect, detect_refit
from .confirm import needs_confirming, stage1
from .detect_text import Window, pair_window
from .scrub import merge_counts, scrub, scrub_messages
from .store import NewPair

MAX_CHARS = detect.MAX_CHARS
# Only conversations with a person produce pairs.
IGNORED_PLATFORMS = frozenset({"", "cron", "subagent", "batch"})
# The prompt keeps the most recent messages only: enough context to train on, bounded cost.
PROMPT_MESSAGES = 40
# Sessions remembered at once; the least recently seen is dropped first.
MAX_SESSIONS = 512


@dataclass(frozen=True)
class Turn:
    """One finished agent turn, as Hermes' ``post_llm_call`` reports it."""

    session_id: str
    platform: str
    user_message: object
    assistant_response: object
    conversation_history: list = field(default_factory=list)


@dataclass(frozen=True)
class Capture:
    """A pair worth asking the user about; ``pair`` is already cut and scrubbed."""

    pair: NewPair
    detected: bool = False  # the detector's model decided (stage 2 may confirm it): not a /retry, an /undo or the gate
    said: str = ""  # all the assistant wrote in the rejected turn, cut and scrubbed, when the detector decided
    # and it is more than the final answer (``pair.rejected``)


@dataclass
class _Last:
    before: list[tuple[str, str]]  # the history before the last turn, as (role, text)
    user: str
    answer: str  # the turn's final answer: a pair's rejected side
    after: list[tuple[str, str]]  # the history the last turn ended with
    said: str = ""  # everything the assistant wrote in the turn (see ``turn_text``): what the detector reads


@dataclass(frozen=True)
class Pending:
    """A turn that follows its session's last one: all ``capture`` needs, with no tracker state."""

    shape: str  # "next" (the history grew by the last exchange), "retry" or "undo" (it was taken back)
    last: _Last
    user: str
    answer: str
    platform: str
    session_id: str


def text_of(content) -> str:
    """The text of a message's content: a string, or the text parts of a multimodal list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return str(content)


def dialogue(history) -> list[tuple[str, str]]:
    """The user and assistant messages of a history, without system, tool and empty tool-call turns."""
    out = []
    for msg in history or ():
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role not in ("user", "assistant"):
            continue
        text = text_of(msg.get("content"))
        if role == "assistant" and not text.strip():
            continue
        out.append((role, text))
    return out


def turn_text(texts: list[str], answer: str) -> str:
    """Everything the assistant wrote to the user in one turn, tool calls aside, ending with its final answer.

    An agent narrates between tool calls ("Now I'll update config.py"); the detector's agent transcripts
    were cut the same way, so it reads the whole turn, not the final message alone."""
    texts = [t.strip() for t in texts if t.strip()]
    if answer.strip() and (not texts or not same_answer(texts[-1], answer)):
        texts.append(answer.strip())
    return "\n\n".join(texts)[:MAX_CHARS]  # the detector reads no more


def split_last_turn(history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The history before this turn's user message (the last user message in it)."""
    for i in range(len(history) - 1, -1, -1):
        if history[i][0] == "user":
            return history[:i]
    return []


def previous_turn(before: list[tuple[str, str]]) -> _Last | None:
    """The last exchange of a history: its last user message and the final answer to it."""
    asked = split_last_turn(before)
    if len(asked) == len(before):
        return None  # no user message at all
    user, answers = before[len(asked)][1], [text for role, text in before[len(asked) + 1 :] if role == "assistant"]
    if not answers:
        return None  # that turn never got an answer (interrupted)
    return _Last(asked, user, answers[-1], before, turn_text(answers, answers[-1]))


def _cut(text: str) -> str:
    return text[:MAX_CHARS]


def same_answer(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


class Tracker:
    """Per-session turn state. Thread-safe: Hermes may run several sessions' turns at once."""

    def __init__(self, max_sessions: int = MAX_SESSIONS):
        self._sessions: OrderedDict[str, _Last] = OrderedDict()
        self._lock = threading.Lock()
        self.max_sessions = max_sessions

    def __len__(self) -> int:
        return len(self._sessions)

    def forget_session(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def advance(self, turn: Turn) -> Pending | None:
        """Record ``turn`` as its session's last one; the work left to decide on a pair, if it may make one.

        Only bookkeeping (which turn follows which), cheap enough for the turn's own thread."""
        if (turn.platform or "") in IGNORED_PLATFORMS or not turn.session_id:
            return None
        user, answer = text_of(turn.user_message), text_of(turn.assistant_response)
        after = dialogue(turn.conversation_history)
        before = split_last_turn(after)
        with self._lock:
            last = self._sessions.pop(turn.session_id, None) or previous_turn(before)
            said = turn_text([text for role, text in after[len(before) + 1 :] if role == "assistant"], answer)
            self._sessions[turn.session_id] = _Last(before, user, answer, after, said)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        if last is None or not answer.strip() or not last.answer.strip():
            return None
        shape = _shape(last, before, user)
        if shape is None or same_answer(last.answer, answer):
            return None
        return Pending(shape, last, user, answer, turn.platform, turn.session_id)

    def observe(self, turn: Turn, threshold: str = "standalone", model_path=None) -> Capture | None:
        """``advance`` and ``capture`` in one call, for a caller with no thread of its own to spare."""
        pending = self.advance(turn)
        return None if pending is None else capture(pending, threshold, model_path)


def _shape(last: _Last, before: list[tuple[str, str]], user: str) -> str | None:
    """How a turn follows the last one: ``next`` message, the same message again (``retry``), or ``undo``."""
    if len(before) == len(last.after) and before == last.after:
        return "next"
    if len(before) == len(last.before) and before == last.before:
        return "retry" if user == last.user else "undo"
    return None


def capture(pending: Pending, threshold: str = "standalone", model_path=None) -> Capture | None:
    """The pair a turn makes, if any: detection, then the pair cut and scrubbed. Pure, and the costly half.

    ``threshold`` is the detector's operating point and ``model_path`` the profile's refitted detector (the
    shipped one when None or unreadable)."""
    kind, label, detected = _classify(pending, threshold, model_path)
    if kind is None:
        return None
    pair, said = _pair(kind, label, pending), pending.last.said
    if kind not in ("correction", "retry"):
        return Capture(pair)  # an /undo: nothing for the refit to learn, nothing for stage 2 to read
    narration = scrub(_cut(said)).text if said and said != pending.last.answer else ""
    # The features of the window the detector scored, from the scrubbed texts: what a card decision on
    # this pair teaches the refit (the pair keeps only the final answer).
    pair = dataclasses.replace(pair, detector_ids=detect_refit.window_ids(pair_window(pair, narration)))
    return Capture(pair, detected, narration if detected else "")


def detection_window(pending: Pending) -> Window:
    """What the detector reads of a turn: the previous request, all the assistant wrote in reply, the new message."""
    last = pending.last
    return Window(last.user, last.said or last.answer, pending.user, pending.answer)


def _classify(pending: Pending, threshold: str, model_path):
    """(kind, label, whether the detector decided) of a turn."""
    if pending.shape == "retry":
        return "retry", "retried answer", False
    window = detection_window(pending)
    if pending.shape == "undo":
        return "undo", stage1(window, "standalone", model_path).label or "undone answer", False
    found = stage1(window, threshold, model_path)
    if found.is_correction:
        return found.kind, found.label, needs_confirming(found)
    return None, None, False


def _pair(kind: str, label: str | None, pending: Pending) -> NewPair:
    last = pending.last
    context = last.before[-(PROMPT_MESSAGES - 1) :] if PROMPT_MESSAGES > 1 else []
    prompt = [{"role": role, "content": _cut(text)} for role, text in context]
    prompt.append({"role": "user", "content": _cut(last.user)})
    prompt, removed_prompt = scrub_messages(prompt)
    said, rejected, accepted = (scrub(_cut(t)) for t in (pending.user, last.answer, pending.answer))
    return NewPair(
        kind=kind,
        user_said=said.text,
        prompt=prompt,
        rejected=rejected.text,
        accepted=accepted.text,
        label=label,
        platform=pending.platform,
        session_id=pending.session_id,
        scrubbed=merge_counts(removed_prompt, said.removed, rejected.removed, accepted.removed),
    )
