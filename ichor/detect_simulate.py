"""What a profile's own decisions buy: refit simulated per repository on the shared data (needs the fit extra).

    python -m ichor.detect_simulate --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl \
        --written data/written/s*.jsonl

Each repository plays one user.  Its base model is fitted without it (the shipped model for windows with a
reply: its procedure and config, with the written windows it trains on; grouped folds, thresholds from inner
grouped CV), so it starts where a new user starts.  The repository's
first K windows in file order are its decisions; ``detect_refit.update`` refits on them exactly as a
profile would, and precision and recall on the rest of that repository are compared before and after.
Repositories with fewer than K + ``min_rest`` windows take no part at that K.
"""

from __future__ import annotations

import sys
from typing import Any

from . import detect_fit as F
from . import detect_model
from .detect_refit import update
from .evaluate import _block


def simulate(
    rows: list[dict], ks=(10, 25, 50), outer_folds: int = 10, min_rest: int = 5, written_rows=(), cards: bool = False
):
    """P and R on the rest of each repository before and after a refit on its first K decisions: its first
    K windows, or with ``cards`` its first K windows the base model flags (what a user sees as cards)."""
    shipped = detect_model.shipped()["models"]["reply"]
    variant, cfg = shipped["variant"], F.Config(**shipped["config"])
    written = F.Written.of(list(written_rows), variant)
    ids, y, groups, forced = F.featurise(rows, variant), F.labels(rows), [F.source_of(r) for r in rows], F.gated(rows)
    counts: dict[int, dict[str, Any]] = {
        k: {"before": [0, 0, 0], "after": [0, 0, 0], "repositories": 0, "windows": 0} for k in ks
    }
    for test in F.group_folds(groups, outer_folds):
        held = set(test)
        tr = [i for i in range(len(rows)) if i not in held]
        sub = ([ids[i] for i in tr], [y[i] for i in tr], [groups[i] for i in tr])
        oof = F.out_of_fold(*sub, cfg, 4, written)
        base = F.fit_linear(*sub, cfg, written)
        base["thresholds"] = {"standalone": F.best_f1_threshold(oof, sub[1], [forced[i] for i in tr])[0]}
        for repo in sorted({groups[i] for i in test}):
            mine = [i for i in test if groups[i] == repo]  # file order
            flagged = [i for i in mine if _flags(base, ids[i], forced[i])] if cards else mine
            for k in ks:
                if len(flagged) < k:
                    continue
                decided, rest = flagged[:k], mine[mine.index(flagged[k - 1]) + 1 :]
                if len(rest) < min_rest:
                    continue
                after = update(base, [(ids[i], y[i]) for i in decided])
                c = counts[k]
                c["repositories"] += 1
                c["windows"] += len(rest)
                for name, linear in (("before", base), ("after", after)):
                    _count(c[name], linear, [(ids[i], y[i], forced[i]) for i in rest])
    return {k: _summary(c) for k, c in counts.items()}


def _flags(linear: dict, row_ids: list[int], gate: bool | None) -> bool:
    """The decision at the standalone point (the gate's where it decides)."""
    return detect_model.score(row_ids, linear) >= linear["thresholds"]["standalone"] if gate is None else gate


def _count(acc: list[int], linear: dict, windows) -> None:
    for row_ids, gold, gate in windows:
        pred = _flags(linear, row_ids, gate)
        acc[0] += pred and gold
        acc[1] += pred and not gold
        acc[2] += (not pred) and gold


def _summary(c: dict) -> dict:
    return {
        "repositories": c["repositories"],
        "windows": c["windows"],
        "before": _block(*c["before"]),
        "after": _block(*c["after"]),
    }


def markdown(result: dict) -> str:
    lines = [
        "| K decided | repositories | windows scored | precision before → after | recall before → after |",
        "|---|---|---|---|---|",
    ]
    for k, s in result.items():
        if not s["repositories"]:
            lines.append(f"| {k} | 0 | – | no repository has {k} decisions and 5 windows after them | |")
            continue
        b, a = s["before"], s["after"]
        lines.append(
            f"| {k} | {s['repositories']} | {s['windows']} | {_cell(b['precision'])} → {_cell(a['precision'])} "
            f"| {_cell(b['recall'])} → {_cell(a['recall'])} |"
        )
    return "\n".join(lines)


def _cell(r: dict) -> str:
    return f"{r['value']:.2f} [{r['lo']:.2f}–{r['hi']:.2f}]"


def main(argv=None) -> int:
    parser = F.data_parser("ichor.detect_simulate", __doc__)
    F.add_written_argument(parser)
    parser.add_argument(
        "--cards", action="store_true", help="decisions are the windows the base model flags, as a user's cards are"
    )
    args = parser.parse_args(argv)
    rows = F.rows_or_exit(parser, args.data)
    written = F.rows_or_exit(parser, args.written)
    print(markdown(simulate(rows, written_rows=written, cards=args.cards)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
