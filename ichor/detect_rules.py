"""Hand-written signals of a correction, used only as features of the trained detector.

Gates (bare yes/no/continue/thanks, identical re-send, unchanged answer) and rules (rejecting openers,
"still failing" reports, redirects, restatements, the assistant admitting a mistake) each name a
pattern; none decides on its own.  Patterns see only the head of each text and none nests
quantifiers, so each runs in time linear in that bounded head.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache

from .detect_text import ASSISTANT_HEAD, HAN_KANA, PREV_HEAD, USER_HEAD, Window, jaccard, normalise, tokens
from .language import foreign
from .package_data import load_json

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


def bare_reply(user_norm: str) -> bool:
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
    return bool(u) and u == normalise(w.prev_user) and not bare_reply(u)


_OPENER = re.compile(
    r"^(?:\W{0,3})(?:no|nope|nah|wrong|incorrect|actually|not quite|not really|that'?s (?:not|wrong|incorrect|"
    r"the wrong)|"
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
    r"(?:doesn'?t|does not|didn'?t|did not|isn'?t|is not|not) (?:work|working|fix|help|change|run|compile|load|"
    r"show|display)|"
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
    r"\brevert (?:your|that|this|the last|last) (?:change|changes|edit|edits|commit)|\bundo (?:that|this|your|"
    r"the last|last)\b|"
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
    r"(?:\b(?:i|we) (?:still |now |keep |always )?(?:get|got|getting|am getting|'m getting|see|have|"
    r"receive)\b[^.\n]{0,40}?"
    r"\b(?:errors?|exception|warnings?|crash\w*)\b|"
    r"\berrors? (?:pops?|popped|appears?|appeared|shows?|showed|occurs?|occurred|comes? up|came up|happens?|"
    r"is thrown)|"
    r"\bnow i (?:have|get|see)\b[^\n]{0,12}(?:error|not found|exception|failed|undefined|cannot|can'?t (?:find|"
    r"resolve))|"
    r"\b(?:it|this|that|the (?:app|page|build|site|server|script|program)) (?:now |still |just )?"
    r"(?:stalls|hangs|freezes|crashes|fails|throws|breaks)\b|\b(?:stalls|hangs|freezes) (?:at|on|after|when)\b|"
    r"\bplante\b|\bn'existe (?:pas|plus)\b|\bnefunguje\b|报错|出错)",
)
# The answer before asked for the log or error text: pasting it is the requested input, not a correction.
_ASKED_FOR_OUTPUT = re.compile(
    r"(?:paste|share|provide|send|show me|post|copy|run)\b[^.?!\n]{0,60}\b(?:error|log|output|message|traceback|"
    r"console|"
    r"stack|terminal)"
)
_WORD = re.compile(r"\w+")


class PhraseSet:
    """Literal lowercase phrases, by language: those of languages written with spaces match at a word start,
    those of Chinese and Japanese (and tool markers) anywhere.  A dict lookup per word: under half the cost
    of one regex of hundreds of alternatives."""

    UNSPACED = ("zh", "zh-Hant", "ja", "markers")

    def __init__(self, by_language: dict[str, list[str]]):
        spaced = sorted({p for key, ps in by_language.items() if key not in self.UNSPACED for p in ps})
        self.anywhere = tuple(sorted({p for key in self.UNSPACED for p in by_language.get(key, ())}))
        self.by_first_word: dict[str, tuple[str, ...]] = {}
        for phrase in spaced:
            first = _WORD.match(phrase)
            if first is None:
                self.anywhere += (phrase,)
                continue
            self.by_first_word[first.group()] = (*self.by_first_word.get(first.group(), ()), phrase)
        self.starters = self.anywhere + tuple(spaced)

    def search(self, text: str) -> bool:
        """Whether lowercased ``text`` holds one of the phrases."""
        if any(p in text for p in self.anywhere):
            return True
        for m in _WORD.finditer(text):
            phrases = self.by_first_word.get(m.group())
            if phrases and any(text.startswith(p, m.start()) for p in phrases):
                return True
        return False

    def starts(self, text: str) -> bool:
        """Whether lowercased ``text`` opens with one of the phrases (after at most three other characters)."""
        lead = len(text) - len(text.lstrip(_TRIM + "\n\t"))
        return lead <= 3 and text[lead:].startswith(self.starters)


_EDIT_BLOCK = re.compile(r"```|<<<<<<<|>>>>>>>|\bSEARCH\b|\bREPLACE\b|<source>")
# How agents report an edit in prose or a tool display ("i've updated", "⏺ update(", "已修改"), written from
# how they write, not from the data (docs/edit_reports_brief.md).
_EDIT_REPORTS = PhraseSet(load_json("edit_reports.json"))
# The rules' phrases in 16 more languages, for non-English messages (docs/rule_phrases_brief.md).
_TRANSLATED_RULES = {rule: PhraseSet(by_language) for rule, by_language in load_json("rule_phrases.json").items()}


@lru_cache(maxsize=64)
def edited_code(answer_head: str) -> bool:
    """Whether an answer changed code: an edit block, or an edit reported the way agents report it."""
    return bool(_EDIT_BLOCK.search(answer_head)) or _EDIT_REPORTS.search(answer_head.lower())


_FILE = re.compile(
    r"[\w\-]{1,60}\.(?:tsx?|jsx?|mjs|py|rb|cs|html?|css|scss|json|java|go|rs|astro|vue|php|c|cc|cpp|h|kt|swift|"
    r"sh|ya?ml|toml|csproj)\b"
)
# Complaints and redirects without a rejecting opener.
_COMPLAINT = re.compile(
    r"(?:\b(?:it|this|that|they) should (?:only|not|never)\b|\bshould(?:n'?t| not) (?:be|have|show|use|appear|"
    r"display)\b|"
    r"\bso that it (?:does not|doesn'?t|won'?t|will not)\b|\bwhy (?:not|isn'?t|doesn'?t|didn'?t|is it not|"
    r"does it not)\b|"
    r"nothing you(?:'re| are) saying|\byou think so\b|\bare you sure\b|\bthat'?s not (?:true|right)\b|"
    r"\bit'?s actually\b|"
    r"\b(?:a (?:bit|little)|slightly|trochu|un peu) (?:more|less|higher|lower|bigger|smaller|up|down|left|right|"
    r"wider)\b|"
    r"\b(?:odsa\w*|posu\w*|zarovn\w*) [^.\n]{0,20}\btrochu\b|\btrochu [^.\n]{0,20}\b(?:odsa\w*|posu\w*|zvrchu|"
    r"zespodu|od spodu)|"
    r"\b(?:in|use|using) (?:the )?search ?/ ?replace\b|\bsearch ?/ ?replace (?:format|blocks?)\b|"
    r"\b(?:modify|edit|update|change) the files? directly\b|\bapply (?:the|your|those) (?:changes|edits) directly\b|"
    r"\bpresque\b|\balmost there\b)"
    r"|请直接|直接修改|直接更新|search[^。，\n]{0,30}replace[^。，\n]{0,5}格式|也要改|还是没|稍微",
)
_EMPHATIC = re.compile(r"\b(?:ALL|ONLY|EVERY|NOT|STILL|NEVER)\b")
_ACK = re.compile(
    r"^(?:<think>\s{0,5})?(?:\W{0,3})(?:you'?re (?:absolutely |completely |quite )?(?:right|correct)|"
    r"you are (?:absolutely |completely |quite )?(?:right|correct)|my apologies|i apologi[sz]e|apologies|"
    r"sorry|i'?m sorry|i am sorry|good catch|my mistake|my bad|oops|you'?re right to|i see the (?:error|issue|"
    r"problem)|"
    r"i see what (?:went wrong|happened)|i misunderstood|let me (?:fix|correct)|i made (?:a|an) (?:mistake|error))",
)
_QUESTION_ABOUT = re.compile(r"^(?:what|how|why|where|when|which|who|can you|could you|is there|do you|does)\b")


# Features and the kind decision both ask for a window's hits and content words: compute each once.
@lru_cache(maxsize=8)
def rule_hits(w: Window) -> tuple[str, ...]:
    user = w.user[:USER_HEAD].lower()
    head = user[:160]
    translated = _TRANSLATED_RULES if foreign(w.user) else None
    hits = []
    if bare_reply(normalise(w.user)):
        hits.append("bare")
    if (_OPENER.search(head) and not (_NO.search(head) and asks_question(w.prev_assistant))) or (
        translated and translated["opener"].starts(head)
    ):
        hits.append("opener")
    if _STILL.search(user) or (translated and translated["still"].search(user)):
        hits.append("still")
    if len(user) < 300 and (_REDIRECT.search(user) or (translated and translated["redirect"].search(user))):
        hits.append("redirect")
    if _reported_failure(w) or _failure_in_words(w, translated["failure_report"] if translated else None):
        hits.append("failure")
    if (
        _COMPLAINT.search(user[:300])
        or (translated and translated["complaint"].search(user[:300]))
        or (len(user) < 200 and _EMPHATIC.search(w.user[:200]))
    ):
        hits.append("complaint")
    if similarity(w.user, w.prev_user) >= 0.4:
        hits.append("rephrase")
    if _reworded_request(w):
        hits.append("reworded")
    if _restated_fix(w):
        hits.append("restated")
    if _disputed_claim(w):
        hits.append("dispute")
    return tuple(hits)


def clear_caches() -> None:
    """Forget the per-window caches (benchmarks time every call as a new turn)."""
    rule_hits.cache_clear()
    edited_code.cache_clear()
    content_words.cache_clear()
    foreign.cache_clear()


def reply_rule_hits(w: Window) -> tuple[str, ...]:
    """Rules on the assistant's reply to the message (known only once it has answered)."""
    hits = []
    if unchanged_answer(w):
        hits.append("unchanged")
    if _ACK.search(w.assistant[:ASSISTANT_HEAD].lower()):
        hits.append("ack")
    if similarity(w.assistant, w.prev_assistant, ASSISTANT_HEAD, 60) >= 0.6:
        hits.append("echo")  # the new answer opens like the old one: the same request came again
    return tuple(hits)


def similarity(a: str, b: str, head: int = USER_HEAD, limit: int = 80) -> float:
    """Jaccard overlap of the first words of two texts."""
    return jaccard(set(tokens(a[:head], limit)), set(tokens(b[:head], limit)))


def has_error_shape(text: str) -> bool:
    """Error-report shape, looked for where it shows: the first lines and the last (a traceback's end)."""
    return bool(_ERROR_SHAPE.search(text[:2000] if len(text) <= 2500 else text[:2000] + "\n" + text[-500:]))


def _reported_failure(w: Window) -> bool:
    """A pasted error that names something the previous answer touched."""
    if not has_error_shape(w.user):
        return False
    return code_overlap(w) >= 0.34


def _failure_in_words(w: Window, translated: PhraseSet | None = None) -> bool:
    """A failure described near the start of the message, right after an answer that edited code.

    Either reported in words ("I get this error", "it stalls at …") or naming a file the previous answer
    touched next to an error word; never when that answer asked for the error or log.
    """
    head = w.user[:200]
    prev = w.prev_assistant[:PREV_HEAD]
    if not edited_code(prev) or _ASKED_FOR_OUTPUT.search(prev[-400:].lower()):
        return False
    if _FAILURE_REPORT.search(head.lower()) or (translated is not None and translated.search(head.lower())):
        return True
    if not _ERROR_WORD.search(head.lower()):
        return False
    return bool({f.lower() for f in _FILE.findall(head)} & {f.lower() for f in _FILE.findall(prev)})


_IDENT = re.compile(r"[A-Za-z_$][\w$]{2,60}(?:\.[A-Za-z]\w{0,15})?")
_CODEISH = re.compile(r"[_.$]|[a-z][A-Z]")


def _identifiers(text: str) -> set[str]:
    return {t.lower() for t in _IDENT.findall(text) if _CODEISH.search(t)}


def code_overlap(w: Window) -> float:
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
_CONTENT = re.compile(rf"[^\W\d_{HAN_KANA}][^\W{HAN_KANA}]{{2,30}}|[{HAN_KANA}]{{2}}")
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


@lru_cache(maxsize=32)
def content_words(text: str, head: int = 2000) -> frozenset[str]:
    """Lightly stemmed content words of the start of a text (stopwords and short words dropped)."""
    return frozenset(_stem(t) for t in _CONTENT.findall(text[:head].lower()) if t not in _STOPWORDS)


def containment(part: AbstractSet[str], whole: AbstractSet[str]) -> float:
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
    if len(mine) < RESTATED_MIN_WORDS or not edited_code(w.prev_assistant[:PREV_HEAD]):
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


_OFFER = re.compile(
    r"(?:would you|do you|shall i|should i|can i|may i|want me to|like me to|anything else|how about|"
    r"is there anything)"
)


def asks_question(text: str) -> bool:
    """Does the answer end by asking the user something (so a bare "no" is a reply, not a rejection)?"""
    tail = text.rstrip()[-160:]
    return "?" in tail or bool(_OFFER.search(tail.lower()))
