"""The embedding experiment: does MiniLM add to the n-gram model out of source? (needs the embed and fit extras)

    python -m ichor.detect_embed --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl

Dense features of a window: the user message's all-MiniLM-L6-v2 embedding and the cosines between the
message, the previous request, the previous answer and the reply.  They are appended to the sparse
features of the ``reply`` model and the same nested grouped CV as ``ichor.detect_cv`` is run, so the
two figures compare like with like.
"""

from __future__ import annotations

import sys

from . import detect_fit as F
from .detect_cv import markdown
from .evaluate import grouped_blocks

FIELDS = (("user", 2000), ("prev_user", 2000), ("prev_assistant", 2000), ("assistant", 1000))


def embeddings(rows: list[dict], embedder=None) -> dict:
    import numpy as np

    from .embed import MiniLMEmbedder

    embedder = embedder or MiniLMEmbedder.load()
    return {key: np.stack([embedder.embed((r.get(key) or "")[:cut] or " ") for r in rows]) for key, cut in FIELDS}


SCALINGS = ("sqrt", "unit", "cosines")


def dense_features(emb: dict, scaling: str = "sqrt"):
    """One row per window: the message's embedding and four cosines.

    ``sqrt`` scales the unit-length embedding's components to about 1, like the binary features; ``unit``
    leaves it as is; ``cosines`` keeps only the cosines (times 3)."""
    import numpy as np

    u, pu, pa, a = (emb[k] for k, _ in FIELDS)
    cos = np.stack([(u * pu).sum(1), (u * pa).sum(1), (a * pa).sum(1), (u * a).sum(1)], axis=1)
    if scaling == "cosines":
        return cos * 3
    return np.hstack([u * np.sqrt(u.shape[1]) if scaling == "sqrt" else u, cos])


def _fit_score(ids, dense, y, groups, train: list[int], test: list[int], c: float):
    """Fit sparse + dense features on ``train`` (the shipped recipe: kept ids, repository weights); score ``test``."""
    import numpy as np
    from scipy.sparse import csr_matrix, hstack
    from sklearn.linear_model import LogisticRegression

    tr_groups = [groups[i] for i in train]
    cols = {f: j for j, f in enumerate(sorted(F.kept_ids([ids[i] for i in train], tr_groups, 2)))}

    def matrix(idx):
        return hstack([F.design([ids[i] for i in idx], cols), csr_matrix(dense[idx])]).tocsr()

    clf = LogisticRegression(C=c, solver="liblinear", intercept_scaling=10.0, tol=1e-4)
    clf.fit(matrix(train), np.array(y)[train], sample_weight=F.sample_weights(tr_groups, "sqrt"))
    return list(clf.predict_proba(matrix(test))[:, 1])


def _inner_oof(ids, dense, y, groups, part: list[int], c: float, folds: int) -> list[float]:
    scores = dict.fromkeys(part, 0.0)
    for test in F.group_folds([groups[i] for i in part], folds):
        inner_test = [part[j] for j in test]
        held = set(inner_test)
        inner_train = [i for i in part if i not in held]
        scores.update(zip(inner_test, _fit_score(ids, dense, y, groups, inner_train, inner_test, c), strict=True))
    return [scores[i] for i in part]


def nested_cv(rows: list[dict], dense, grid: F.Grid, outer_folds: int = 10) -> dict:
    """The same nested grouped CV as ``ichor.detect_cv``, with the dense features appended."""
    ids, y = F.featurise(rows, "reply"), F.labels(rows)
    groups, forced = [F.source_of(r) for r in rows], F.gated(rows)
    points = {"standalone": [False] * len(rows), "candidate": [False] * len(rows)}
    for test in F.group_folds(groups, outer_folds):
        held = set(test)
        part = [i for i in range(len(rows)) if i not in held]
        part_y, part_forced = [y[i] for i in part], [forced[i] for i in part]
        best = None
        for c in grid.c:
            oof = _inner_oof(ids, dense, y, groups, part, c, grid.inner_folds)
            t, f1 = F.best_f1_threshold(oof, part_y, part_forced)
            if best is None or f1 > best[0]:
                best = (f1, c, oof, t)
        assert best is not None
        _, c, oof, t = best
        thresholds = {
            "standalone": t,
            "candidate": F.recall_threshold(oof, part_y, part_forced, grid.candidate_recall),
        }
        for i, s in zip(test, _fit_score(ids, dense, y, groups, part, test, c), strict=True):
            for name, cut in thresholds.items():
                points[name][i] = bool(s >= cut if forced[i] is None else forced[i])
    return points


def main(argv=None) -> int:
    parser = F.data_parser("ichor.detect_embed", __doc__)
    parser.add_argument("--cache", help="an .npz of the four embeddings per window (written when absent)")
    parser.add_argument("--scaling", choices=SCALINGS, default="sqrt", help="how the dense features enter")
    args = parser.parse_args(argv)
    import numpy as np

    rows = F.rows_or_exit(parser, args.data)
    try:
        emb = dict(np.load(args.cache)) if args.cache else None
    except OSError:
        emb = None
    if emb is None:
        emb = embeddings(rows)
        if args.cache:
            np.savez(args.cache, **emb)
    points = nested_cv(rows, dense_features(emb, args.scaling), F.Grid())
    print(markdown({name: grouped_blocks(rows, decided) for name, decided in points.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
