"""Provider token formats as data: the rows of ``ichor/data/scrub_catalogue.toml`` turned into scrubber finders.

The rows restate the gitleaks default catalogue (the file names the commit and licence) plus the few formats
it lacks. A row runs only on text holding one of its keywords (lower case), as in gitleaks, and compiles its
pattern on first use, so importing the scrubber stays cheap. A match is kept when it is a placeholder or a
reference (``ichor.scrub_values``), or when its secret is below the row's entropy limit.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from .package_data import read_text
from .scrub_values import kept_value, shannon_entropy

DATA_FILE = "scrub_catalogue.toml"
DEFAULT_KIND = "api_token"

# The context gitleaks generates around a provider's name for its "semi-generic" rules: the name, up to 20
# more name characters, optional quotes, an operator, optional quotes or spaces, then the value.
NAMED_CONTEXT = r"""[ \t\w.-]{0,20}[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}"""
# Where a token ends: no further token character. gitleaks asks for a quote, space or ";" instead, which
# lets a key followed by "," ")" or "." go.
TOKEN_END = r"(?![A-Za-z0-9_+/=-]|\.[A-Za-z0-9])"
# Where a named value ends: a quote, space or ";" as in gitleaks, or a closing bracket, "," "&" or a full stop.
# A value that goes on (Summer.-4-...) is not this row's; the assignment finder takes it whole.
NAMED_END = r"""(?=[\x60'"\s;,)\]}&]|\\[nr]|\.(?:\s|\Z)|\Z)"""
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_+/=-]*")
# A match starting with a letter or digit starts a word (gitleaks' leading \b). In the pattern itself, not only
# checked afterwards: an attempt from inside a long run of letters then fails at once instead of scanning to the
# run's end, which Python's backtracking engine would do from every position of the run (quadratic time).
TOKEN_START = r"(?:(?![A-Za-z0-9])|(?<![A-Za-z0-9]))"
# Entropy is measured on a token's first characters: enough for any real token, and bounded on hostile runs.
ENTROPY_PREFIX = 256


# A row's match lies near one of its keywords (inside it, as a rule): a row scans only from REACH_BEFORE
# characters before each keyword to REACH_AFTER after it (longer tokens are followed to their end), unless a
# keyword occurs more than MANY_KEYWORDS times, when scanning the whole text is as cheap.
REACH_BEFORE = 300
REACH_AFTER = 1300
MANY_KEYWORDS = 64
# The last text lower-cased, and its lower case: the rows run one after another on the same text. One tuple,
# replaced whole, so a thread never pairs a text with another text's lower case.
_LOWERED: tuple[str, str] = ("", "")


def _lower(text: str) -> str:
    cached = _LOWERED
    if cached[0] is text:
        return cached[1]
    lower = text.lower()
    remember_lower(text, lower)
    return lower


def lower_of(text: str) -> str:
    """The lower case of ``text``, computed once per text the engine scans."""
    return _lower(text)


def remember_lower(text: str, lower: str) -> None:
    """Tell the rows the lower case of the text they are about to scan (the engine keeps it in step)."""
    global _LOWERED
    _LOWERED = (text, lower)


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    pattern_text: str
    keywords: tuple[str, ...]
    entropy: float = 0.0
    allow: str | None = None
    source: str = "gitleaks"
    named: bool = False

    @cached_property
    def pattern(self) -> re.Pattern:
        return re.compile(_anchored(self.pattern_text), re.ASCII)

    @cached_property
    def allow_pattern(self) -> re.Pattern | None:
        return re.compile(self.allow) if self.allow else None

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        windows = self._windows(text)
        tails = _TokenTails(text)
        last = 0
        for start, end in windows if windows is not None else [(0, len(text))]:
            if end <= last:
                continue
            for m in self.pattern.finditer(text, max(start, last), end):
                if m.start() < last:
                    continue
                span = self._secret_span(m, tails)
                if span is not None:
                    last = span[1]
                    yield span

    def _windows(self, text: str) -> list[tuple[int, int]] | None:
        """The stretches of ``text`` around this row's keywords, merged; None to scan the whole text."""
        lower = _lower(text)
        if len(lower) != len(text):
            return None  # lower-casing changed the length (rare Unicode): positions no longer line up
        starts: list[int] = []
        for keyword in self.keywords:
            pos = lower.find(keyword)
            while pos != -1:
                starts.append(pos)
                if len(starts) > MANY_KEYWORDS:
                    return None
                pos = lower.find(keyword, pos + 1)
        windows: list[tuple[int, int]] = []
        for pos in sorted(starts):
            start, end = max(0, pos - REACH_BEFORE), min(len(text), pos + REACH_AFTER)
            if windows and start <= windows[-1][1]:
                windows[-1] = (windows[-1][0], end)
            else:
                windows.append((start, end))
        return windows

    def _secret_span(self, m: re.Match, tails: _TokenTails) -> tuple[int, int] | None:
        group = "secret" if "secret" in self.pattern.groupindex and m.group("secret") is not None else 0
        start, end = m.span(group)
        text = m.string
        if start > 0 and text[start].isalnum() and text[start - 1].isalnum():
            return None  # inside a longer word
        if group == 0 or end == m.end():
            end = tails.end(end)  # the whole token, not its first N characters
        value = text[start:end]
        if self.entropy and shannon_entropy(value[:ENTROPY_PREFIX]) <= self.entropy:
            return None
        if kept_value(value) or (self.allow_pattern and self.allow_pattern.fullmatch(value)):
            return None
        return start, end


# A run of literal characters at the start of a pattern: letters, digits, "_", "-", " " and escaped punctuation.
_LITERAL_RUN = re.compile(r"(?:[A-Za-z0-9_ -]|\\[^A-Za-z0-9])*")
_QUANTIFIERS = ("?", "*", "+", "{")


def _anchored(pattern_text: str) -> str:
    """``pattern_text`` starting at a token boundary (TOKEN_START), written so the regex engine can jump.

    A pattern that starts with a literal (``glpat-``, or ``(?i:twitter`` in a named row) is written as that
    literal, then the boundary checked by a lookbehind spanning it: the engine then skips between the literal's
    occurrences instead of trying the boundary at every position (a pattern led by a lookaround is tried at
    every one). A pattern that starts with another character is written as it was.
    """
    split = _literal_prefix(pattern_text)
    if split is None:
        return f"{TOKEN_START}(?:{pattern_text})"
    opener, literal_source, rest = split
    literal = re.sub(r"\\(.)", r"\1", literal_source)
    escaped = re.escape(literal)
    if opener:
        escaped = f"(?i:{escaped})"
    if not literal[0].isalnum():
        return f"{escaped}{opener}{rest}"  # a match that starts with punctuation starts a token anyway
    return f"{escaped}(?<![A-Za-z0-9]{escaped}){opener}{rest}"


def _literal_prefix(pattern_text: str) -> tuple[str, str, str] | None:
    """(``"(?i:"`` or ``""``, the leading literal as written, the rest), or None when the pattern does not start
    with a literal or has an alternative at its top level (``a|b``), whose first branch alone starts so."""
    opener = "(?i:" if pattern_text.startswith("(?i:") else ""
    body = pattern_text[len(opener) :]
    if _top_level_bar(pattern_text) or _top_level_bar(body):
        return None
    source = _LITERAL_RUN.match(body).group(0)  # type: ignore[union-attr]  # matches the empty string at least
    if body[len(source) : len(source) + 1] in _QUANTIFIERS and source:
        source = source[:-2] if source[-2:-1] == "\\" else source[:-1]  # the quantifier repeats the last one
    if not source:
        return None
    return opener, source, body[len(source) :]


def _top_level_bar(body: str) -> bool:
    """Whether ``body`` has a "|" outside every group, before the group it sits in (if any) closes."""
    depth, i, in_class = 0, 0, False
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if body[i + 1 : i + 2] == "]":
                i += 1  # "[]...]": a "]" first in a class is a member
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False  # the enclosing group closed
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


class KeywordIndex:
    """Which of many lower-case keywords a text holds, in one scan instead of one substring search each.

    The keywords of two or more characters form a trie turned into one regular expression, tried (as a lookahead)
    at every position, so keywords that overlap are all seen; a keyword that is a prefix of a longer one found at
    the same position counts as found too. One-character keywords are plain substring checks.
    """

    def __init__(self, keywords, skip: str | None = None):
        self.keywords = sorted(set(keywords))
        self.chars = [k for k in self.keywords if len(k) == 1]
        longer = [k for k in self.keywords if len(k) > 1]
        # ``skip`` matches stretches whose keywords don't count (the scrubber's placeholders): the first
        # alternative consumes a stretch whole, so no keyword is found inside it.
        skipped = f"(?:{skip})|" if skip else ""
        self.pattern = re.compile(f"{skipped}(?=({_trie_pattern(longer)}))", re.DOTALL) if longer else None
        self.prefixes = {k: frozenset(p for p in longer if k.startswith(p)) for k in longer}

    def present(self, lower_text: str) -> set[str]:
        found = {c for c in self.chars if c in lower_text}  # counted inside skipped stretches too: a superset
        if self.pattern is not None:
            for longest in set(self.pattern.findall(lower_text)):
                if longest:
                    found |= self.prefixes[longest]
        return found


def _trie_pattern(words: list[str]) -> str:
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _render(trie)


def _render(node: dict) -> str:
    ends = "" in node
    branches = [re.escape(char) + _render(child) for char, child in sorted(node.items()) if char]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if ends else body


class _TokenTails:
    """Where the run of token characters from a position ends, remembered: every position inside one run
    shares its end, so many matches in one long run cost one scan, not one each."""

    def __init__(self, text: str):
        self.text, self.start, self.stop = text, -1, -1

    def end(self, pos: int) -> int:
        if not self.start <= pos <= self.stop:
            tail = _TOKEN_TAIL.match(self.text, pos)
            self.start, self.stop = pos, tail.end() if tail else pos
        return self.stop


def _token_row(raw: dict) -> Row:
    return Row(
        id=raw["id"],
        kind=raw.get("kind", DEFAULT_KIND),
        pattern_text=raw["pattern"],
        keywords=tuple(raw["keywords"]),
        entropy=raw.get("entropy", 0.0),
        allow=raw.get("allow"),
        source=raw.get("source", "gitleaks"),
    )


def _named_row(raw: dict) -> Row:
    value = raw["value"] if raw.get("case") else f"(?i:{raw['value']})"
    return Row(
        id=raw["id"],
        kind=raw.get("kind", DEFAULT_KIND),
        pattern_text=f"(?i:{_grouped(raw['names'])}{NAMED_CONTEXT})(?P<secret>{value}){NAMED_END}",
        keywords=tuple(raw["keywords"]),
        entropy=raw.get("entropy", 0.0),
        source=raw.get("source", "gitleaks"),
        named=True,
    )


def _grouped(names: str) -> str:
    """``names`` as a unit to follow with more pattern: grouped only when it has alternatives of its own."""
    return f"(?:{names})" if _top_level_bar(names) else names


def load(text: str | None = None) -> dict:
    """The parsed data file (its ``catalogue`` header, ``token``, ``named``, ``own`` and ``not_applicable`` rows)."""
    if text is None:
        text = read_text(DATA_FILE)
    return tomllib.loads(text)


def rows(data: dict | None = None) -> tuple[Row, ...]:
    """Every token row, then every named row, in file order."""
    data = data if data is not None else load()
    return tuple(_token_row(r) for r in data.get("token", ())) + tuple(_named_row(r) for r in data.get("named", ()))


def covered_ids(data: dict | None = None) -> set[str]:
    """The catalogue rule ids that a row or one of ichor's own finders covers."""
    data = data if data is not None else load()
    return {
        r["id"]
        for section in ("token", "named", "own")
        for r in data.get(section, ())
        if r.get("source", "gitleaks") == "gitleaks"
    }
