"""The non-linear experiment: do gradient-boosted trees beat the logistic regression out of source? (fit extra)

    python -m ichor.detect_nonlinear --data ../shared/data/corrections-dev.jsonl \\
        ../shared/data/corrections-more.jsonl --variant reply

Nested cross-validation grouped by repository, the same outer folds as ``ichor.detect_cv``.  Inside each
outer training part an inner grouped CV picks the model family AND its settings among the shipped
logistic regression and three tree variants (``docs/detector-experiments.md``, "Pre-registered: non-linear stage 1"):

* ``stacked``: trees over the dense (non-lexical) features plus the full LR's out-of-fold score;
* ``dense``: trees over the dense features alone;
* ``stacked_words``: trees over the dense features plus the out-of-fold score of an LR over the lexical
  features only.

The same run with the choice restricted to the LR is the baseline.  Both are printed with how often
each config was picked.
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
from .evaluate import grouped_blocks

# Lexical features: the message's words and first words, and the reply's opening words.
LEXICAL = ("w:", "w2:", "u0:", "u01:", "a:")
STACK_C = 0.3  # the stacked LR's regularisation, fixed in the pre-registration
STACK_FOLDS = 4


@dataclass(frozen=True)
class Trees:
    inputs: str  # "stacked" | "dense" | "stacked_words"
    depth: int
    trees: int
    learning_rate: float = 0.05
    min_leaf: int = 20

    @property
    def name(self) -> str:
        return f"{self.inputs}/d{self.depth}x{self.trees}"


TREE_CONFIGS = tuple(
    Trees(inputs, d, n) for inputs in ("stacked", "dense", "stacked_words") for d, n in ((2, 200), (4, 100))
)


def is_lexical(name: str) -> bool:
    return name.startswith(LEXICAL)


class Experiment:
    """Features computed once; every (config, train, test) fit memoised across the runs that share it."""

    def __init__(self, rows: list[dict], variant: str):
        names = [features(F.window_of(r, variant == "reply"), F.VARIANTS[variant]) for r in rows]
        self.rows = rows
        self.ids = [detect_model.feature_ids(n) for n in names]
        self.lexical_ids = [detect_model.feature_ids(["bias"] + [f for f in n if is_lexical(f)]) for n in names]
        self.dense_names = [sorted({f for f in n if f != "bias" and not is_lexical(f)}) for n in names]
        self.y = F.labels(rows)
        self.groups = [F.source_of(r) for r in rows]
        self.forced = F.gated(rows)
        self._memo: dict = {}
        self._stack_memo: dict = {}

    # ------------------------------------------------------------------------ one fit

    def fit_score(self, cfg, train: list[int], test: list[int]) -> list[float]:
        key = (cfg, tuple(train), tuple(test))
        if key not in self._memo:
            self._memo[key] = self._fit(cfg, train, test)
        return self._memo[key]

    def _fit(self, cfg, train: list[int], test: list[int]) -> list[float]:
        return self._lr(cfg, train, test) if isinstance(cfg, F.Config) else self._trees(cfg, train, test)

    def _lr(self, cfg: F.Config, train, test, ids=None) -> list[float]:
        ids = ids or self.ids
        linear = F.fit_linear(
            [ids[i] for i in train], [self.y[i] for i in train], [self.groups[i] for i in train], cfg
        )
        return [detect_model.score(ids[i], linear) for i in test]

    def stack_feature(self, inputs: str, train: list[int], test: list[int]) -> tuple[list[float], list[float]]:
        """The stacked LR score: out of fold on ``train``; for ``test``, from the LR fitted on all ``train``."""
        key = (inputs, tuple(train), tuple(test))
        if key not in self._stack_memo:
            ids = self.lexical_ids if inputs == "stacked_words" else self.ids
            cfg = F.Config(c=STACK_C)
            oof = dict.fromkeys(train, 0.0)
            for fold in F.group_folds([self.groups[i] for i in train], STACK_FOLDS):
                held = [train[j] for j in fold]
                rest = sorted(set(train) - set(held))
                oof.update(zip(held, self._lr(cfg, rest, held, ids), strict=True))
            self._stack_memo[key] = ([oof[i] for i in train], self._lr(cfg, train, test, ids))
        return self._stack_memo[key]

    def dense_matrix(self, train: list[int], rows: list[int]):
        import numpy as np

        seen: dict[str, set] = {}
        for i in train:
            for f in self.dense_names[i]:
                seen.setdefault(f, set()).add(self.groups[i])
        column = {f: j for j, f in enumerate(sorted(f for f, gs in seen.items() if len(gs) >= 2))}
        x = np.zeros((len(rows), len(column)))
        for r, i in enumerate(rows):
            for f in self.dense_names[i]:
                if f in column:
                    x[r, column[f]] = 1.0
        return x, column

    def _trees(self, cfg: Trees, train, test) -> list[float]:
        import numpy as np

        x_train, _ = self.dense_matrix(train, train)
        x_test, _ = self.dense_matrix(train, test)
        if cfg.inputs != "dense":
            s_train, s_test = self.stack_feature(cfg.inputs, train, test)
            x_train = np.hstack([x_train, np.array(s_train)[:, None]])
            x_test = np.hstack([x_test, np.array(s_test)[:, None]])
        clf = estimator(cfg)
        clf.fit(
            x_train,
            np.array([self.y[i] for i in train]),
            sample_weight=F.sample_weights([self.groups[i] for i in train], "sqrt"),
        )
        return list(clf.predict_proba(x_test)[:, 1])

    # ------------------------------------------------------------------------ nested CV

    def inner_oof(self, cfg, part: list[int], folds: int) -> list[float]:
        scores = dict.fromkeys(part, 0.0)
        for fold in F.group_folds([self.groups[i] for i in part], folds):
            held = [part[j] for j in fold]
            rest = sorted(set(part) - set(held))
            scores.update(zip(held, self.fit_score(cfg, rest, held), strict=True))
        return [scores[i] for i in part]

    def choose(self, configs, part: list[int], grid: F.Grid):
        y, forced = [self.y[i] for i in part], [self.forced[i] for i in part]
        best = None
        for cfg in configs:
            oof = self.inner_oof(cfg, part, grid.inner_folds)
            t, f1 = F.best_f1_threshold(oof, y, forced)
            if best is None or f1 > best[0]:
                best = (f1, cfg, oof, t)
        assert best is not None
        _, cfg, oof, t = best
        return cfg, {"standalone": t, "candidate": F.recall_threshold(oof, y, forced, grid.candidate_recall)}

    def nested_cv(self, configs, grid: F.Grid, outer_folds: int = 10) -> dict:
        n = len(self.rows)
        scores, points = [0.0] * n, {"standalone": [False] * n, "candidate": [False] * n}
        picked = []
        for test in F.group_folds(self.groups, outer_folds):
            held = set(test)
            part = [i for i in range(n) if i not in held]
            cfg, thresholds = self.choose(configs, part, grid)
            picked.append({"config": config_name(cfg), "thresholds": thresholds})
            test = sorted(test)
            for i, s in zip(test, self.fit_score(cfg, part, test), strict=True):
                scores[i] = s
                for name, cut in thresholds.items():
                    points[name][i] = bool(s >= cut if self.forced[i] is None else self.forced[i])
        return {"scores": scores, "points": points, "folds": picked}


def estimator(cfg: Trees):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=cfg.trees,
        max_depth=cfg.depth,
        learning_rate=cfg.learning_rate,
        min_samples_leaf=cfg.min_leaf,
        early_stopping=False,
        random_state=0,
    )


def config_name(cfg) -> str:
    return cfg.name if hasattr(cfg, "name") else f"lr/C={cfg.c}"


def runs(lr_configs: tuple, per_family: bool) -> list[tuple[str, tuple]]:
    """The baseline and the pre-registered choice; with ``per_family``, each tree variant forced, for diagnosis."""
    out = [("lr_only", lr_configs), ("lr_or_trees", lr_configs + TREE_CONFIGS)]
    if per_family:
        for inputs in ("stacked", "dense", "stacked_words"):
            out.append((f"{inputs}_only", tuple(c for c in TREE_CONFIGS if c.inputs == inputs)))
    return out


def main(argv=None) -> int:
    parser = cv_parser(
        "ichor.detect_nonlinear", __doc__, "also write the figures, picks and each window's held-out decisions here"
    )
    parser.add_argument(
        "--per-family", action="store_true", help="also each tree variant on its own (a diagnostic, not the decision)"
    )
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rows = F.rows_or_exit(parser, args.data)
    grid = F.Grid()
    exp = Experiment(rows, args.variant)
    out = {}
    with threadpool_limits(1):  # the CPU is shared: one thread for the trees' OpenMP loops
        for run, configs in runs(tuple(grid.configs), args.per_family):
            result = exp.nested_cv(configs, grid, args.outer_folds)
            figures = {p: grouped_blocks(rows, d) for p, d in result["points"].items()}
            picks = Counter(f["config"] for f in result["folds"])
            print(f"\n## {run}\n" + markdown(figures) + f"\n\npicked per outer fold: {dict(picks)}")
            held_out = {str(r.get("id")): round(s, 6) for r, s in zip(rows, result["scores"], strict=True)}
            out[run] = {"figures": figures, "folds": result["folds"], "held_out": held_out}
            sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
