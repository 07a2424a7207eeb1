"""Fit the shipped detector from labelled windows (needs the ``fit`` extra: numpy, scipy, scikit-learn).

    python -m ichor.detect_fit --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl \\
        --out ichor/data/detector.json

One L2 logistic regression per input shape (``reply``: the assistant's reply to the message is known;
``no_reply``: it is not) over the hashed binary features of ``ichor.detect_features``.  The
regularisation, the feature cut (a feature must occur in windows of at least ``min_sources``
repositories) and the two operating points are chosen by cross-validation grouped by repository;
the weights are then fitted on every window.  Beside each weight the file keeps its Laplace precision
(the diagonal of the fitted loss's Hessian): what ``refit`` needs to update the model from a
profile's own decisions without the training text.  ``python -m ichor.detect_cv`` reports the
out-of-source figures of this whole procedure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import detect_model
from .detect import gate
from .detect_features import features
from .detect_text import Window
from .evaluate import source_hash, source_of

# Character n-grams were measured too and did not add to word n-grams out of source; they cost 3x the time.
VARIANTS = {"reply": ("words", "shape", "reply"), "no_reply": ("words", "shape")}
# The models that train on written windows: the pre-registered rule passed for no_reply only
# (docs/detector-experiments.md).
WRITTEN_VARIANTS = ("no_reply",)
# The procedures each shipped model chooses among by inner CV F1: a window with a reply may be better
# decided by the model that ignores it (docs/detector-experiments.md, "windows with a reply choose their model").
SLOT_PROCEDURES = {"reply": ("reply", "no_reply"), "no_reply": ("no_reply",)}


@dataclass(frozen=True)
class Config:
    c: float = 1.0
    min_sources: int = 2
    balance: str = "sqrt"  # weight each window by 1/sqrt(windows of its repository): no log dominates
    written_weight: float = 0.0  # each written window's weight (a real one's averages 1); 0 leaves them out


@dataclass
class Grid:
    c: tuple[float, ...] = (0.1, 0.3, 1.0)
    min_sources: tuple[int, ...] = (2,)
    balance: tuple[str, ...] = ("sqrt",)
    written_weight: tuple[float, ...] = (0.0,)
    candidate_recall: float = 0.97  # stage 2 is precise, so stage 1 hands it all but what it is nearly sure of
    inner_folds: int = 4
    configs: list[Config] = field(init=False)

    def __post_init__(self):
        self.configs = [
            Config(*v) for v in itertools.product(self.c, self.min_sources, self.balance, self.written_weight)
        ]

    @classmethod
    def with_written(cls, written: bool, **kw) -> Grid:
        """The shipped grid; with written windows, their weight is chosen too (0 lets the choice decline them)."""
        return cls(written_weight=WRITTEN_WEIGHTS if written else (0.0,), **kw)


WRITTEN_WEIGHTS = (0.0, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class Written:
    """Windows written for training (``data/written``): they join every fit and are never scored."""

    ids: list[list[int]]
    y: list[int]
    groups: list[str]  # the writer's file: one source for the feature cut

    @classmethod
    def of(cls, rows: list[dict], variant: str, replies: bool = True) -> Written:
        """``replies=False`` leaves each reply out of its window's features (it was written knowing the label)."""
        return cls(featurise(rows, variant, replies), labels(rows), [written_source(r) for r in rows])


NO_WRITTEN = Written([], [], [])


@dataclass(frozen=True)
class Procedure:
    """One way to fit a model: the features it reads (``variant``), its grid, the written windows it trains on."""

    variant: str
    grid: Grid
    written: Written = NO_WRITTEN


def procedure(variant: str, written_rows: Sequence[dict] = ()) -> Procedure:
    """A variant's shipped procedure: its shipped grid, and the written windows if it is a ``WRITTEN_VARIANTS``."""
    mine = list(written_rows) if variant in WRITTEN_VARIANTS else []
    return Procedure(variant, Grid.with_written(bool(mine)), Written.of(mine, variant))


def slot_procedures(slot: str, written_rows: Sequence[dict] = ()) -> list[Procedure]:
    """What a shipped model chooses among: the shipped procedure of each of its ``SLOT_PROCEDURES``."""
    return [procedure(variant, written_rows) for variant in SLOT_PROCEDURES[slot]]


# ----------------------------------------------------------------------------------- data


def load_rows(*paths: str | Path) -> list[dict]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except ValueError as exc:
                        raise ValueError(f"{path}:{n}: not JSON ({exc})") from None
    return rows


def written_source(row: dict) -> str:
    """A written window's source for the feature cut: its writer (``synth/NAME``), not its conversation."""
    return "/".join(str(row.get("source", "")).split("/")[:2])


def window_of(row: dict, with_reply: bool = True) -> Window:
    reply = row.get("assistant") if with_reply else None
    return Window.of(row.get("prev_user"), row.get("prev_assistant"), row.get("user"), reply)


def featurise(rows: list[dict], variant: str, replies: bool = True) -> list[list[int]]:
    families, with_reply = VARIANTS[variant], replies and variant == "reply"
    return [detect_model.feature_ids(features(window_of(r, with_reply), families)) for r in rows]


def labels(rows: list[dict]) -> list[int]:
    return [1 if r.get("is_correction") else 0 for r in rows]


def gated(rows: list[dict]) -> list[bool | None]:
    """Windows decided without the model (``detect.gate``): True, False, or None for the model to score."""
    return [gate(window_of(r)) for r in rows]


# -------------------------------------------------------------------------------- fitting


def sample_weights(groups: list[str], balance: str):
    import numpy as np

    if balance == "none":
        return np.ones(len(groups))
    counts: dict[str, int] = {}
    for g in groups:
        counts[g] = counts.get(g, 0) + 1
    w = np.array([1.0 / counts[g] ** 0.5 for g in groups])
    return w * len(w) / w.sum()


def kept_ids(ids: list[list[int]], groups: list[str], min_sources: int) -> set[int]:
    seen: dict[int, set] = {}
    for row_ids, g in zip(ids, groups, strict=True):
        for i in row_ids:
            seen.setdefault(i, set()).add(g)
    return {i for i, gs in seen.items() if len(gs) >= min_sources}


def with_written(ids, y, groups, cfg: Config, written: Written):
    """The training set with the written windows added when the config weighs them, and every window's weight."""
    import numpy as np

    weights = sample_weights(groups, cfg.balance)
    if cfg.written_weight <= 0 or not written.y:
        return ids, y, groups, weights
    extra = np.full(len(written.y), cfg.written_weight)
    return ids + written.ids, y + written.y, groups + written.groups, np.concatenate([weights, extra])


def estimator(ids: list[list[int]], y: list[int], groups: list[str], cfg: Config, weights=None):
    """The fitted scikit-learn logistic regression and its column of each kept hashed id."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    weights = sample_weights(groups, cfg.balance) if weights is None else weights
    column = {f: j for j, f in enumerate(sorted(kept_ids(ids, groups, cfg.min_sources)))}
    clf = LogisticRegression(C=cfg.c, solver="liblinear", intercept_scaling=10.0, tol=1e-4)
    clf.fit(design(ids, column), np.array(y), sample_weight=weights)
    return clf, column


def to_linear(clf, column: dict[int, int], ids: list[list[int]], groups: list[str], cfg: Config, weights=None) -> dict:
    """The pure-Python linear model (bias, weights) and each weight's Laplace precision."""
    import numpy as np

    x = design(ids, column)
    sw = sample_weights(groups, cfg.balance) if weights is None else weights
    p = clf.predict_proba(x)[:, 1]
    # Precision of each weight: the prior 1/C plus the curvature the data put on it.  liblinear fits the
    # bias as the weight of a constant column of intercept_scaling, so its prior is 1/(C scaling²).
    curvature = np.asarray(x.multiply((sw * p * (1 - p))[:, None]).sum(axis=0)).ravel()
    coef = clf.coef_[0]
    kept = [(f, j) for f, j in column.items() if abs(coef[j]) >= 1e-6]
    return {
        "bias": float(clf.intercept_[0]),
        "bias_precision": float((sw * p * (1 - p)).sum() + 1.0 / (cfg.c * clf.intercept_scaling**2)),
        "weights": {f: float(coef[j]) for f, j in kept},
        "precision": {f: float(curvature[j] + 1.0 / cfg.c) for f, j in kept},
        "prior": 1.0 / cfg.c,
    }


def fit_linear(ids: list[list[int]], y: list[int], groups: list[str], cfg: Config, written=NO_WRITTEN) -> dict:
    ids, y, groups, weights = with_written(ids, y, groups, cfg, written)
    clf, column = estimator(ids, y, groups, cfg, weights)
    return to_linear(clf, column, ids, groups, cfg, weights)


def design(ids: list[list[int]], column: dict[int, int]):
    """Binary CSR matrix of the windows' kept ids."""
    import numpy as np
    from scipy.sparse import csr_matrix

    cols = [sorted(column[i] for i in r if i in column) for r in ids]
    indptr = np.cumsum([0] + [len(c) for c in cols])
    indices = np.array([j for c in cols for j in c], dtype=np.int64)
    return csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(cols), len(column)))


def scores_of(ids: list[list[int]], linear: dict) -> list[float]:
    return [detect_model.score(r, linear) for r in ids]


# ---------------------------------------------------------------------------- choosing


def group_folds(groups: list[str], k: int) -> list[list[int]]:
    """Test indices of ``k`` folds that never split a repository (sklearn's GroupKFold)."""
    from sklearn.model_selection import GroupKFold

    idx = list(range(len(groups)))
    return [list(test) for _, test in GroupKFold(n_splits=min(k, len(set(groups)))).split(idx, groups=groups)]


def out_of_fold(ids, y, groups, cfg: Config, k: int, written=NO_WRITTEN) -> list[float]:
    """Each window scored by a model fitted without its repository's fold (and with every written window)."""
    out = [0.0] * len(y)
    for test in group_folds(groups, k):
        held = set(test)
        train = [i for i in range(len(y)) if i not in held]
        part = [ids[i] for i in train], [y[i] for i in train], [groups[i] for i in train]
        linear = fit_linear(*part, cfg, written)
        for i in test:
            out[i] = detect_model.score(ids[i], linear)
    return out


def f1_at(scores, y, forced, t: float) -> float:
    tp = fp = fn = 0
    for s, gold, f in zip(scores, y, forced, strict=True):
        pred = s >= t if f is None else f
        tp += pred and gold
        fp += pred and not gold
        fn += (not pred) and gold
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def best_f1_threshold(scores, y, forced) -> tuple[float, float]:
    candidates = sorted(set(round(s, 6) for s in scores))
    best = max(((f1_at(scores, y, forced, t), -t) for t in candidates), default=(0.0, -0.5))
    return -best[1], best[0]


def recall_threshold(scores, y, forced, target: float) -> float:
    """The highest threshold whose recall still reaches ``target`` (so the best precision at it)."""
    pos = sorted((s for s, gold, f in zip(scores, y, forced, strict=True) if gold and f is None), reverse=True)
    free = sum(1 for gold, f in zip(y, forced, strict=True) if gold and f)
    need = max(0, -(-int(target * 1e6) * sum(y) // int(1e6)) - free)  # ceil(target * positives) - forced hits
    if need <= 0 or not pos:
        return 1.0
    return pos[min(need, len(pos)) - 1]


def choose(ids, y, groups, forced, grid: Grid, written=NO_WRITTEN) -> tuple[Config, dict]:
    """Pick the config by inner grouped-CV F1, and both thresholds from that config's inner scores."""
    cfg, thresholds, _ = choose_scored(ids, y, groups, forced, grid, written)
    return cfg, thresholds


def choose_scored(ids, y, groups, forced, grid: Grid, written=NO_WRITTEN) -> tuple[Config, dict, float]:
    """``choose``, and the inner grouped-CV F1 of the config it picked (to compare procedures by)."""
    best = None
    for cfg in grid.configs:
        oof = out_of_fold(ids, y, groups, cfg, grid.inner_folds, written)
        t, f1 = best_f1_threshold(oof, y, forced)
        if best is None or f1 > best[0]:
            best = (f1, cfg, oof, t)
    assert best is not None, "the grid has at least one config"
    f1, cfg, oof, t = best
    return cfg, {"standalone": t, "candidate": recall_threshold(oof, y, forced, grid.candidate_recall)}, f1


def best_procedure(procedures: Sequence[Procedure], ids: dict[str, list], y, groups, forced, part: list[int]):
    """The procedure whose inner grouped-CV F1 on the windows ``part`` is best: (F1, procedure, config,
    thresholds).  ``ids`` holds every window's features under each procedure's variant."""

    def mine(column: list) -> list:
        return [column[i] for i in part]

    best = None
    for p in procedures:
        cfg, thresholds, f1 = choose_scored(
            mine(ids[p.variant]), mine(y), mine(groups), mine(forced), p.grid, p.written
        )
        if best is None or f1 > best[0]:
            best = (f1, p, cfg, thresholds)
    assert best is not None, "at least one procedure"
    return best


def fit(rows: list[dict], written_rows: Sequence[dict] = (), procedures: dict[str, Procedure] | None = None) -> dict:
    """Both shipped models, each the procedure of its ``SLOT_PROCEDURES`` with the best inner grouped-CV F1,
    fitted on every window.  Each procedure is chosen and fitted once, however many models share it;
    ``procedures`` (variant -> procedure) replaces the shipped ones."""
    procedures = procedures or {variant: procedure(variant, written_rows) for variant in VARIANTS}
    y, groups, forced = labels(rows), [source_of(r) for r in rows], gated(rows)
    ids = {v: featurise(rows, v) for v in procedures}
    scored = {v: choose_scored(ids[v], y, groups, forced, p.grid, p.written) for v, p in procedures.items()}
    linear: dict[str, dict] = {}

    def fitted(slot: str) -> dict:
        variant = max(SLOT_PROCEDURES[slot], key=lambda v: scored[v][2])  # a tie keeps the first, as best_procedure
        cfg, thresholds, f1 = scored[variant]
        if variant not in linear:
            linear[variant] = fit_linear(ids[variant], y, groups, cfg, procedures[variant].written)
        compared = {v: round(scored[v][2], 4) for v in SLOT_PROCEDURES[slot]}
        chosen = {"variant": variant, "inner_f1": round(f1, 4), "compared": compared, "config": asdict(cfg)}
        return dict(linear[variant], thresholds=thresholds, families=list(VARIANTS[variant]), **chosen)

    return {
        "version": 2,
        "hash_bits": detect_model.HASH_BITS,
        "trained_on": {
            "windows": len(rows),
            "repositories": len({source_of(r) for r in rows}),
            "source_hashes": sorted({source_hash(source_of(r)) for r in rows}),
            "written_windows": len(written_rows),
        },
        "models": {slot: fitted(slot) for slot in SLOT_PROCEDURES},
    }


# ------------------------------------------------------------------------------------ CLI


def data_parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of every fitting and measuring command: ``--data`` and the module's first paragraph."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=(doc or "").split("\n\n")[0])
    parser.add_argument("--data", nargs="+", required=True, help="labelled windows (JSON lines, dev-set format)")
    return parser


def add_written_argument(parser: argparse.ArgumentParser) -> None:
    """``--written``, for the commands that use written windows (fitting, and measuring the fit)."""
    parser.add_argument(
        "--written",
        nargs="*",
        default=[],
        help="windows written for training (data/written/*.jsonl): they only ever train, never score",
    )


def rows_or_exit(parser: argparse.ArgumentParser, paths: list[str]) -> list[dict]:
    """The labelled windows of ``paths``, or one ``error:`` line and exit status 2."""
    if not paths:
        return []
    try:
        return load_rows(*paths)
    except (OSError, ValueError) as exc:
        parser.exit(2, f"error: {exc}\n")


def main(argv=None) -> int:
    parser = data_parser("ichor.detect_fit", __doc__)
    parser.add_argument("--out", required=True, help="where to write the model JSON")
    add_written_argument(parser)
    args = parser.parse_args(argv)
    rows = rows_or_exit(parser, args.data)
    model = fit(rows, written_rows=rows_or_exit(parser, args.written))
    detect_model.dump(model, Path(args.out))
    for name, linear in model["models"].items():
        print(
            f"{name}: the {linear['variant']} procedure (inner F1 "
            f"{', '.join(f'{v} {f1}' for v, f1 in linear['compared'].items())}), {len(linear['weights'])} "
            f"weights, {linear['config']}, thresholds {linear['thresholds']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
