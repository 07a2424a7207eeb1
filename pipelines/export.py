"""Stage `export`: audited records → TRL conversational preference JSONL + IchorEnv's Atropos pairs.

The same ``ichor.export.write_export`` that ``ichor export`` uses writes ``data/export/``:
``dpo.jsonl`` (every row, ``metadata.split`` set), ``dpo_train.jsonl``, ``dpo_eval.jsonl`` (a seeded,
prompt-disjoint split) and ``atropos/pairs.jsonl``. Counts go to ``metrics/export.json``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.common import parse_config, run, section, write_json


@dataclass
class ExportStageConfig:
    source: str = field(default="data/audited/pairs.jsonl", metadata={"help": "audited records"})
    out_dir: str = field(default="data/export", metadata={"help": "the export folder (replaced)"})
    eval_fraction: float = field(default=0.25, metadata={"help": "share of prompts held out for evaluation"})
    seed: int = field(default=0, metadata={"help": "seeds the split"})
    strip_acknowledgement: bool = field(default=True, metadata={"help": 'drop "You\'re right, …" openers'})
    metrics: str = field(default="metrics/export.json", metadata={"help": "where the counts go"})

    @classmethod
    def from_params(cls, params: dict) -> ExportStageConfig:
        data, export = section(params, "data"), section(params, "export")
        return cls(
            eval_fraction=float(data.get("eval_fraction", cls.eval_fraction)),
            seed=int(data.get("seed", cls.seed)),
            strip_acknowledgement=bool(export.get("strip_acknowledgement", cls.strip_acknowledgement)),
        )


def export(config: ExportStageConfig) -> dict:
    from ichor.export import ExportConfig, load_records, write_export

    out = Path(config.out_dir)
    if out.exists():
        shutil.rmtree(out)
    counts = write_export(
        load_records(config.source), out, ExportConfig(config.eval_fraction, config.seed, config.strip_acknowledgement)
    )
    write_json(config.metrics, counts)
    print(f"export: {counts['pairs']} pairs → {counts['train']} train / {counts['eval']} eval in {out}")
    return counts


def main(argv: list[str] | None = None) -> int:
    config = parse_config(ExportStageConfig, argv, __doc__.splitlines()[0])
    return run(lambda: export(config))


if __name__ == "__main__":
    raise SystemExit(main())
