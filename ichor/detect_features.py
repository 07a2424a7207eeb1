"""Features of one window for the trained detector (pure Python, shared by inference and fitting).

Three families, all binary and named by strings so the shipped weights are a readable JSON map:

* word unigrams/bigrams of the head of the user's message (CJK characters count as words);
* word classes and shape of the message and of how it relates to the previous turn (pasted error,
  overlap with the previous request and answer, question form, length, script), and the hand rules;
  a message or reply that is not in English also gets its classes from ``data/lexicon_i18n.json``;
* words at the start of the assistant's reply to it, when that reply is known;
* optionally, words and shape of the rest of the message after its head (``EXTRA_FAMILIES``).
"""

from __future__ import annotations

import re

from .detect_rules import (
    _ERROR_WORD,
    _QUESTION_ABOUT,
    asks_question,
    code_overlap,
    containment,
    content_words,
    edited_code,
    has_error_shape,
    reply_rule_hits,
    rule_hits,
)
from .detect_text import (
    ASSISTANT_HEAD,
    HEAD_TOKENS,
    PREV_HEAD,
    USER_HEAD,
    Window,
    bucket,
    jaccard,
    rest_of,
    tail_of,
    tokens,
    with_compounds,
)
from .language import foreign
from .package_data import load_json

# Word classes of the user's message and of the start of the new answer.  Classes generalise across
# logs far better than raw phrases, which is what the learned layer mostly weighs.
_LEXICON = {
    "still": r"still|again|anymore|any more|yet|same|furt|pořád|stále|toujours|encore|仍然|依然|还是|まだ",
    "neg": r"not|n't|no|never|nothing|none|nor|without|ne|pas|nic|nejde|不|没|没有",
    "fail": r"errors?|fail|failed|failing|fails|broke|broken|break|crash\w*|stall\w*|exception|bug|issues?|"
    r"problems?|wrong|"
    r"incorrect|missing|undefined|cannot|can't|unable|weird|erreur|problème|plante|chyb\w*|错误|问题|报错|エラー",
    "work": r"work|works|working|worked|runs?|running|compiles?|loads?|shows?|display\w*|visible|appears?|effect|"
    r"happen\w*|marche|fonctionne|funguje|生效|显示",
    "you": r"you|your|you've|you're|tu|tes|ton|ta|vous|你",
    "past": r"changed|did|made|added|removed|modified|updated|applied|last|previous|earlier|before|now|after",
    "new": r"add|create|implement|new|next|also|write|generate|build|let's|lets|another|include|请在|添加|ajoute|crée",
    "ask": r"what|how|which|where|explain|describe|tell|can|could|would|is|are|do|does",
    "praise": r"thanks?|thank|great|perfect|good|nice|cool|love|excellent|awesome|done",
    "fix": r"fix|repair|correct|solve|resolve|debug|修复|corrige",
    "revert": r"revert|undo|rollback|restore|original|back|还原|annule|remets",
    "instead": r"instead|rather|only|just|actually|should|must|need|needs",
}
_ANSWER_LEXICON = {
    "ack": r"right|correct|apolog\w*|sorry|mistake|oversight|overlooked|misunderstood|confusion|excuse",
    "fix": r"fix|fixes|error|errors|issue|issues|problem|bug|resolve|troubleshoot\w*|debug|cause|causing|occurs|"
    r"still|again|wrong|failing|fails|stall\w*|missing|chyb\w*|erreur|problème|错误|问题|stále",
    "new": r"add|adding|create|creating|implement|new|include|sure|here's|here|help|ensure",
    "see": r"see|look|looks|seems|appears|likely|might|check",
}
_LEX_RE = {k: re.compile(r"(?:" + v + r")") for k, v in _LEXICON.items()}
_ALEX_RE = {k: re.compile(r"(?:" + v + r")") for k, v in _ANSWER_LEXICON.items()}
# The same classes in 17 other languages (written from the English lists alone, see docs/detector-experiments.md).
_I18N = load_json("lexicon_i18n.json")
_ANSWER_I18N = {"ack": "ack", "fix": "afix", "new": "anew", "see": "see"}
_LEX_WORDS = {k: frozenset(w for ws in _I18N[k].values() for w in ws) for k in _LEXICON}
_ALEX_WORDS = {k: frozenset(w for ws in _I18N[v].values() for w in ws) for k, v in _ANSWER_I18N.items()}


def _classes(toks: list[str], table: dict, translated: dict | None = None) -> dict[str, int]:
    """How many tokens fall in each class; ``translated`` adds the classes' words in other languages."""
    counts: dict[str, int] = {}
    for t in with_compounds(toks):
        for name, rx in table.items():
            if (translated is not None and t in translated[name]) or rx.fullmatch(t):
                counts[name] = counts.get(name, 0) + 1
    return counts


FAMILIES = ("words", "shape", "reply")
# The rest of a long message, after the head the words family reads (measured, not shipped:
# docs/detector-experiments.md, "the rest of the message").
EXTRA_FAMILIES = ("tail", "rest", "tail_shape")
TAIL_TOKENS = 40
REST_TOKENS = 400 - HEAD_TOKENS
# Rules that read the assistant's new reply belong to the reply family: absent when the reply is unknown.
REPLY_RULES = ("ack", "echo")


def features(w: Window, families: tuple[str, ...] = FAMILIES) -> list[str]:
    """Binary features of one window (names), shared by detect() and detect_fit."""
    u_toks = tokens(w.user[:USER_HEAD], 80)
    feats = ["bias"]
    if "words" in families:
        feats += word_features(u_toks[:60])
    if "shape" in families:
        feats += shape_features(w, u_toks)
    if "reply" in families and w.assistant.strip():
        feats += reply_features(w)
    if any(f in families for f in EXTRA_FAMILIES):
        feats += rest_features(rest_of(w.user), families)
    return feats


def rest_features(rest: str, families: tuple[str, ...]) -> list[str]:
    """Words and shape of the message after its head, each family under its own prefix."""
    if not rest.strip():
        return []
    feats = []
    tail = tail_of(rest)
    tail_toks = tokens(tail, len(tail))
    if len(tail) < len(rest) and rest[-len(tail) - 1].isalnum() and tail[:1].isalnum():
        tail_toks = tail_toks[1:]  # the cut fell inside a word
    tail_toks = tail_toks[-TAIL_TOKENS:]
    if "tail" in families:
        feats += ["tail:" + t for t in tail_toks]
        feats += [f"tail2:{a}_{b}" for a, b in zip(tail_toks, tail_toks[1:], strict=False)]
    if "rest" in families:
        feats += ["rest:" + t for t in tokens(rest, REST_TOKENS)]
    if "tail_shape" in families:
        feats += tail_shape_features(tail, tail_toks)
    return feats


def tail_shape_features(tail: str, tail_toks: list[str]) -> list[str]:
    """Where a long message ends: its word classes, a pasted error, a question, a code block."""
    feats = ["tl:" + k for k in _classes(tail_toks, _LEX_RE)]
    if has_error_shape(tail):
        feats.append("tail_err_shape")
    if _ERROR_WORD.search(tail.lower()):
        feats.append("tail_err_word")
    end = tail.rstrip()[-160:]
    if "?" in end or "\uff1f" in end:
        feats.append("tail_question")
    if "```" in tail:
        feats.append("tail_code_block")
    return feats


def word_features(toks: list[str]) -> list[str]:
    out = ["w:" + t for t in toks]
    out += [f"w2:{a}_{b}" for a, b in zip(toks, toks[1:], strict=False)]
    if toks:
        out.append("u0:" + toks[0])
    if len(toks) > 1:
        out.append(f"u01:{toks[0]}_{toks[1]}")
    return out


def _script(text: str) -> str:
    letters = [ch for ch in text[:USER_HEAD] if ch.isalpha()]
    if not letters:
        return "none"
    if any("\u3040" <= ch <= "\u9fff" for ch in letters):
        return "cjk"
    if any("\u0400" <= ch <= "\u04ff" for ch in letters):
        return "cyrillic"
    accented = sum(not ch.isascii() for ch in letters)
    return "latin_accented" if accented / len(letters) > 0.02 else "ascii"


def shape_features(w: Window, u_toks: list[str]) -> list[str]:
    """Rule hits, word classes and the message's shape and relation to the previous turn."""
    feats = ["rule:" + h for h in rule_hits(w) if h not in REPLY_RULES]
    uc = _classes(u_toks[:40], _LEX_RE, _LEX_WORDS if foreign(w.user) else None)
    feats += ["ul:" + k for k in uc]
    feats += ["ul2:" + k for k, v in uc.items() if v >= 2]
    for a, b in (
        ("neg", "work"),
        ("still", "neg"),
        ("still", "fail"),
        ("you", "neg"),
        ("you", "past"),
        ("neg", "fix"),
    ):
        if a in uc and b in uc:
            feats.append(f"ul:{a}+{b}")
    if len(u_toks) <= 12:
        feats += ["uls:" + k for k in uc]
    pu = set(tokens(w.prev_user[:USER_HEAD], 80))
    feats.append(bucket("sim_pu", jaccard(set(u_toks), pu), (0.2, 0.4, 0.6, 0.85)))
    feats.append(bucket("len", len(u_toks), (3, 8, 20, 60)))
    mine = content_words(w.user)
    feats.append(bucket("in_pu", containment(mine, content_words(w.prev_user)), (0.2, 0.5, 0.8)))
    feats.append(bucket("in_pa", containment(mine, content_words(w.prev_assistant, PREV_HEAD)), (0.2, 0.5, 0.8)))
    overlap = code_overlap(w)
    feats.append(bucket("ov", overlap, (0.01, 0.34, 0.67)))
    if has_error_shape(w.user):
        feats.append("err_shape")
        feats.append(bucket("err_ov", overlap, (0.01, 0.34)))
    if _ERROR_WORD.search(w.user[:USER_HEAD].lower()):
        feats.append("err_word")
    if "```" in w.user[:PREV_HEAD]:
        feats.append("code_block")
    if edited_code(w.prev_assistant[:PREV_HEAD]):
        feats.append("pa_edited")
    if not w.prev_assistant.strip():
        feats.append("pa_empty")
    head = w.user[:USER_HEAD].strip()
    if "?" in head or "\uff1f" in head:
        feats.append("question")
    if _QUESTION_ABOUT.search(head.lower()):
        feats.append("wh_start")
    feats.append("script:" + _script(head))
    if asks_question(w.prev_assistant):
        feats.append("pa_asked")
        if u_toks and u_toks[0] in ("no", "yes", "yeah", "ok", "okay", "sure", "y", "n"):
            feats.append("pa_asked_answered")
    return feats


def reply_features(w: Window) -> list[str]:
    """How the assistant's reply to the message opens: an apology or "still" reads the message as a correction."""
    a_text = w.assistant.lstrip()
    if a_text.startswith("<think>"):
        a_text = a_text[7:]
    a_toks = tokens(a_text[:ASSISTANT_HEAD], 30)
    feats = ["rule:" + h for h in reply_rule_hits(w)]
    feats += ["al:" + k for k in _classes(a_toks, _ALEX_RE, _ALEX_WORDS if foreign(w.assistant) else None)]
    feats += ["a:" + t for t in a_toks[:12]]
    a_sim = jaccard(set(a_toks), set(tokens(w.prev_assistant[:ASSISTANT_HEAD], 30)))
    feats.append(bucket("sim_pa", a_sim, (0.3, 0.6, 0.85)))
    return feats
