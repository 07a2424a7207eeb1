"""Two nested-CV runs on the same windows, compared: the F1 difference with a 95% interval over repositories.

    python -m ichor.detect_compare --data ../shared/data/corrections-dev.jsonl ../shared/data/corrections-more.jsonl \
        --before BEFORE.json --after AFTER.json

BEFORE and AFTER are ``detect_cv --json`` files.  Both runs' held-out decisions are counted per repository
and the same resampled repositories score both (``evaluate.f1_difference_interval``), so what the two
runs share does not widen the interval: an interval that holds 0 is a difference these windows cannot
tell from the procedure's own noise.  Reported overall, per slice and per language group.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import detect_fit as F
from .evaluate import column_sums, counts_by_source, f1_difference_interval, f1_of, members_by_group


def held_out(path: str) -> dict[str, dict]:
    """A ``detect_cv --json`` file's decisions per window id; ValueError when it holds none."""
    try:
        decisions = json.loads(Path(path).read_text(encoding="utf-8")).get("held_out")
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: not a detect_cv --json file ({exc})") from None
    if not isinstance(decisions, dict) or not decisions:
        raise ValueError(f"{path}: holds no held-out decisions (write it with detect_cv --json)")
    return decisions


def compare(rows: list[dict], before: dict[str, dict], after: dict[str, dict], point: str) -> dict[str, dict]:
    """Per group: both F1s, their difference and its interval over repositories (None under too few)."""
    missing = [str(r.get("id")) for r in rows if str(r.get("id")) not in before or str(r.get("id")) not in after]
    if missing:
        raise ValueError(f"{len(missing)} windows have no decision in both runs (first: {missing[0]})")
    out = {}
    for name, idx in members_by_group(rows).items():
        mine = [rows[i] for i in idx]
        decided = [[bool(runs[str(r.get("id"))][point]) for r in mine] for runs in (before, after)]
        counts = counts_by_source(mine, *decided)
        sums = column_sums(counts.values(), 6)
        a, b = f1_of(*sums[:3]), f1_of(*sums[3:])
        out[name] = {
            "n": len(idx),
            "sources": len(counts),
            "before": a,
            "after": b,
            "difference": b - a,
            "interval": f1_difference_interval(list(counts.values())),
        }
    return out


def markdown(table: dict[str, dict]) -> str:
    lines = [
        "| windows | n | repositories | F1 before | F1 after | difference [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in table.items():
        interval = c["interval"]
        spread = f"[{interval[0]:+.3f} – {interval[1]:+.3f}]" if interval else "(no interval: too few repositories)"
        lines.append(
            f"| {name} | {c['n']} | {c['sources']} | {c['before']:.3f} | {c['after']:.3f} "
            f"| {c['difference']:+.3f} {spread} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = F.data_parser("ichor.detect_compare", __doc__)
    parser.add_argument("--before", required=True, help="detect_cv --json file of the first run")
    parser.add_argument("--after", required=True, help="detect_cv --json file of the second run, on the same windows")
    parser.add_argument(
        "--point", choices=("standalone", "candidate"), default="standalone", help="which operating point"
    )
    args = parser.parse_args(argv)
    rows = F.rows_or_exit(parser, args.data)
    try:
        table = compare(rows, held_out(args.before), held_out(args.after), args.point)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    print(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
