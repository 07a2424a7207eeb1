"""Stage `export`: audited records → TRL conversational preference JSONL + IchorEnv's Atropos pairs.

The same ``ichor.export.write_export`` that ``ichor export`` uses, with params.yaml's ``export:`` section
as its ``ExportConfig``, writes ``dpo.jsonl`` (every row, ``metadata.split`` set), ``dpo_train.jsonl``,
``dpo_validation.jsonl``, ``dpo_eval.jsonl`` (the test split) and ``atropos/pairs.jsonl``. The counts,
including what was stripped or dropped and each pair's DPO form, go to ``--metrics``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.common import config_from, params_of, path_args, run, write_json


def export(paths, params: dict) -> dict:
    from ichor.export import ExportConfig, load_records, write_export

    config = config_from(params, "export", ExportConfig)
    out = Path(paths.out)
    if out.exists():
        shutil.rmtree(out)
    counts = write_export(load_records(paths.source), out, config)
    write_json(paths.metrics, counts)
    print(
        f"export: {counts['pairs_in']} pairs → {counts['train']} train / {counts['validation']} validation / "
        f"{counts['eval']} test in {out}; {counts['near_duplicates_dropped']} held-out near-duplicates dropped, "
        f"{counts['acknowledgements_stripped']} acknowledgements stripped; forms {counts['forms']}"
    )
    return counts


PATHS = {"source": "the audited records", "out": "the export folder (replaced)", "metrics": "the counts (JSON)"}


def main(argv: list[str] | None = None) -> int:
    args = path_args(argv, __doc__.splitlines()[0], PATHS)
    return run(lambda: export(args, params_of(args)))


if __name__ == "__main__":
    raise SystemExit(main())
