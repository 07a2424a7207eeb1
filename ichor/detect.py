"""Correction detector: does the user's new message correct or re-send the previous request?

Three layers, all pure Python:

* **gates** decide the clear cases outright: an answer that came back unchanged, a bare
  yes/no/continue/thanks, and an identical re-send (a retry);
* **rules** spot rejecting openers, "still failing" reports, redirects, messages that mostly restate
  the previous turn (a reworded re-send, a pasted instruction block restating the fix), and the assistant
  admitting a mistake ("You're right", "I apologize");
* a **learned layer** (logistic regression, weights in ``ichor/data/detector.json``, fitted by
  ``python -m ichor.detect_fit``) scores everything else from word features of the user's message
  and of the start of the new answer, plus shape features (pasted errors, overlap with the previous
  answer, similarity to the previous request).  Rule hits are features of the learned layer too.

Every input is cut to ``MAX_CHARS`` first and every pattern is linear-time, so hostile text cannot
stall a turn.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

MAX_CHARS = 20000
# Only the start of each text carries the signal the word features look at; this also bounds cost.
USER_HEAD = 600
ASSISTANT_HEAD = 240
PREV_HEAD = 4000
KINDS = ("correction", "retry", "none")


@dataclass(frozen=True)
class Detection:
    kind: str
    label: str | None
    score: float
    layers: tuple[str, ...] = ()

    @property
    def is_correction(self) -> bool:
        return self.kind in ("correction", "retry")


@dataclass(frozen=True)
class Window:
    """One judged exchange, cut and lower-cased once."""

    prev_user: str
    prev_assistant: str
    user: str
    assistant: str

    @classmethod
    def of(cls, prev_user, prev_assistant, user, assistant) -> Window:
        return cls(*(_cut(x) for x in (prev_user, prev_assistant, user, assistant)))


def _cut(text) -> str:
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    return text[:MAX_CHARS]


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


# --------------------------------------------------------------------------------------- gates

_BARE = re.compile(
    r"(?:y|n|yes|yeah|yep|yup|no|nope|nah|ok|okay|k|sure|go ahead|do it|please do|proceed|"
    r"continue|go on|keep going|next|carry on|pokračuj|pokračujme|继续|続けて|continuer|continue please|"
    r"please continue|ok continue|okay continue|yes please|no thanks|no thank you)"
)
_THANKS = re.compile(
    r"(?:thanks?|thank you|thx|ty|perfect|great|awesome|nice|cool|excellent|well done|good job|"
    r"looks good|lgtm|works|it works|that works|works now|that worked|merci|danke|gracias|谢谢|ありがとう)"
    r"(?:[ ,.!]*(?:a lot|so much|very much|perfect|great|that works|it works|works now|thanks?|"
    r"thank you|well done|good job|love it|nice|awesome))*"
)
_TRIM = " .!?,;:)(-~*'\"\u3002\uff01\uff1f"


def _bare_reply(user_norm: str) -> bool:
    """A bare yes/no/continue/thanks: never a correction on its own."""
    core = user_norm.strip(_TRIM)
    if len(core) > 40:
        return False
    core = re.sub(r"^(?:\d+ )", "", core)  # dialogue logs number their turns
    return bool(_BARE.fullmatch(core) or _THANKS.fullmatch(core))


def unchanged_answer(w: Window) -> bool:
    return bool(w.assistant.strip()) and normalise(w.assistant) == normalise(w.prev_assistant)


def identical_resend(w: Window) -> bool:
    u = normalise(w.user)
    return bool(u) and u == normalise(w.prev_user) and not _bare_reply(u)


# --------------------------------------------------------------------------------------- rules
# Each rule is (name, pattern). Patterns see only the head of the text, and none nests
# quantifiers, so each runs in time linear in that bounded head.

_OPENER = re.compile(
    r"^(?:\W{0,3})(?:no|nope|nah|wrong|incorrect|actually|not quite|not really|that'?s (?:not|wrong|incorrect|the wrong)|"
    r"that is (?:not|wrong|incorrect)|this is (?:not|wrong)|it'?s not|not what i|"
    r"you (?:forgot|missed|ignored|didn'?t|did not|broke|removed|deleted|misunderstood|have (?:it|the))|"
    r"i (?:said|told you|meant|just said)|why did you|wait|hold on|attends|"
    r"nein|non|falsch|faux|不对|不是|错了|你忘了|違います|ne|špatně)\b",
)
_NO = re.compile(r"^(?:\W{0,3})(?:no|nope|nah|non|nein|ne)\b")
_STILL = re.compile(
    r"\b(?:still (?:not|no|doesn'?t|does not|isn'?t|is not|won'?t|can'?t|fail|failing|broken|the same|"
    r"getting|get|seeing|see|same|stall|stalls|crash|crashes|an? |there|throw|shows?|has|have|turns?|nothing)|"
    r"nothing (?:changed|happens|happened|is working|works)|no (?:change|effect|difference)|"
    r"(?:doesn'?t|does not|didn'?t|did not|isn'?t|is not|not) (?:work|working|fix|help|change|run|compile|load|show|display)|"
    r"same (?:error|problem|issue|result)|again the same|didn'?t (?:do|apply|change) anything|"
    r"that (?:broke|breaks)|(?:you|it) broke|made (?:it|things) worse|not (?:fixed|solved|resolved)|"
    r"makes? (?:no|zero) sense|doesn'?t make (?:any )?sense|not making sense|did not even make sense|"
    r"furt|pořád|stále|toujours pas|ne marche pas|ne fonctionne pas|nefunguje|sigue sin|todavía no|immer noch|"
    r"funktioniert nicht|no longer (?:works?|working|shows?|runs?)|not any ?more)"
    # CJK characters are word characters, so a \b before them would fail after another CJK character
    r"|仍然|依然|还是|没有生效|没生效|不起作用|没用|まだ|効かない",
)
_REDIRECT = re.compile(
    r"(?:\binstead of\b|\brather than\b|\bsupposed to\b|(?<!what )\bi (?:said|asked for|told you)\b|\bnot what i\b|"
    r"\byou (?:forgot|missed|ignored|didn'?t|did not)\b|\byou already have\b|"
    r"\bwrong \w|\bthat'?s wrong\b|\bis wrong\b|\bare wrong\b|\buse \S{1,40} instead\b|\bdon'?t use\b|\bdo not use\b|"
    r"\brevert (?:your|that|this|the last|last) (?:change|changes|edit|edits|commit)|\bundo (?:that|this|your|the last|last)\b|"
    r"\bterrible idea\b|\bnot correct\b|\bincorrect\b|\bmisinterpret\w*|\bmisunderstood\b|"
    r"你忘了|忘了|不对|错了|还原|annule|remets)",
)
_ERROR_SHAPE = re.compile(
    r"(?:Traceback \(most recent call last\)|\b[A-Z]\w{0,40}(?:Error|Exception)\b|\berror(?:\[\w+\])?:|"
    r"\bERROR\b|Failed to compile|failed to compile|\bfailed\b|\bFAILED\b|Cannot find|Can'?t resolve|"
    r"is not defined|not found|undefined|\bE\d{3,5}\b|\bline \d+|:\d+:\d+|\bat \S{1,80}:\d+|"
    r"Uncaught|Unhandled|panicked|Segmentation fault|status code:? ?[45]\d\d|\b[45]\d\d (?:Method|Not|Internal|Bad))",
)
_ERROR_WORD = re.compile(
    r"(?:error|errors|erreur|chyba|chybu|错误|报错|エラー|exception|crash|plante|fails?\b|failing)"
)
# A failure reported in words, not pasted: "I get this error", "an error pops up when I run it",
# "now I have: Module not found", "it stalls at this stage", "my config crashes on …".
_FAILURE_REPORT = re.compile(
    r"(?:\b(?:i|we) (?:still |now |keep |always )?(?:get|got|getting|am getting|'m getting|see|have|receive)\b[^.\n]{0,40}?"
    r"\b(?:errors?|exception|warnings?|crash\w*)\b|"
    r"\berrors? (?:pops?|popped|appears?|appeared|shows?|showed|occurs?|occurred|comes? up|came up|happens?|is thrown)|"
    r"\bnow i (?:have|get|see)\b[^\n]{0,12}(?:error|not found|exception|failed|undefined|cannot|can'?t (?:find|resolve))|"
    r"\b(?:it|this|that|the (?:app|page|build|site|server|script|program)) (?:now |still |just )?"
    r"(?:stalls|hangs|freezes|crashes|fails|throws|breaks)\b|\b(?:stalls|hangs|freezes) (?:at|on|after|when)\b|"
    r"\bplante\b|\bn'existe (?:pas|plus)\b|\bnefunguje\b|报错|出错)",
)
# The answer before asked for the log or error text: pasting it is the requested input, not a correction.
_ASKED_FOR_OUTPUT = re.compile(
    r"(?:paste|share|provide|send|show me|post|copy|run)\b[^.?!\n]{0,60}\b(?:error|log|output|message|traceback|console|"
    r"stack|terminal)"
)
_EDITED = re.compile(r"```|<<<<<<<|>>>>>>>|\bSEARCH\b|\bREPLACE\b|<source>")
_FILE = re.compile(
    r"[\w\-]{1,60}\.(?:tsx?|jsx?|mjs|py|rb|cs|html?|css|scss|json|java|go|rs|astro|vue|php|c|cc|cpp|h|kt|swift|sh|ya?ml|toml|csproj)\b"
)
# Complaints and redirects without a rejecting opener.
_COMPLAINT = re.compile(
    r"(?:\b(?:it|this|that|they) should (?:only|not|never)\b|\bshould(?:n'?t| not) (?:be|have|show|use|appear|display)\b|"
    r"\bso that it (?:does not|doesn'?t|won'?t|will not)\b|\bwhy (?:not|isn'?t|doesn'?t|didn'?t|is it not|does it not)\b|"
    r"nothing you(?:'re| are) saying|\byou think so\b|\bare you sure\b|\bthat'?s not (?:true|right)\b|\bit'?s actually\b|"
    r"\b(?:a (?:bit|little)|slightly|trochu|un peu) (?:more|less|higher|lower|bigger|smaller|up|down|left|right|wider)\b|"
    r"\b(?:odsa\w*|posu\w*|zarovn\w*) [^.\n]{0,20}\btrochu\b|\btrochu [^.\n]{0,20}\b(?:odsa\w*|posu\w*|zvrchu|zespodu|od spodu)|"
    r"\b(?:in|use|using) (?:the )?search ?/ ?replace\b|\bsearch ?/ ?replace (?:format|blocks?)\b|"
    r"\b(?:modify|edit|update|change) the files? directly\b|\bapply (?:the|your|those) (?:changes|edits) directly\b|"
    r"\bpresque\b|\balmost there\b)"
    r"|请直接|直接修改|直接更新|search[^。，\n]{0,30}replace[^。，\n]{0,5}格式|也要改|还是没|稍微",
)
_EMPHATIC = re.compile(r"\b(?:ALL|ONLY|EVERY|NOT|STILL|NEVER)\b")
_ACK = re.compile(
    r"^(?:<think>\s{0,5})?(?:\W{0,3})(?:you'?re (?:absolutely |completely |quite )?(?:right|correct)|"
    r"you are (?:absolutely |completely |quite )?(?:right|correct)|my apologies|i apologi[sz]e|apologies|"
    r"sorry|i'?m sorry|i am sorry|good catch|my mistake|my bad|oops|you'?re right to|i see the (?:error|issue|problem)|"
    r"i see what (?:went wrong|happened)|i misunderstood|let me (?:fix|correct)|i made (?:a|an) (?:mistake|error))",
)
_QUESTION_ABOUT = re.compile(r"^(?:what|how|why|where|when|which|who|can you|could you|is there|do you|does)\b")


def rule_hits(w: Window) -> tuple[str, ...]:
    user = w.user[:USER_HEAD].lower()
    head = user[:160]
    hits = []
    if _OPENER.search(head) and not (_NO.search(head) and _asks_question(w.prev_assistant)):
        hits.append("opener")
    if _STILL.search(user):
        hits.append("still")
    if len(user) < 300 and _REDIRECT.search(user):
        hits.append("redirect")
    if _ACK.search(w.assistant[:ASSISTANT_HEAD].lower()):
        hits.append("ack")
    if _reported_failure(w) or _failure_in_words(w):
        hits.append("failure")
    if _COMPLAINT.search(user[:300]) or (len(user) < 200 and _EMPHATIC.search(w.user[:200])):
        hits.append("complaint")
    if similarity(w.user, w.prev_user) >= 0.4:
        hits.append("rephrase")
    if _reworded_request(w):
        hits.append("reworded")
    if _restated_fix(w):
        hits.append("restated")
    if _disputed_claim(w):
        hits.append("dispute")
    if similarity(w.assistant, w.prev_assistant, ASSISTANT_HEAD, 60) >= 0.6:
        hits.append("echo")  # the new answer opens like the old one: the same request came again
    return tuple(hits)


def similarity(a: str, b: str, head: int = USER_HEAD, limit: int = 80) -> float:
    """Jaccard overlap of the first words of two texts."""
    return _jaccard(set(tokens(a[:head], limit)), set(tokens(b[:head], limit)))


def has_error_shape(text: str) -> bool:
    """Error-report shape, looked for where it shows: the first lines and the last (a traceback's end)."""
    return bool(_ERROR_SHAPE.search(text[:3000] if len(text) <= 4000 else text[:3000] + "\n" + text[-1000:]))


def _reported_failure(w: Window) -> bool:
    """A pasted error that names something the previous answer touched."""
    if not has_error_shape(w.user):
        return False
    return _code_overlap(w) >= 0.34


def _failure_in_words(w: Window) -> bool:
    """A failure described near the start of the message, right after an answer that edited code.

    Either reported in words ("I get this error", "it stalls at …") or naming a file the previous answer
    touched next to an error word; never when that answer asked for the error or log.
    """
    head = w.user[:200]
    prev = w.prev_assistant[:PREV_HEAD]
    if not _EDITED.search(prev) or _ASKED_FOR_OUTPUT.search(prev[-400:].lower()):
        return False
    if _FAILURE_REPORT.search(head.lower()):
        return True
    if not _ERROR_WORD.search(head.lower()):
        return False
    return bool({f.lower() for f in _FILE.findall(head)} & {f.lower() for f in _FILE.findall(prev)})


_IDENT = re.compile(r"[A-Za-z_$][\w$]{2,60}(?:\.[A-Za-z]\w{0,15})?")
_CODEISH = re.compile(r"[_.$]|[a-z][A-Z]")


def _identifiers(text: str) -> set[str]:
    return {t.lower() for t in _IDENT.findall(text) if _CODEISH.search(t)}


def _code_overlap(w: Window) -> float:
    """Share of code-like identifiers in the user's message that the previous answer mentioned."""
    mine = _identifiers(w.user[:PREV_HEAD])
    if not mine:
        return 0.0
    theirs = _identifiers(w.prev_assistant[:PREV_HEAD])
    return len(mine & theirs) / len(mine)


# ------------------------------------------------------------------------------ restatement
# How much of the user's message was already said in the previous turn.  A new request brings new
# words; a message made mostly of the previous request's and answer's words re-addresses what was
# just done (a reworded re-send, or a long instruction block that restates the fix).

# CJK has no spaces: its characters count in pairs, so a Chinese request is not judged by its file names alone.
_CONTENT = re.compile(r"[a-z\u00e0-\u00ff][a-z0-9_\u00e0-\u00ff]{2,30}|[\u3040-\u30ff\u3400-\u9fff]{2}")
_STOPWORDS = frozenset(
    "the and for are with this that from you your can could would should will does did not but just also all any "
    "some into there here what how why which when where who its it's i'm let's then than have has had was were been "
    "les des une est pour que qui dans sur par pas cette tout tous avec sont der die das und ist nicht".split()
)
REWORDED_MIN_WORDS = 4
REWORDED_CONTAINMENT = 0.6
RESTATED_MIN_WORDS = 20
RESTATED_CONTAINMENT = 0.5


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str, head: int = 2000) -> set[str]:
    """Lightly stemmed content words of the start of a text (stopwords and short words dropped)."""
    return {_stem(t) for t in _CONTENT.findall(text[:head].lower()) if t not in _STOPWORDS}


def containment(part: set, whole: set) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _is_question(text: str) -> bool:
    head = text[:USER_HEAD]
    return "?" in head or "\uff1f" in head


def _reworded_request(w: Window) -> bool:
    """A short request made almost entirely of the previous request's words: the same ask again."""
    mine = content_words(w.user)
    if len(mine) < REWORDED_MIN_WORDS or _is_question(w.user):
        return False
    return containment(mine, content_words(w.prev_user)) >= REWORDED_CONTAINMENT


def _restated_fix(w: Window) -> bool:
    """A long instruction block, after an answer that edited code, mostly restating that turn's content."""
    mine = content_words(w.user)
    if len(mine) < RESTATED_MIN_WORDS or not _EDITED.search(w.prev_assistant[:PREV_HEAD]):
        return False
    said = content_words(w.prev_user) | content_words(w.prev_assistant, PREV_HEAD)
    return containment(mine, said) >= RESTATED_CONTAINMENT


# "The piano is a stringed instrument?": the previous answer's claim echoed back as a question.
_ECHO_QUESTION = re.compile(
    r"(?:^|[.!?]\s{1,3})(?!(?:what|how|why|where|when|which|who|whom|whose|is|are|was|were|do|does|did|can|could|"
    r"would|will|should|shall|may|might|have|has|had|any|anything|and|or|so|ok|okay)\b)"
    r"((?:the |a |an |this |that |it |they |he |she |you )?[a-z][\w'-]{0,30}(?: [\w'-]{1,30}){0,2} "
    r"(?:is|are|was|were|has|have|had|can|does|did) (?:a |an |the |not )?[^?.!\n]{1,60})\?"
)


def _disputed_claim(w: Window) -> bool:
    found = _ECHO_QUESTION.search(w.user[:300].lower())
    if not found:
        return False
    claim = content_words(found.group(1))
    return len(claim) >= 2 and containment(claim, content_words(w.prev_assistant, PREV_HEAD)) >= 0.5


# ----------------------------------------------------------------------------- learned features

_TOKEN = re.compile(r"[a-z0-9']{1,30}|[\u3040-\u30ff\u3400-\u9fff]")


def tokens(text: str, limit: int) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text.lower()):
        out.append(m.group())
        if len(out) >= limit:
            break
    return out


def _ngrams(prefix: str, toks: list[str]) -> list[str]:
    feats = [prefix + t for t in toks]
    feats += [f"{prefix}{a}_{b}" for a, b in zip(toks, toks[1:], strict=False)]
    return feats


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _bucket(name: str, value: float, edges: tuple[float, ...]) -> str:
    i = sum(value >= e for e in edges)
    return f"{name}{i}"


# Word classes of the user's message and of the start of the new answer.  Classes generalise across
# logs far better than raw phrases, which is what the learned layer mostly weighs.
_LEXICON = {
    "still": r"still|again|anymore|any more|yet|same|furt|pořád|stále|toujours|encore|仍然|依然|还是|まだ",
    "neg": r"not|n't|no|never|nothing|none|nor|without|ne|pas|nic|nejde|不|没|没有",
    "fail": r"errors?|fail|failed|failing|fails|broke|broken|break|crash\w*|stall\w*|exception|bug|issues?|problems?|wrong|"
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
NGRAMS = False  # raw word features memorise single logs; grouped CV prefers the classes alone


def _classes(toks: list[str], table: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in toks:
        for name, rx in table.items():
            if rx.fullmatch(t):
                counts[name] = counts.get(name, 0) + 1
    return counts


_OFFER = re.compile(
    r"(?:would you|do you|shall i|should i|can i|may i|want me to|like me to|anything else|how about|"
    r"is there anything)"
)


def _asks_question(text: str) -> bool:
    """Does the answer end by asking the user something (so a bare "no" is a reply, not a rejection)?"""
    tail = text.rstrip()[-160:]
    return "?" in tail or bool(_OFFER.search(tail.lower()))


def features(w: Window, hits: tuple[str, ...] | None = None) -> list[str]:
    """Binary features of one window (names), shared by detect() and detect_fit."""
    hits = rule_hits(w) if hits is None else hits
    u_toks = tokens(w.user[:USER_HEAD], 80)
    a_text = w.assistant.lstrip()
    if a_text.startswith("<think>"):
        a_text = a_text[7:]
    a_toks = tokens(a_text[:ASSISTANT_HEAD], 30)
    feats = ["bias"]
    if NGRAMS:
        feats += ["u:" + t for t in u_toks[:25]]
        feats += ["a:" + t for t in a_toks[:20]]
    if u_toks:
        feats.append("u0:" + u_toks[0])
    feats += ["rule:" + h for h in hits]
    uc = _classes(u_toks[:40], _LEX_RE)
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
    ac = _classes(a_toks, _ALEX_RE)
    feats += ["al:" + k for k in ac]
    short = len(u_toks) <= 12
    if short:
        feats += ["uls:" + k for k in uc]
    pu = set(tokens(w.prev_user[:USER_HEAD], 80))
    us = set(u_toks)
    feats.append(_bucket("sim_pu", _jaccard(us, pu), (0.2, 0.4, 0.6, 0.85)))
    feats.append(_bucket("len", len(u_toks), (3, 8, 20, 60)))
    overlap = _code_overlap(w)
    feats.append(_bucket("ov", overlap, (0.01, 0.34, 0.67)))
    if has_error_shape(w.user):
        feats.append("err_shape")
        feats.append(_bucket("err_ov", overlap, (0.01, 0.34)))
    if _ERROR_WORD.search(w.user[:USER_HEAD].lower()):
        feats.append("err_word")
    head = w.user[:USER_HEAD].strip()
    if "?" in head:
        feats.append("question")
    if _QUESTION_ABOUT.search(head.lower()):
        feats.append("wh_start")
    if _asks_question(w.prev_assistant):
        feats.append("pa_asked")
        if u_toks and u_toks[0] in ("no", "yes", "yeah", "ok", "okay", "sure", "y", "n"):
            feats.append("pa_asked_answered")
    a_sim = _jaccard(set(a_toks), set(tokens(w.prev_assistant[:ASSISTANT_HEAD], 30)))
    feats.append(_bucket("sim_pa", a_sim, (0.3, 0.6, 0.85)))
    return feats


# ------------------------------------------------------------------------------------- weights


@lru_cache(maxsize=1)
def load_model() -> dict:
    """The learned layer: {"weights": {feature: w}, "threshold": t, ...}."""
    try:
        text = resources.files("ichor").joinpath("data/detector.json").read_text(encoding="utf-8")
        model = json.loads(text)
    except (OSError, ValueError):
        return {"weights": {}, "threshold": 1.0}
    return model


def learned_score(feats: list[str], weights: dict) -> float:
    z = sum(weights.get(f, 0.0) for f in set(feats))
    z = max(-30.0, min(30.0, z))
    return 1.0 / (1.0 + math.exp(-z))


# -------------------------------------------------------------------------------------- labels

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
    text = _cut(user)[:USER_HEAD].lower()
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


# -------------------------------------------------------------------------------------- detect


def detect(prev_user, prev_assistant, user, assistant) -> Detection:
    """Classify the user's new message as a correction, a retry or neither."""
    try:
        return _detect(Window.of(prev_user, prev_assistant, user, assistant))
    except Exception:  # never let a detector bug break a user's turn
        return Detection("none", None, 0.0, ("error",))


def detect_with(model: dict):
    """A detect() that uses the given learned-layer model instead of the shipped one."""

    def run(prev_user, prev_assistant, user, assistant) -> Detection:
        return _detect(Window.of(prev_user, prev_assistant, user, assistant), model)

    return run


STRONG_RULES = (
    "opener",
    "still",
    "ack",
    "failure",
    "redirect",
    "complaint",
    "rephrase",
    "echo",
    "reworded",
    "restated",
    "dispute",
)


def gate(w: Window) -> Detection | None:
    """The cases decided before any scoring: empty or unchanged, identical re-send, bare reply."""
    if not w.user.strip() or unchanged_answer(w):
        return Detection("none", None, 0.0, ("gate",))
    if identical_resend(w):
        return Detection("retry", "identical re-send", 1.0, ("gate",))
    if _bare_reply(normalise(w.user)):
        return Detection("none", None, 0.0, ("gate",))
    return None


def decide(w: Window, hits: tuple[str, ...], score: float, threshold: float) -> Detection:
    """Rules fire on their own; otherwise the learned score must reach the threshold."""
    rules = tuple(h for h in hits if h in STRONG_RULES)
    if not rules and score < threshold:
        return Detection("none", None, score, ("learned",) + hits)
    layers = (("rules",) if rules else ()) + (("learned",) if score >= threshold else ()) + hits
    if _is_rephrase(w, hits):
        return Detection("retry", "rephrased re-send", score, layers)
    return Detection("correction", mistake_label(w.user, w.prev_assistant), score, layers)


def _detect(w: Window, model: dict | None = None) -> Detection:
    gated = gate(w)
    if gated is not None:
        return gated
    hits = rule_hits(w)
    model = load_model() if model is None else model
    score = learned_score(features(w, hits), model.get("weights", {}))
    return decide(w, hits, score, model.get("threshold", 1.0))


def _is_rephrase(w: Window, hits: tuple[str, ...]) -> bool:
    if any(h in hits for h in ("still", "opener", "failure", "ack", "complaint", "restated", "dispute")):
        return False
    return "rephrase" in hits or "echo" in hits or "reworded" in hits


def rules_only(prev_user, prev_assistant, user, assistant) -> Detection:
    """The gates and rules without the learned layer (for reporting what each layer adds)."""
    w = Window.of(prev_user, prev_assistant, user, assistant)
    return gate(w) or decide(w, rule_hits(w), 0.0, 2.0)


def learned_only(model: dict):
    """The gates and the learned layer without rule overrides (for reporting what each layer adds)."""

    def run(prev_user, prev_assistant, user, assistant) -> Detection:
        w = Window.of(prev_user, prev_assistant, user, assistant)
        gated = gate(w)
        if gated is not None:
            return gated
        score = learned_score(features(w), model.get("weights", {}))
        if score < model.get("threshold", 1.0):
            return Detection("none", None, score, ("learned",))
        return Detection("correction", mistake_label(w.user, w.prev_assistant), score, ("learned",))

    return run
