"""The embedding experiment: does MiniLM add to the n-gram model out of source? (needs the embed and fit extras)

    python -m ichor.detect_embed --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl

Dense features of a window: the user message's all-MiniLM-L6-v2 embedding and the cosines between the
message, the previous request, the previous answer and the reply.  They are appended to the sparse
features of the ``reply`` model and the same nested grouped CV as ``ichor.detect_cv`` is run, so the
two figures compare like with like.
"""

from __future__ import annotations

import argparse
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


def dense_features(emb: dict):
    """User embedding and four cosines, one row per window."""
    import numpy as np

    u, pu, pa, a = (emb[k] for k, _ in FIELDS)
    cos = np.stack([(u * pu).sum(1), (u * pa).sum(1), (a * pa).sum(1), (u * a).sum(1)], axis=1)
    return np.hstack([u * np.sqrt(u.shape[1]), cos])  # unit vectors: scale components to about 1, like the binary ones


def _fit(x_sparse, dense, y, sw, c: float):
    from scipy.sparse import csr_matrix, hstack
    from sklearn.linear_model import LogisticRegression

    x = hstack([x_sparse, csr_matrix(dense)]).tocsr()
    return LogisticRegression(C=c, solver="liblinear", intercept_scaling=10.0, tol=1e-4).fit(x, y, sample_weight=sw), x


def _design(ids, cols):
    return F.design(ids, cols)


def _oof(ids, dense, y, groups, c, folds):
    import numpy as np

    out = np.zeros(len(y))
    for test in F.group_folds(groups, folds):
        held = set(test)
        tr = [i for i in range(len(y)) if i not in held]
        cols = {f: j for j, f in enumerate(sorted(F.kept_ids([ids[i] for i in tr], [groups[i] for i in tr], 2)))}
        sw = F.sample_weights([groups[i] for i in tr], "sqrt")
        clf, _ = _fit(_design([ids[i] for i in tr], cols), dense[tr], np.array(y)[tr], sw, c)
        from scipy.sparse import csr_matrix, hstack

        x_test = hstack([_design([ids[i] for i in test], cols), csr_matrix(dense[test])]).tocsr()
        out[test] = clf.predict_proba(x_test)[:, 1]
    return out


def nested_cv(rows: list[dict], dense, grid: F.Grid, outer_folds: int = 10) -> dict:
    ids, y = F.featurise(rows, "reply"), F.labels(rows)
    groups, forced = [F.source_of(r) for r in rows], F.gated(rows)
    points = {"standalone": [False] * len(rows), "candidate": [False] * len(rows)}
    for test in F.group_folds(groups, outer_folds):
        held = set(test)
        tr = [i for i in range(len(rows)) if i not in held]
        sub = ([ids[i] for i in tr], dense[tr], [y[i] for i in tr], [groups[i] for i in tr])
        best = None
        for c in grid.c:
            oof = list(_oof(*sub, c, grid.inner_folds))
            t, f1 = F.best_f1_threshold(oof, sub[2], [forced[i] for i in tr])
            if best is None or f1 > best[0]:
                best = (f1, c, oof, t)
        assert best is not None
        _, c, oof, t = best
        cand = F.recall_threshold(oof, sub[2], [forced[i] for i in tr], grid.candidate_recall)
        scores = _oof_fixed(sub, ids, dense, test, c)
        for i, s in zip(test, scores, strict=True):
            points["standalone"][i] = bool(s >= t if forced[i] is None else forced[i])
            points["candidate"][i] = bool(s >= cand if forced[i] is None else forced[i])
    return points


def _oof_fixed(sub, ids, dense, test, c):
    import numpy as np
    from scipy.sparse import csr_matrix, hstack

    tr_ids, tr_dense, tr_y, tr_groups = sub
    cols = {f: j for j, f in enumerate(sorted(F.kept_ids(tr_ids, tr_groups, 2)))}
    clf, _ = _fit(_design(tr_ids, cols), tr_dense, np.array(tr_y), F.sample_weights(tr_groups, "sqrt"), c)
    x_test = hstack([_design([ids[i] for i in test], cols), csr_matrix(dense[test])]).tocsr()
    return clf.predict_proba(x_test)[:, 1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ichor.detect_embed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", required=True, help="labelled windows (JSON lines, dev-set format)")
    parser.add_argument("--cache", help="an .npz of the four embeddings per window (written when absent)")
    args = parser.parse_args(argv)
    import numpy as np

    rows = F.load_rows(*args.data)
    try:
        emb = dict(np.load(args.cache)) if args.cache else None
    except OSError:
        emb = None
    if emb is None:
        emb = embeddings(rows)
        if args.cache:
            np.savez(args.cache, **emb)
    points = nested_cv(rows, dense_features(emb), F.Grid())
    print(markdown({name: grouped_blocks(rows, decided) for name, decided in points.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
