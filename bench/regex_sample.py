"""A random string that a Python regular expression matches, for fake tokens of every catalogue format.

Walks the parse tree of ``re`` (``re._parser``): literals are copied, classes give a random member, repeats a
random count (open-ended ones at most 8 past their minimum), alternations a random branch; anchors and
lookarounds produce nothing. Returns the string and the span of a named group, if asked for.

>>> import random
>>> text, span = sample(r"ab(?P<secret>[0-9]{3})", random.Random(0), group="secret")
>>> text[:2], len(text), span
('ab', 5, (2, 5))
"""

from __future__ import annotations

import random
import re
import string
from re import _constants as C  # noqa: N812
from re import _parser

_WORD = string.ascii_letters + string.digits + "_"
_CATEGORY = {
    C.CATEGORY_DIGIT: string.digits,
    C.CATEGORY_WORD: _WORD,
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    C.CATEGORY_NOT_WORD: " -",
    C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}
_OPEN_ENDED_EXTRA = 8


def _class_member(items, rng: random.Random) -> str:
    chars: list[str] = []
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.append(chr(av))
        elif op is C.RANGE:
            chars.extend(chr(c) for c in range(av[0], av[1] + 1))
        elif op is C.CATEGORY:
            chars.extend(_CATEGORY[av])
    if negate:
        chars = [c for c in string.ascii_letters + string.digits if c not in chars]
    return rng.choice(chars)


class _Sampler:
    def __init__(self, rng: random.Random, group: str | None, groups: dict[str, int]):
        self.rng, self.out, self.span = rng, [], None
        self.group_index = groups.get(group) if group else None
        self.captured: dict[int, str] = {}

    def length(self) -> int:
        return sum(len(s) for s in self.out)

    def walk(self, items) -> None:
        for op, av in items:
            self.item(op, av)

    def item(self, op, av) -> None:
        rng = self.rng
        if op is C.LITERAL:
            self.out.append(chr(av))
        elif op is C.NOT_LITERAL or op is C.ANY:
            self.out.append(rng.choice([c for c in string.ascii_letters if op is C.ANY or ord(c) != av]))
        elif op is C.IN:
            self.out.append(_class_member(av, rng))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            low, high, sub = av
            high = low + _OPEN_ENDED_EXTRA if high is C.MAXREPEAT else high
            for _ in range(rng.randint(low, high)):
                self.walk(sub)
        elif op is C.SUBPATTERN:
            group, _, _, sub = av
            start = self.length()
            self.walk(sub)
            if group is not None:
                self.captured[group] = "".join(self.out)[start:]
                if group == self.group_index:
                    self.span = (start, self.length())
        elif op is C.BRANCH:
            self.walk(rng.choice(av[1]))
        elif op is C.GROUPREF:
            self.out.append(self.captured.get(av, ""))
        elif op is C.ATOMIC_GROUP:
            self.walk(av)
        # AT (anchors), ASSERT and ASSERT_NOT (lookarounds) produce no text.


def sample(pattern: str, rng: random.Random, group: str | None = None) -> tuple[str, tuple[int, int] | None]:
    """A string matching ``pattern`` and the span of ``group`` in it (None when not asked or not reached)."""
    parsed = _parser.parse(pattern, re.ASCII)
    sampler = _Sampler(rng, group, parsed.state.groupdict)
    sampler.walk(parsed)
    return "".join(sampler.out), sampler.span
