"""Print a short table of the pipeline's metrics (``metrics/*.json``) and where the plots are."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _ci(p: dict) -> str:
    return f"{p['k']}/{p['n']} [{p['lo']:.2f}, {p['hi']:.2f}]"


def _adapter_rows(name: str) -> tuple:
    return (
        (
            "eval",
            f"{name}: implicit-reward accuracy",
            lambda m: f"{_ci(m[name]['implicit_reward_accuracy'])}, margin {m[name]['implicit_reward_margin']}",
        ),
        (
            "eval",
            f"{name}: length-normalised accuracy",
            lambda m: (
                f"{_ci(m[name]['length_normalised_accuracy']['base'])} → "
                f"{_ci(m[name]['length_normalised_accuracy']['tuned'])}, "
                f"McNemar p={m[name]['length_normalised_accuracy']['mcnemar']['p_value']}"
            ),
        ),
        ("eval", f"{name}: log p(chosen) change", lambda m: f"{m[name]['chosen_logp_change']:+.2f} nats/pair"),
        (
            "eval",
            f"{name}: correction satisfaction",
            lambda m: (
                f"{m['base']['correction_satisfaction']['rate']} → {m[name]['correction_satisfaction']['rate']} "
                f"(n={m[name]['correction_satisfaction']['n']})"
            ),
        ),
        (
            "eval",
            f"{name}: degenerate answers, KL",
            lambda m: f"{_ci(m[name]['drift']['degenerate'])}, {m[name]['drift']['kl_to_base_per_token']} nats/token",
        ),
    )


ROWS = (
    ("audit", "pairs in → out", lambda m: f"{m['pairs_in']} → {m['pairs_out']} (from {m.get('source', '?')})"),
    ("audit", "data version", lambda m: m.get("data_version") or "unversioned (`dvc add data/pairs` to pin it)"),
    (
        "audit",
        "leaks / duplicates / identical",
        lambda m: f"{m['leaks_found']} / {m['duplicates']} / {m.get('identical', 0)}",
    ),
    (
        "export",
        "train / validation / test pairs",
        lambda m: f"{m['train']} / {m['validation']} / {m['eval']} ({m['near_duplicates_dropped']} near-dups dropped)",
    ),
    ("export", "DPO forms", lambda m: ", ".join(f"{k} {v}" for k, v in sorted(m["forms"].items()))),
    (
        "train",
        "steps, validation loss",
        lambda m: (
            f"{m['steps']}/{m['max_steps']} ({m['epochs']} epochs), "
            f"{m['validation_loss_before']} → {m['best_validation_loss']}"
        ),
    ),
    (
        "train",
        "tokens/s, wall",
        lambda m: f"{m['train_tokens_per_s']} ({m['device']}, {m['precision']}), {m['wall_s']} s",
    ),
    ("eval", "test pairs, prompts answered", lambda m: f"{m['n_test_pairs']}, {m['n_generation_prompts']}"),
    *_adapter_rows("dpo"),
    *_adapter_rows("grpo"),
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
            if name.startswith("grpo") and "grpo" not in metrics[stage]:
                continue
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
        "\nPlots: `dvc plots show` writes dvc_plots/index.html (rewards/*, logps/* and loss per step, accuracy "
        "per model, mistake types);\n       answers per model in plots/generations.jsonl. "
        "Compare runs with `dvc metrics diff` or `dvc exp show`."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
