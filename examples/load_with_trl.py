"""Load ichor's DPO export with `datasets` and check it is what TRL's DPOTrainer expects.

    python -m examples.load_with_trl [data/export/dpo.jsonl]

Every row must be conversational (lists of {role, content} messages) with an explicit prompt;
``maybe_extract_prompt`` must leave it unchanged (the prompt is already split out of chosen/rejected).
"""

from __future__ import annotations

import sys
from pathlib import Path


def check(path: str) -> int:
    from datasets import load_dataset
    from trl.data_utils import is_conversational, maybe_extract_prompt

    rows = load_dataset("json", data_files=path, split="train")
    problems = 0
    for i, row in enumerate(rows):
        example = {k: row[k] for k in ("prompt", "chosen", "rejected")}
        if not is_conversational(example):
            print(f"row {i}: not conversational")
            problems += 1
        elif maybe_extract_prompt(example) != example:
            print(f"row {i}: TRL would re-extract the prompt (chosen/rejected repeat it)")
            problems += 1
    splits = {}
    for meta in rows["metadata"]:
        splits[meta.get("split")] = splits.get(meta.get("split"), 0) + 1
    print(f"{path}: {len(rows)} rows, {problems} problem(s); columns {rows.column_names}; splits {splits}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = args[0] if args else "data/export/dpo.jsonl"
    if not Path(path).is_file():
        print(f"error: {path}: no such file (run `dvc repro export` or `ichor export` first)", file=sys.stderr)
        return 2
    return check(path)


if __name__ == "__main__":
    sys.exit(main())
