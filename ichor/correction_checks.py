"""Checks derived from a user's correction: what a fixed answer must say, and what it must no longer say.

``checks_from(user_said, rejected, accepted)`` reads the correction for

- things it *names*: a flag (``-E``, ``--all``), a file or path (``setup.py``, ``~/.config``), a version or
  number (``Python 3.8``, ``644``), a code identifier (``read_text``, ``post.render()``), a quoted word, or the
  word after "use"/"with"/"switch to": the answer must contain them;
- things it *negates*: "not X", "instead of X", "don't use X", "X is deprecated", "you can't ... X", and
  "that's X, not Y" (X was the mistake, Y is wanted): the answer must not use them;
- the rejected answer's tokens the correction names, when the accepted answer drops them: must not.

When the accepted answer is given, a check it fails is dropped (the user accepted that answer, so the check
misread the correction). ``satisfaction(answer, checks)`` is the share of checks an answer meets, or None when
no check could be derived. Mentions of a banned term right after a negation ("use pnpm, not npm") are not uses.

Pure Python (``re`` only) so the plugin core and the evaluate stage can import it without numpy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

STOPWORDS = frozenset(
    """a an the this that these those it its it's is are was were be been being am do does did doing done
    have has had i me my we our us you your he she they them their there here what which who whom whose when
    where why how all any both each few more most other some such no nor not only own same so than too very
    can could will would shall should may might must just now then also still again once ever even yet and or
    but if because as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under further one two first last thing things way ways
    please thanks ok okay yes yeah nope hmm actually really already same error errors work works working
    wrong right fix fixed anymore instead use using used make makes made get gets got need needs needed
    want wants said say says asked ask tell told try tried see shows show showing like it's that's i'm
    don't doesn't didn't isn't aren't wasn't can't cannot won't there's let's""".split()
)
NEGATORS = ("not", "never", "no", "without", "avoid", "instead of", "rather than", "stop using", "no longer")
NEGATED_VERB = re.compile(r"(?:n't|\bnot)\s+(?:use|using|run|call|want|need|install)\b", re.I)
NEGATIVE_PREDICATE = re.compile(
    r"\b(?:is|are|was|were)?\s*(?:deprecated|overloaded|obsolete|broken|wrong|removed|gone|outdated)\b"
    r"|\b(?:isn't|aren't|doesn't|don't|didn't|can't|cannot|won't|never)\b",
    re.I,
)
FILLER = r"(?:(?:the|a|an|in|on|at|to|from|with)\s+)?"
POSITIVE_CUE = re.compile(rf"\b(?:use|uses|using|with|via|switch to|prefer|needs?|want|run|try|on)\s+{FILLER}$", re.I)
FLIP = re.compile(r"^\s*(?:that's|that is|this is|it's|it is|you used|you gave me)\s+(.+?),?\s+not\s+(.+)$", re.I)

FLAG = r"(?<![\w-])--?[A-Za-z][\w-]*(?:=[^\s,;]+)?"
PATH = r"(?:~|\.{1,2})?/?[\w.-]*/[\w./-]*\w|(?<![\w.])\.?[\w-]+\.(?:[A-Za-z][\w]{0,5})(?![\w])"
VERSION = r"(?<![\w.])\d+(?:\.\d+)+(?![\w.]\d)|(?<![\w.-])\d{2,}(?![\w.]\d)"
IDENT = r"\b(?:[A-Za-z_][\w]*\(\)|[A-Za-z_]\w*\.\w+\(\)|[a-z]+_[\w]+|[a-z]+[A-Z]\w*)"
QUOTED = r"`([^`]{1,40})`|'([^'\s][^']{0,38})'|\"([^\"]{1,40})\"|‘([^’]{1,40})’|“([^”]{1,40})”"
WORD = r"[A-Za-z][\w+#.-]*[\w+#]|[A-Za-z]"
# ASCII word boundaries: in "移动到game_craft.rb中" the file name is bounded by the CJK characters
NAMED = re.compile(f"{QUOTED}|(?P<flag>{FLAG})|(?P<path>{PATH})|(?P<ver>{VERSION})|(?P<ident>{IDENT})", re.A)
ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m"})


@dataclass(frozen=True)
class Check:
    """The answer must (``present=True``) or must not (``present=False``) contain ``term``."""

    term: str
    present: bool
    why: str  # "named", "negated", "wanted", "rejected"

    def holds(self, answer: str) -> bool:
        if self.present:
            return _contains(answer, self.term)
        return not _uses(answer, self.term)


def _uses(answer: str, term: str) -> bool:
    """Whether ``answer`` uses ``term``, not just names it.

    In an answer with code, a use is the term inside a code span that holds more than the term itself
    (`` `apt-key` is deprecated`` names it; `` `sudo apt-key add -` `` uses it). In prose, any mention that a
    negation does not precede ("use pnpm, not npm") is a use.
    """
    spans = _code_spans(answer)
    if spans:
        return any(_contains(s, term) and s.strip().lower() != term.lower() for s in spans)
    return any(not _negated_before(answer, m.start()) for m in _find(term, answer))


def _find(term: str, text: str) -> Iterable[re.Match]:
    case = re.A if term.startswith("-") else re.A | re.I
    left = r"(?<![\w-])" if term[:1].isalnum() or term[:1] in "_-" else r"(?<!\w)"
    right = r"(?![\w])(?!\.\d)" if term[-1:].isalnum() or term[-1:] == "_" else ""
    return re.finditer(left + re.escape(term) + right, text or "", case)


def _negated_before(text: str, start: int) -> bool:
    """True when one of the three words before ``start`` negates it ("not npm", "instead of npm")."""
    before = " ".join(re.findall(r"[\w']+", text[max(0, start - 40) : start].lower())[-3:])
    return any(re.search(rf"\b{re.escape(n)}$|\b{re.escape(n)}\s\S+$", before) for n in NEGATORS) or before.endswith(
        "n't"
    )


def _named(text: str) -> list[str]:
    """Flags, paths, versions, identifiers and quoted spans the text names, in order."""
    out = []
    for m in NAMED.finditer(text):
        quoted = next((g for g in m.groups()[:5] if g), None)
        term = (quoted or m.group(0)).strip().rstrip(".,;:")
        if term and term.lower() not in ABBREVIATIONS and term.lower() not in STOPWORDS:
            out.append(term)
    return out


def _words(text: str) -> list[str]:
    # an all-caps word is a keyword or constant (WHERE, NULL) even when its lower case is a stopword
    return [w for w in re.findall(WORD, text, re.A) if len(w) > 1 and (w.isupper() or w.lower() not in STOPWORDS)]


def _terms(text: str) -> list[str]:
    """Named things, then content words that are not part of one."""
    named = _named(text)
    return named + [w for w in _words(text) if not any(w in n for n in named)]


def _contains(text: str, term: str) -> bool:
    return bool(text) and any(True for _ in _find(term, text))


def _code_spans(text: str) -> list[str]:
    """The code in an answer: fenced blocks and backticked spans."""
    found = re.finditer(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", text or "", re.S)
    return [m.group(1) or m.group(2) for m in found]


def _code(text: str) -> str:
    return "\n".join(_code_spans(text))


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[;!?\n]+|\.\s+|,\s+(?:but|and|so)\s+|\bbut\b", text) if c.strip()]


def _after_cue(clause: str, cue: re.Pattern) -> list[str]:
    """The first token after each cue in ``clause`` (named things first, else a content word)."""
    out = []
    for m in re.finditer(r"\S+", clause):
        if cue.search(clause[: m.start()]):
            tail = clause[m.start() :]
            first = next(iter(_named(tail[:60]) or _words(tail.split(",")[0])), None)
            if first and tail.lower().startswith(first.lower()[:1]):
                out.append(first)
    return out


def _negated_terms(clause: str, rejected: str) -> list[str]:
    """Terms the clause says not to use: after "not"/"instead of", or the subject of a negative predicate."""
    out = []
    negation = re.compile(
        rf"\b(?:not|no|instead of|rather than|stop using|no longer use|avoid|without)\s+{FILLER}$", re.I
    )
    out += _after_cue(clause, negation)
    if NEGATED_VERB.search(clause):
        out += _after_cue(clause, re.compile(r"(?:n't|\bnot)\s+(?:use|using|run|call|want|need|install)\s+$", re.I))
    predicate = NEGATIVE_PREDICATE.search(clause)
    if predicate:
        # the rejected answer's code, anywhere in a negative clause ("netstat isn't there", "can't ... WHERE")
        out += [t for t in _terms(clause) if _contains(_code(rejected), t)]
    return out


def _clause_checks(clause: str, rejected: str) -> list[Check]:
    flip = FLIP.match(clause)
    if flip:
        wrong, wanted = ((_named(side) or _words(side)[:1]) for side in flip.groups())
        code = _code(rejected)
        if any(_contains(code, t) for t in wanted) and not any(_contains(code, t) for t in wrong):
            wrong, wanted = wanted, wrong  # "that's poetry, not pip" about a pip answer: the project is poetry
        return [Check(t, False, "negated") for t in wrong] + [Check(t, True, "wanted") for t in wanted]
    banned = _negated_terms(clause, rejected)
    checks = [Check(t, False, "negated") for t in banned]
    wanted = _after_cue(clause, POSITIVE_CUE) + _named(clause)
    checks += [Check(t, True, "named" if t in _named(clause) else "wanted") for t in wanted if t not in banned]
    return checks


def _rejected_checks(user_said: str, rejected: str, accepted: str) -> list[Check]:
    """Words of the correction that the rejected answer used and the accepted answer dropped."""
    if not (rejected and accepted):
        return []
    return [
        Check(t, False, "rejected")
        for t in _terms(user_said)
        if _contains(_code(rejected), t) and not _contains(accepted, t)
    ]


def _dedupe(checks: Sequence[Check]) -> list[Check]:
    """One check per term; a term both wanted and banned is ambiguous and dropped."""
    by_term: dict[str, list[Check]] = {}
    for c in checks:
        by_term.setdefault(c.term.lower(), []).append(c)
    return [cs[0] for cs in by_term.values() if len({c.present for c in cs}) == 1]


def checks_from(user_said: str, rejected: str = "", accepted: str = "") -> list[Check]:
    """The checks a corrected answer should pass, derived from the user's correction."""
    checks = [c for clause in _clauses(user_said or "") for c in _clause_checks(clause, rejected)]
    checks = _dedupe(checks + _rejected_checks(user_said or "", rejected, accepted))
    if accepted:
        checks = [c for c in checks if c.holds(accepted)]
    return checks


def satisfaction(answer: str, checks: Sequence[Check]) -> float | None:
    """The share of ``checks`` that ``answer`` meets; None when there is nothing to check."""
    if not checks:
        return None
    return sum(c.holds(answer) for c in checks) / len(checks)
