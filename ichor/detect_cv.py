"""Out-of-source figures of the whole fitting procedure: nested cross-validation grouped by repository.

    python -m ichor.detect_cv --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl

Outer folds hold out whole repositories.  Inside each outer training part, ``detect_fit.choose`` picks
the regularisation, the feature cut and both thresholds by its own grouped CV; the model fitted on
that part then scores the held-out repositories.  The pooled held-out decisions are reported overall,
per slice (aider logs, agent transcripts, dialogue) and per language group of the user's message,
with 95% Wilson intervals for precision and recall and, for F1, a 95% interval from resampling whole
repositories (``evaluate.f1_interval``).  Nothing reported here was fitted or chosen on the windows it is scored on.

With ``--written FILES`` (``data/written/*.jsonl``), windows written for training join every training part and
their weight is chosen inside with the regularisation; they are never scored.  The shipped ``no_reply`` model's
figures are ``--variant no_reply --written data/written/s*.jsonl``; ``--variant chosen`` (same ``--written``) makes,
inside each outer fold, the choice the shipped model for windows with a reply makes between reading the reply
and not (``detect_fit.SLOT_PROCEDURES``).  With ``--hold-out-slices`` the outer folds are the kinds of
conversation instead: each kind is scored by a model that saw none of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import detect_fit as F
from .evaluate import grouped_blocks, slice_of

# The choice the shipped model for windows with a reply makes (``detect_fit.SLOT_PROCEDURES``), inside each fold.
CHOSEN = "chosen"
MODEL_VARIANTS = tuple(sorted(F.VARIANTS))


def nested_cv(
    rows: list[dict], variant: str, grid: F.Grid, outer_folds: int = 10, written_rows=(), written_replies=True
) -> dict:
    """Held-out score and decision at both operating points for every window, and the config each fold chose.

    Written windows join every training part, inner and outer, and are never scored."""
    written = F.Written.of(list(written_rows), variant, written_replies)
    return nested_choice(rows, [F.Procedure(variant, grid, written)], outer_folds)


def slice_folds(rows: list[dict]) -> list[list[int]]:
    """Outer folds that each hold out one kind of conversation (``evaluate.slice_of``) whole."""
    kinds = sorted({slice_of(r) for r in rows})
    return [[i for i, r in enumerate(rows) if slice_of(r) == kind] for kind in kinds]


def nested_choice(rows: list[dict], procedures: list[F.Procedure], outer_folds: int = 10, by_slice=False) -> dict:
    """``nested_cv`` where each outer fold keeps the procedure whose inner grouped-CV F1 is best; ``by_slice``:
    the outer folds are the kinds of conversation, each scored by a model that saw none of its kind."""
    y, groups, forced = F.labels(rows), [F.source_of(r) for r in rows], F.gated(rows)
    ids = {p.variant: F.featurise(rows, p.variant) for p in procedures}
    scores, points = [0.0] * len(rows), {"standalone": [False] * len(rows), "candidate": [False] * len(rows)}
    chosen = []
    for test in slice_folds(rows) if by_slice else F.group_folds(groups, outer_folds):
        held = set(test)
        tr = [i for i in range(len(rows)) if i not in held]
        f1, p, cfg, thresholds = F.best_procedure(procedures, ids, y, groups, forced, tr)
        mine = ids[p.variant]
        linear = F.fit_linear([mine[i] for i in tr], [y[i] for i in tr], [groups[i] for i in tr], cfg, p.written)
        chosen.append({"variant": p.variant, "inner_f1": round(f1, 4), "config": vars(cfg), "thresholds": thresholds})
        for i in test:
            scores[i] = F.detect_model.score(mine[i], linear)
            for name, t in thresholds.items():
                points[name][i] = bool(scores[i] >= t if forced[i] is None else forced[i])
    return {"scores": scores, "points": points, "folds": chosen}


def report(rows: list[dict], result: dict) -> dict:
    return {name: grouped_blocks(rows, decided) for name, decided in result["points"].items()}


def _cell(r: dict) -> str:
    return f"{r['value']:.2f} [{r['lo']:.2f}–{r['hi']:.2f}]"


def f1_cell(b: dict) -> str:
    """F1 and its interval over repositories; a group of too few repositories has none, and says so."""
    interval = b.get("f1_interval")
    if interval is None:
        sources = b.get("sources")
        return f"{b['f1']:.2f} (no interval: {'one repository' if sources == 1 else f'{sources} repositories'})"
    return f"{b['f1']:.2f} [{interval[0]:.2f}–{interval[1]:.2f}]"


def markdown(figures: dict) -> str:
    lines = []
    for point, blocks in figures.items():
        lines += [
            f"\n**{point}**\n",
            "| windows | n | positives | repositories | precision [95% CI] | recall [95% CI] | F1 [95% CI] |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, b in blocks.items():
            pos = b["tp"] + b["fn"]
            lines.append(
                f"| {name} | {b['n']} | {pos} | {b.get('sources', '?')} | {_cell(b['precision'])} "
                f"| {_cell(b['recall'])} | {f1_cell(b)} |"
            )
    return "\n".join(lines)


def cv_parser(
    prog: str,
    doc: str | None,
    json_help: str,
    variants=MODEL_VARIANTS,
    variant_help="which input shape's model",
) -> argparse.ArgumentParser:
    """The parser of every nested-CV command: ``--data``, ``--variant``, ``--outer-folds`` and ``--json``."""
    parser = F.data_parser(prog, doc)
    parser.add_argument("--variant", choices=variants, default="reply", help=variant_help)
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
        "ichor.detect_cv",
        __doc__,
        "also write the figures and each window's held-out decisions here",
        (*MODEL_VARIANTS, CHOSEN),
        f"which input shape's model ({CHOSEN}: the shipped model for windows with a reply, chosen in each fold)",
    )
    F.add_written_argument(parser)
    parser.add_argument(
        "--written-weights",
        nargs="+",
        type=float,
        help=f"the written windows' weights to choose among (default {' '.join(map(str, F.WRITTEN_WEIGHTS))})",
    )
    parser.add_argument(
        "--hold-out-slices",
        action="store_true",
        help=f"outer folds are the kinds of conversation, each held out whole ({CHOSEN} only)",
    )
    parser.add_argument(
        "--written-without-replies",
        action="store_true",
        help="leave the written windows' replies out of their features (they were written knowing the label)",
    )
    args = parser.parse_args(argv)
    rows, written = F.rows_or_exit(parser, args.data), F.rows_or_exit(parser, args.written)
    grid = grid_of(parser, args, written)
    if args.hold_out_slices and args.variant != CHOSEN:
        parser.exit(2, f"error: --hold-out-slices goes with --variant {CHOSEN}\n")
    if args.variant == CHOSEN:
        result = nested_choice(rows, F.slot_procedures("reply", written), args.outer_folds, args.hold_out_slices)
    else:
        result = nested_cv(rows, args.variant, grid, args.outer_folds, written, not args.written_without_replies)
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
