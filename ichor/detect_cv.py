"""Out-of-source figures of the whole fitting procedure: nested cross-validation grouped by repository.

    python -m ichor.detect_cv --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl

Outer folds hold out whole repositories.  Inside each outer training part, ``detect_fit.choose`` picks
the regularisation, the feature cut and both thresholds by its own grouped CV; the model fitted on
that part then scores the held-out repositories.  The pooled held-out decisions are reported overall,
per slice (aider logs, agent transcripts, dialogue) and per language group of the user's message,
with 95% Wilson intervals.  Nothing reported here was fitted or chosen on the windows it is scored on.

With ``--written FILES`` (``data/written/*.jsonl``), windows written for training join every training part and
their weight is chosen inside with the regularisation; they are never scored.  The shipped ``no_reply`` model's
figures are ``--variant no_reply --written data/written/s*.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from . import detect_fit as F
from .evaluate import grouped_blocks

# Windows with a reply: the reply model, or the one that ignores it (with the written windows), by inner CV.
CHOSEN = "chosen"


@dataclass(frozen=True)
class Procedure:
    """One fitting procedure: the features it reads, its grid, and the written windows it may train on."""

    variant: str
    grid: F.Grid
    written_rows: tuple = ()
    written_replies: bool = True


def nested_cv(
    rows: list[dict], variant: str, grid: F.Grid, outer_folds: int = 10, written_rows=(), written_replies=True
) -> dict:
    """Held-out score and decision at both operating points for every window, and the config each fold chose.

    Written windows join every training part, inner and outer, and are never scored."""
    return nested_choice(rows, [Procedure(variant, grid, tuple(written_rows), written_replies)], outer_folds)


def nested_choice(rows: list[dict], procedures: list[Procedure], outer_folds: int = 10) -> dict:
    """``nested_cv`` where each outer fold keeps the procedure whose inner grouped-CV F1 is best."""
    y, groups, forced = F.labels(rows), [F.source_of(r) for r in rows], F.gated(rows)
    prepared = [
        (p, F.featurise(rows, p.variant), F.Written.of(list(p.written_rows), p.variant, p.written_replies))
        for p in procedures
    ]
    scores, points = [0.0] * len(rows), {"standalone": [False] * len(rows), "candidate": [False] * len(rows)}
    chosen = []
    for test in F.group_folds(groups, outer_folds):
        held = set(test)
        tr = [i for i in range(len(rows)) if i not in held]
        best = None
        for p, ids, written in prepared:
            sub = ([ids[i] for i in tr], [y[i] for i in tr], [groups[i] for i in tr], [forced[i] for i in tr])
            cfg, thresholds, f1 = F.choose_scored(*sub, p.grid, written)
            if best is None or f1 > best[0]:
                best = (f1, p.variant, ids, sub, cfg, thresholds, written)
        assert best is not None, "at least one procedure"
        f1, variant, ids, sub, cfg, thresholds, written = best
        linear = F.fit_linear(sub[0], sub[1], sub[2], cfg, written)
        chosen.append({"variant": variant, "inner_f1": round(f1, 4), "config": vars(cfg), "thresholds": thresholds})
        for i in test:
            scores[i] = F.detect_model.score(ids[i], linear)
            for name, t in thresholds.items():
                points[name][i] = bool(scores[i] >= t if forced[i] is None else forced[i])
    return {"scores": scores, "points": points, "folds": chosen}


def report(rows: list[dict], result: dict) -> dict:
    return {name: grouped_blocks(rows, decided) for name, decided in result["points"].items()}


def _cell(r: dict) -> str:
    return f"{r['value']:.2f} [{r['lo']:.2f}–{r['hi']:.2f}]"


def markdown(figures: dict) -> str:
    lines = []
    for point, blocks in figures.items():
        lines += [
            f"\n**{point}**\n",
            "| windows | n | positives | precision [95% CI] | recall [95% CI] | F1 |",
            "|---|---|---|---|---|---|",
        ]
        for name, b in blocks.items():
            pos = b["tp"] + b["fn"]
            lines.append(
                f"| {name} | {b['n']} | {pos} | {_cell(b['precision'])} | {_cell(b['recall'])} | {b['f1']:.2f} |"
            )
    return "\n".join(lines)


def cv_parser(prog: str, doc: str | None, json_help: str, extra_variants=()) -> argparse.ArgumentParser:
    """The parser of every nested-CV command: ``--data``, ``--variant``, ``--outer-folds`` and ``--json``."""
    parser = F.data_parser(prog, doc)
    variants = sorted(F.VARIANTS) + list(extra_variants)
    parser.add_argument("--variant", choices=variants, default="reply", help="which input shape's model")
    parser.add_argument("--outer-folds", type=int, default=10, help="outer grouped folds (default 10)")
    parser.add_argument("--json", help=json_help)
    return parser


def grid_of(parser: argparse.ArgumentParser, args, written: list[dict]) -> F.Grid:
    """The shipped grid, the written windows' weights from ``--written-weights`` when given."""
    if args.written_weights and not written:
        parser.exit(2, "error: --written-weights needs --written FILES\n")
    if args.written_weights:
        return F.Grid(written_weight=tuple(args.written_weights))
    return F.Grid.with_written(bool(written))


def main(argv=None) -> int:
    parser = cv_parser(
        "ichor.detect_cv", __doc__, "also write the figures and each window's held-out decisions here", [CHOSEN]
    )
    F.add_written_argument(parser)
    parser.add_argument(
        "--written-weights",
        nargs="+",
        type=float,
        help=f"the written windows' weights to choose among (default {' '.join(map(str, F.WRITTEN_WEIGHTS))})",
    )
    parser.add_argument(
        "--written-without-replies",
        action="store_true",
        help="leave the written windows' replies out of their features (they were written knowing the label)",
    )
    args = parser.parse_args(argv)
    rows, written = F.rows_or_exit(parser, args.data), F.rows_or_exit(parser, args.written)
    grid = grid_of(parser, args, written)
    mine = Procedure(args.variant, grid, tuple(written), not args.written_without_replies)
    if args.variant == CHOSEN:
        mine = Procedure("no_reply", grid, tuple(written), not args.written_without_replies)
        result = nested_choice(rows, [Procedure("reply", F.Grid.with_written(False)), mine], args.outer_folds)
    else:
        result = nested_choice(rows, [mine], args.outer_folds)
    figures = report(rows, result)
    print(markdown(figures))
    per_fold = [{"variant": f["variant"], **f["config"]} for f in result["folds"]]
    print("\nchosen per outer fold: " + json.dumps(per_fold))
    if args.json:
        held_out = {
            str(row.get("id")): {"score": round(score, 6), **{p: d[i] for p, d in result["points"].items()}}
            for i, (row, score) in enumerate(zip(rows, result["scores"], strict=True))
        }
        out = {"figures": figures, "folds": result["folds"], "held_out": held_out}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
