"""A 2-4 word description of the mistake, taken from the user's own words where possible."""

from __future__ import annotations

import re

from .detect_text import USER_HEAD, cut

_LABELS = (
    (
        re.compile(
            r"nothing (?:changed|happen)|no (?:change|effect|difference)|没有生效|没生效|didn'?t (?:do|change|apply)"
        ),
        "change had no effect",
    ),
    (re.compile(r"\bstill\b|仍然|依然|还是|furt|pořád|toujours|immer noch"), "still failing"),
    (
        re.compile(r"(?:module|package) not found|can'?t resolve|cannot find module|no module named|modulenotfound"),
        "missing module",
    ),
    (re.compile(r"is not defined|undefined|nameerror|referenceerror"), "undefined name"),
    (re.compile(r"\bimport\b"), "missing import"),
    (re.compile(r"syntax ?error|unexpected token|expected a|erreur de syntaxe"), "syntax error"),
    (re.compile(r"type ?error|type error"), "type error"),
    (re.compile(r"traceback|exception|error|erreur|错误|报错|エラー|failed|crash|plante"), "error after change"),
    (re.compile(r"you forgot|forgot|你忘了|忘"), "forgot something"),
    (re.compile(r"you missed|missed|missing"), "missing part"),
    (re.compile(r"instead of|rather than|don'?t use|do not use|without using"), "wrong approach"),
    (re.compile(r"revert|undo|roll ?back|还原|put (?:it|that) back"), "unwanted change"),
    (re.compile(r"i said|i told you|i asked|not what i|i meant"), "ignored instruction"),
    (re.compile(r"you have (?:it|the)|you already have|already (?:gave|provided|sent)"), "file already provided"),
    (re.compile(r"(?:does ?n'?t|does not|not) (?:work|working|run)|broke|broken"), "not working"),
    (re.compile(r"sense"), "nonsensical reply"),
    (re.compile(r"should (?:be|have)|supposed to"), "wrong result"),
    (re.compile(r"\bwrong\b|incorrect|not correct|actually|不对|错了"), "wrong fact"),
)


def mistake_label(user, prev_assistant) -> str:
    """A 2-4 word description of the mistake, from the user's own words where possible."""
    text = cut(user)[:USER_HEAD].lower()
    for pattern, label in _TOOL_LABELS:
        if pattern.search(text):
            return label
    for pattern, head in _SLOT_LABELS:
        found = pattern.search(text)
        words = [g for g in found.groups() if g and g not in _STOP] if found else []
        if words:
            return " ".join([head] + words[:2])
    for pattern, label in _LABELS:
        if pattern.search(text):
            return label
    return "rejected answer"


_SLOT = r" (?:the |a |an |to )?([a-z][a-z-]{1,20})(?: ([a-z][a-z-]{1,20}))?"
_SLOT_LABELS = (
    (re.compile(r"\bwrong" + _SLOT), "wrong"),
    (re.compile(r"\b(?:forgot|missed|missing|you left out)" + _SLOT), "missing"),
    (re.compile(r"\bmake (?:it|them|this|that)" + _SLOT), "wanted"),
    (re.compile(r"^(?:no|nope|not that)?[,.!]? ?(?:just |please )?use" + _SLOT), "should use"),
)
# A named tool or language in a redirect says what kind of mistake it was better than the words around it.
_TOOL_LABELS = (
    (re.compile(r"\b(?:python|node|java|go|ruby|php) ?v?\d+(?:\.\d+)?\b|\bversion \d"), "wrong version"),
    (re.compile(r"(?:^|\s)--?[a-z][\w-]{0,30}\b"), "missing option"),
    (
        re.compile(
            r"\b(?:use|with|instead|not|prefer|switch to)\b.{0,40}?\b(?:npm|pnpm|yarn|bun|pip3?|pipx|poetry|uv"
            r"|conda|brew|apt(?:-get)?|cargo|gem|composer)\b"
        ),
        "wrong package manager",
    ),
    (
        re.compile(
            r"\b(?:use|in|with|instead|switch to)\b.{0,20}?\b(?:python|typescript|javascript|rust|golang|java"
            r"|bash|zsh|powershell|ruby|kotlin|swift)\b"
        ),
        "wrong language",
    ),
)
_STOP = {
    "add",
    "update",
    "include",
    "the",
    "a",
    "an",
    "one",
    "it",
    "this",
    "that",
    "with",
    "and",
    "in",
    "on",
    "of",
    "to",
    "is",
    "again",
}
