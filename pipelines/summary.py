"""Print a short table of the pipeline's metrics (``metrics/*.json``) and where the plots are."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROWS = (
    ("audit", "pairs in → out", lambda m: f"{m['pairs_in']} → {m['pairs_out']} (from {m.get('source', '?')})"),
    (
        "audit",
        "leaks / duplicates / identical",
        lambda m: f"{m['leaks_found']} / {m['duplicates']} / {m.get('identical', 0)}",
    ),
    ("export", "train / eval pairs", lambda m: f"{m['train']} / {m['eval']}"),
    ("train", "steps, final loss", lambda m: f"{m['steps']}, {m['final_loss']}"),
    ("train", "train tokens/s, wall", lambda m: f"{m['train_tokens_per_s']} ({m['precision']}), {m['wall_s']} s"),
    ("eval", "eval pairs", lambda m: f"{m['n_eval_pairs']}"),
    (
        "eval",
        "preference accuracy before → after",
        lambda m: f"{m['before']['preference_accuracy']} → {m['after']['preference_accuracy']}",
    ),
    ("eval", "mean margin before → after", lambda m: f"{m['before']['mean_margin']} → {m['after']['mean_margin']}"),
    (
        "publish",
        "pushed",
        lambda m: (
            f"{m['pushed']}" + (f" ({m['reason']})" if m.get("reason") else f" {m.get('repo')} @ {m.get('tag')}")
        ),
    ),
)


def load_metrics(folder: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(folder.glob("*.json")):
        try:
            found[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return found


def table(metrics: dict[str, dict]) -> list[tuple[str, str]]:
    lines = []
    for stage, name, fmt in ROWS:
        if stage in metrics:
            try:
                lines.append((f"{stage}: {name}", fmt(metrics[stage])))
            except (KeyError, TypeError):
                lines.append((f"{stage}: {name}", "?"))
    if "rl" in metrics:
        from pipelines.rl import summary_rows

        try:
            lines += [(f"rl: {name}", value) for name, value in summary_rows(metrics["rl"])]
        except (KeyError, TypeError):
            lines.append(("rl", "?"))
    for stage in sorted(set(metrics) - {row[0] for row in ROWS} - {"rl"}):
        flat = {k: v for k, v in metrics[stage].items() if isinstance(v, (int, float, str, bool)) and v is not None}
        if flat:
            lines.append((stage, ", ".join(f"{k}={v}" for k, v in list(flat.items())[:4])))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--metrics", default="metrics", help="the folder of stage metrics")
    args = parser.parse_args(argv)
    metrics = load_metrics(Path(args.metrics))
    if not metrics:
        print(f"no metrics in {args.metrics}/ yet: run `dvc repro` first")
        return 1
    lines = table(metrics)
    width = max(len(name) for name, _ in lines)
    print("\nichor pipeline")
    for name, value in lines:
        print(f"  {name.ljust(width)}  {value}")
    print(
        "\nPlots: `dvc plots show` writes dvc_plots/index.html (loss per step, accuracy before/after, "
        "mistake types);\n       raw data in plots/*.json. Compare runs with `dvc metrics diff` or `dvc exp show`."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
