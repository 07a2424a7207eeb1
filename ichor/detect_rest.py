"""The rest-of-the-message experiment: do words after the message's head help out of source? (fit extra)

    python -m ichor.detect_rest --data ../shared/data/corrections-dev.jsonl \\
        ../shared/data/corrections-more.jsonl --variant reply

Nested cross-validation grouped by repository, the same outer folds as ``ichor.detect_cv``.  Inside each
outer training part an inner grouped CV picks the feature families AND the regularisation among today's
families and three additions read from the message after its head (``docs/detector-experiments.md``,
"Pre-registered: the rest of the message"):

* ``tail``: word unigrams and bigrams of the message's last 40 tokens;
* ``rest``: word unigrams of the rest, up to 400 tokens of message in all;
* ``tail+tail_shape``: the tail's words plus its shape (word classes, pasted error, question, code).

The same run with the choice restricted to today's families is the baseline.  Each addition forced (C
still chosen inside) is printed too, as a diagnostic.  Features are computed once per family set and
every inner fit is shared across the runs that need it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import detect_fit as F
from . import detect_model
from .detect_cv import cv_parser, markdown
from .detect_features import features
from .detect_nonlinear import Experiment
from .detect_text import cut, rest_of
from .evaluate import grouped_blocks

ADDITIONS = {"today": (), "tail": ("tail",), "rest": ("rest",), "tail+tail_shape": ("tail", "tail_shape")}


@dataclass(frozen=True)
class Families:
    addition: str  # a key of ADDITIONS
    c: float

    @property
    def name(self) -> str:
        return f"{self.addition}/C={self.c}"


class RestExperiment(Experiment):
    """The non-linear experiment's nested CV, its configs being (family set, C) of the logistic regression."""

    def __init__(self, rows: list[dict], variant: str):
        super().__init__(rows, variant)
        self.ids_of = {"today": self.ids}
        for name, extra in ADDITIONS.items():
            if extra:
                families = F.VARIANTS[variant] + extra
                self.ids_of[name] = [
                    detect_model.feature_ids(features(F.window_of(r, variant == "reply"), families)) for r in rows
                ]

    def _fit(self, cfg, train: list[int], test: list[int]) -> list[float]:
        if isinstance(cfg, Families):
            return self._lr(F.Config(c=cfg.c), train, test, self.ids_of[cfg.addition])
        return super()._fit(cfg, train, test)


def goes_past_head(row: dict) -> bool:
    """Does the message go on after the head (so the rest-of-message families have something to read)?"""
    return bool(rest_of(cut(row.get("user"))).strip())


def configs(additions, grid: F.Grid) -> tuple[Families, ...]:
    return tuple(Families(a, c) for a in additions for c in grid.c)


def runs(grid: F.Grid) -> list[tuple[str, tuple]]:
    """The baseline, the pre-registered choice, then each addition forced (diagnostic only)."""
    out = [("today_only", configs(["today"], grid)), ("choice", configs(ADDITIONS, grid))]
    out += [(f"{a}_forced", configs([a], grid)) for a in ADDITIONS if a != "today"]
    return out


def main(argv=None) -> int:
    parser = cv_parser(
        "ichor.detect_rest", __doc__, "also write the figures, picks and each window's held-out scores here"
    )
    args = parser.parse_args(argv)
    rows = F.rows_or_exit(parser, args.data)
    grid = F.Grid()
    exp = RestExperiment(rows, args.variant)
    long_ones = [i for i, r in enumerate(rows) if goes_past_head(r)]
    print(f"{len(rows)} windows; {len(long_ones)} go on after the head")
    out = {}
    for run, cfgs in runs(grid):
        result = exp.nested_cv(cfgs, grid, args.outer_folds)
        figures = {p: grouped_blocks(rows, d) for p, d in result["points"].items()}
        picks = Counter(f["config"] for f in result["folds"])
        print(f"\n## {run}\n" + markdown(figures) + f"\n\npicked per outer fold: {dict(picks)}")
        subset = {
            p: grouped_blocks([rows[i] for i in long_ones], [d[i] for i in long_ones])
            for p, d in result["points"].items()
        }
        print(f"\n### {run}, only the windows that go on after the head\n" + markdown(subset))
        held_out = {str(r.get("id")): round(s, 6) for r, s in zip(rows, result["scores"], strict=True)}
        out[run] = {"figures": figures, "past_head": subset, "folds": result["folds"], "held_out": held_out}
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
