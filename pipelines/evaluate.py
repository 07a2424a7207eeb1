"""Stage `evaluate`: preference accuracy and mean log-prob margin, before and after training.

On the eval split, for the base model and for base + adapter reloaded from ``models/adapter``:

* margin = log p(chosen | prompt) − log p(rejected | prompt), each a sum over the completion tokens
  of the chat-templated conversation (prompt tokens masked);
* preference accuracy = the share of pairs with margin > 0.

Writes ``metrics/eval.json``, ``plots/accuracy.json`` and ``plots/mistakes.json`` (a histogram of
mistake types over every exported pair).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.common import PipelineError, parse_config, read_jsonl, run, section, write_json


@dataclass
class EvaluateConfig:
    base: str = field(default="models/base", metadata={"help": "the base model folder"})
    adapter: str = field(default="models/adapter", metadata={"help": "the trained LoRA adapter"})
    eval_file: str = field(default="data/export/dpo_eval.jsonl", metadata={"help": "held-out preference rows"})
    all_file: str = field(default="data/export/dpo.jsonl", metadata={"help": "every exported row (for mistakes)"})
    max_length: int = field(default=384, metadata={"help": "tokens per prompt+completion, as in training"})
    metrics: str = field(default="metrics/eval.json", metadata={"help": "before/after accuracy and margin"})
    accuracy_plot: str = field(default="plots/accuracy.json", metadata={"help": "before/after accuracy"})
    mistakes_plot: str = field(default="plots/mistakes.json", metadata={"help": "mistake-type histogram"})

    @classmethod
    def from_params(cls, params: dict) -> EvaluateConfig:
        return cls(max_length=int(section(params, "dpo").get("max_length", cls.max_length)))


def _template_ids(tokenizer, messages: list[dict], generation_prompt: bool) -> list[int]:
    ids = tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=generation_prompt, return_dict=False
    )
    return list(ids)


def completion_span(tokenizer, prompt: list[dict], completion: list[dict], max_length: int | None = None):
    """Token ids of prompt + completion and where the completion starts.

    The prompt is templated with the generation prompt; for ChatML-style templates that is a strict
    prefix of the full conversation. Where a template breaks that, the common prefix counts as prompt.
    """
    prompt_ids = _template_ids(tokenizer, prompt, generation_prompt=True)
    full_ids = _template_ids(tokenizer, prompt + completion, generation_prompt=False)
    start = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        start += 1
    if max_length:
        full_ids = full_ids[:max_length]  # keep the start, as TRL's default truncation does
    return full_ids, min(start, len(full_ids))


def sequence_logprob(model, ids: list[int], start: int) -> float:
    """Sum of log p(token) over ``ids[start:]``, each conditioned on everything before it."""
    import torch

    start = max(start, 1)  # the first token has no prediction
    if start >= len(ids):
        return 0.0
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    with torch.inference_mode():
        logits = model(input_ids=input_ids).logits[0, :-1].float()
    logps = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[0, 1:, None]).squeeze(-1)
    return float(logps[start - 1 :].sum())


def preference_margins(
    model, tokenizer, rows: Iterable[dict], max_length: int | None = None, progress: str | None = None
) -> list[float]:
    """log p(chosen) − log p(rejected) for each TRL conversational preference row."""
    import torch
    from tqdm.auto import tqdm

    rows = list(rows)
    margins = []
    model.eval()
    with torch.inference_mode():
        for row in tqdm(rows, desc=progress, disable=progress is None):
            chosen = sequence_logprob(model, *completion_span(tokenizer, row["prompt"], row["chosen"], max_length))
            rejected = sequence_logprob(model, *completion_span(tokenizer, row["prompt"], row["rejected"], max_length))
            margins.append(chosen - rejected)
    return margins


def preference_stats(margins: list[float]) -> dict:
    if not margins:
        return {"preference_accuracy": None, "mean_margin": None}
    return {
        "preference_accuracy": round(sum(m > 0 for m in margins) / len(margins), 4),
        "mean_margin": round(sum(margins) / len(margins), 4),
    }


def mistake_histogram(rows: Iterable[dict]) -> list[dict]:
    counts = Counter((row.get("metadata") or {}).get("label") or "unlabelled" for row in rows)
    return [{"label": label, "pairs": n} for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def score_before_after(config: EvaluateConfig, rows: list[dict]) -> tuple[dict, dict]:
    """Margins of the base model, then of the same weights with the adapter loaded from disk."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(config.base)
    model = AutoModelForCausalLM.from_pretrained(config.base, dtype=torch.float32).to(device)
    before = preference_stats(preference_margins(model, tokenizer, rows, config.max_length, "eval base"))
    model = PeftModel.from_pretrained(model, config.adapter).to(device)
    after = preference_stats(preference_margins(model, tokenizer, rows, config.max_length, "eval base+adapter"))
    return before, after


def evaluate(config: EvaluateConfig) -> dict:
    for path in (
        Path(config.base) / "config.json",
        Path(config.adapter) / "adapter_config.json",
        Path(config.eval_file),
    ):
        if not path.is_file():
            raise PipelineError(f"{path}: missing (run the earlier stages first)")
    rows = read_jsonl(config.eval_file)
    if rows:
        before, after = score_before_after(config, rows)
    else:
        print(f"evaluate: {config.eval_file} is empty; add pairs (or raise data.eval_fraction) to get a score")
        before = after = preference_stats([])

    metrics = {"n_eval_pairs": len(rows), "before": before, "after": after}
    write_json(config.metrics, metrics)
    write_json(
        config.accuracy_plot,
        [
            {"model": "before", "preference_accuracy": before["preference_accuracy"]},
            {"model": "after", "preference_accuracy": after["preference_accuracy"]},
        ],
    )
    all_rows = read_jsonl(config.all_file) if Path(config.all_file).is_file() else rows
    write_json(config.mistakes_plot, mistake_histogram(all_rows))
    print(
        f"evaluate: {len(rows)} eval pairs; preference accuracy {before['preference_accuracy']} → "
        f"{after['preference_accuracy']}, mean margin {before['mean_margin']} → {after['mean_margin']}"
    )
    return metrics


def main(argv: list[str] | None = None) -> int:
    config = parse_config(EvaluateConfig, argv, __doc__.splitlines()[0])
    return run(lambda: evaluate(config))


if __name__ == "__main__":
    raise SystemExit(main())
