"""Stage `evaluate`: what the adapters learned, on the test split that no choice was made on.

For the base model and each adapter (``--dpo``, and ``--grpo`` when that folder exists), on every test pair:

* TRL's implicit reward, ``beta · (log π(y|x) − log π_ref(y|x))``: accuracy (chosen above rejected) and margin;
* length-normalised log-p accuracy (mean log p per token of chosen above rejected), base vs tuned, with an
  exact McNemar test on the pairs that changed;
* the mean log p(chosen) change, with ``eval.max_logp_drop_nats`` as its guard.

On up to ``eval.generate_prompts`` test prompts, greedy answers from each model (batched) with drift guards
(share of repeated 4-grams, distinct-1/2, empty answers, a sampled-answer KL estimate to the base) and a
correction-satisfaction rate: the share of checks derived from the user's correction
(``ichor.correction_checks``) that the answer meets. With ``judge.url`` set, a judge compares tuned and base
answers in both orders. Every accuracy carries its 95% Wilson interval and n; below
``eval.min_pairs_for_bare_accuracy`` pairs only the interval is printed.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pipelines.common import PipelineError, config_from, params_of, path_args, read_jsonl, run, write_json


@dataclass
class EvalParams:
    batch_size: int
    generate_prompts: int
    max_new_tokens: int
    min_pairs_for_bare_accuracy: int
    max_logp_drop_nats: float
    repetition_limit: float


@dataclass
class JudgeParams:
    url: str
    model: str
    key_env: str


# ---- statistics -------------------------------------------------------------------------------


def proportion(k: int, n: int) -> dict:
    """k of n with its 95% Wilson interval."""
    from ichor.evaluate import wilson

    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "value": round(k / n, 4) if n else None, "lo": round(lo, 4), "hi": round(hi, 4)}


def mcnemar_exact(before: list[bool], after: list[bool]) -> dict:
    """Exact two-sided McNemar test: pairs right only before (b) vs right only after (c)."""
    b = sum(x and not y for x, y in zip(before, after, strict=True))
    c = sum(y and not x for x, y in zip(before, after, strict=True))
    n = b + c
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n if n else 1.0
    return {"only_before": b, "only_after": c, "p_value": round(min(1.0, 2 * tail), 4)}


def shown(p: dict, min_n: int) -> str:
    """An accuracy as text: always with its interval, and without a point value below ``min_n`` pairs."""
    interval = f"95% CI {p['lo']:.2f}–{p['hi']:.2f}, n={p['n']}"
    if p["n"] < min_n:
        return f"{p['k']}/{p['n']} ({interval}; too few pairs for a point estimate)"
    return f"{p['value']:.2f} ({interval})"


# ---- log-probabilities ------------------------------------------------------------------------


def _ids(tokenizer, messages: list[dict], generation_prompt: bool) -> list[int]:
    return list(
        tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=generation_prompt, return_dict=False
        )
    )


def completion_span(tokenizer, prompt: list[dict], completion: list[dict]) -> tuple[list[int], int]:
    """Token ids of prompt + completion and where the completion starts (the common prefix counts as prompt)."""
    prompt_ids = _ids(tokenizer, prompt, True)
    full_ids = _ids(tokenizer, prompt + completion, False)
    start = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        start += 1
    return full_ids, start


def span_logps(model, spans: list[tuple[list[int], int]], pad_id: int, batch_size: int) -> list[tuple[float, int]]:
    """(sum of log p over the completion tokens, their count) for each (ids, start), right-padded batches."""
    import torch

    device = next(model.parameters()).device
    out: list[tuple[float, int]] = []
    for i in range(0, len(spans), batch_size):
        batch = spans[i : i + batch_size]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for j, (ids, _) in enumerate(batch):
            input_ids[j, : len(ids)] = torch.tensor(ids)
            mask[j, : len(ids)] = 1
        with torch.inference_mode():
            logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits.float()
        logps = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, 1:, None].to(device)).squeeze(-1)
        for j, (ids, start) in enumerate(batch):
            first = max(start, 1) - 1
            tokens = logps[j, first : len(ids) - 1]
            out.append((float(tokens.sum()), int(tokens.numel())))
    return out


def score_rows(model, tokenizer, rows: list[dict], batch_size: int) -> dict[str, list[tuple[float, int]]]:
    """Summed log p and token count of the chosen and of the rejected answer, per row."""
    return {
        side: span_logps(
            model,
            [completion_span(tokenizer, row["prompt"], row[side]) for row in rows],
            tokenizer.pad_token_id,
            batch_size,
        )
        for side in ("chosen", "rejected")
    }


def preference_report(base: dict, tuned: dict, beta: float) -> dict:
    """Implicit-reward and length-normalised accuracies of a tuned model against its base on the same rows."""
    n = len(base["chosen"])

    def margin(scores, i):
        return scores["chosen"][i][0] - scores["rejected"][i][0]

    def per_token_right(scores, i):
        (c, nc), (r, nr) = scores["chosen"][i], scores["rejected"][i]
        return c / max(nc, 1) > r / max(nr, 1)

    reward_margins = [beta * (margin(tuned, i) - margin(base, i)) for i in range(n)]
    norm_base = [per_token_right(base, i) for i in range(n)]
    norm_tuned = [per_token_right(tuned, i) for i in range(n)]
    summed_base = [margin(base, i) > 0 for i in range(n)]
    summed_tuned = [margin(tuned, i) > 0 for i in range(n)]
    chosen_change = [tuned["chosen"][i][0] - base["chosen"][i][0] for i in range(n)]
    return {
        "implicit_reward_accuracy": proportion(sum(m > 0 for m in reward_margins), n),
        "implicit_reward_margin": round(sum(reward_margins) / n, 4) if n else None,
        "length_normalised_accuracy": {
            "base": proportion(sum(norm_base), n),
            "tuned": proportion(sum(norm_tuned), n),
            "mcnemar": mcnemar_exact(norm_base, norm_tuned),
        },
        "summed_logp_accuracy": {
            "base": proportion(sum(summed_base), n),
            "tuned": proportion(sum(summed_tuned), n),
            "mcnemar": mcnemar_exact(summed_base, summed_tuned),
        },
        "chosen_logp_change": round(sum(chosen_change) / n, 4) if n else None,
        "chosen_logp_fell_on": proportion(sum(c < 0 for c in chosen_change), n),
    }


# ---- generations ------------------------------------------------------------------------------


def generate(model, tokenizer, prompts: list[list[dict]], max_new_tokens: int, batch_size: int, sample: bool):
    """Answers to ``prompts`` (left-padded batches): greedy, or one sample at temperature 1 when ``sample``."""
    import torch

    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    answers: list[list[int]] = []
    for i in range(0, len(prompts), batch_size):
        texts = [
            tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
            for p in prompts[i : i + batch_size]
        ]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.inference_mode():
            out = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=sample,
                temperature=1.0 if sample else None,
                top_p=1.0 if sample else None,
                top_k=0 if sample else None,
                pad_token_id=tokenizer.pad_token_id,
            )
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            answers.append(_until_eos(row, tokenizer))
    return answers


def _until_eos(ids: list[int], tokenizer) -> list[int]:
    stops = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    for k, token in enumerate(ids):
        if token in stops:
            return ids[:k]
    return ids


def repeated_ngram_share(text: str, n: int = 4) -> float:
    """The share of word n-grams that repeat an earlier one (0 for a text shorter than n words)."""
    words = re.findall(r"\S+", text.lower())
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def distinct_n(texts: Iterable[str], n: int) -> float:
    grams = [tuple(w[i : i + n]) for t in texts for w in [t.lower().split()] for i in range(len(w) - n + 1)]
    return round(len(set(grams)) / len(grams), 4) if grams else 0.0


def drift_guards(texts: list[str], repetition_limit: float) -> dict:
    degenerate = [repeated_ngram_share(t) > repetition_limit or not t.strip() for t in texts]
    return {
        "degenerate": proportion(sum(degenerate), len(texts)),
        "empty": sum(not t.strip() for t in texts),
        "mean_repeated_4gram_share": round(sum(map(repeated_ngram_share, texts)) / max(len(texts), 1), 4),
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "mean_words": round(sum(len(t.split()) for t in texts) / max(len(texts), 1), 1),
    }


def kl_to_base(peft, tokenizer, prompts: list[list[dict]], name: str, params: EvalParams) -> float | None:
    """Monte-Carlo KL(tuned ‖ base) per token: log π − log π_ref on answers sampled from the tuned model."""
    with active(peft, name):
        samples = generate(peft, tokenizer, prompts, params.max_new_tokens, params.batch_size, sample=True)
    spans = []
    for prompt, ids in zip(prompts, samples, strict=True):
        prompt_ids = _ids(tokenizer, prompt, True)
        if ids:
            spans.append((prompt_ids + ids, len(prompt_ids)))
    if not spans:
        return None
    with active(peft, name):
        tuned = span_logps(peft, spans, tokenizer.pad_token_id, params.batch_size)
    with active(peft, "base"):
        base = span_logps(peft, spans, tokenizer.pad_token_id, params.batch_size)
    tokens = sum(n for _, n in tuned)
    return round(sum(t - b for (t, _), (b, _) in zip(tuned, base, strict=True)) / max(tokens, 1), 5)


def satisfaction_rate(rows: list[dict], answers: list[str]) -> dict:
    """Mean share of correction-derived checks met, over the prompts where any check could be derived."""
    try:
        from ichor.correction_checks import checks_from, satisfaction
    except ImportError:
        return {"rate": None, "n": 0, "reason": "ichor.correction_checks is not available"}
    scores = []
    for row, answer in zip(rows, answers, strict=True):
        meta = row.get("metadata") or {}
        checks = checks_from(meta.get("user_said") or "", row["rejected"][0]["content"], row["chosen"][0]["content"])
        score = satisfaction(answer, checks)
        if score is not None:
            scores.append(score)
    return {"rate": round(sum(scores) / len(scores), 4) if scores else None, "n": len(scores)}


JUDGE_PROMPT = (
    "A user corrected an assistant. Given the conversation and the user's correction, which answer does what "
    "the user wanted? Reply with exactly A or B.\n\nConversation:\n{conversation}\n\nThe user's correction: "
    "{user_said}\n\nAnswer A:\n{a}\n\nAnswer B:\n{b}"
)


def judge_win_rate(rows: list[dict], tuned: list[str], base: list[str], judge: JudgeParams) -> dict:
    """Tuned vs base by the judge, asked in both orders; a win needs both orders to agree, else a tie."""
    from ichor.openai_chat import ChatError, complete

    wins = losses = ties = errors = 0
    for row, t, b in zip(rows, tuned, base, strict=True):
        conversation = "\n".join(f"{m['role']}: {m['content']}" for m in row["prompt"])
        said = (row.get("metadata") or {}).get("user_said") or ""
        votes = []
        for a_text, b_text, tuned_is in ((t, b, "A"), (b, t, "B")):
            prompt = JUDGE_PROMPT.format(conversation=conversation, user_said=said, a=a_text, b=b_text)
            try:
                text, _ = complete(
                    [{"role": "user", "content": prompt}],
                    url=judge.url,
                    model=judge.model,
                    api_key_env=judge.key_env or None,
                    max_tokens=4,
                    temperature=0.0,
                )
            except ChatError:
                errors += 1
                break
            verdict = text.strip().upper()[:1]
            votes.append(None if verdict not in "AB" else verdict == tuned_is)
        if len(votes) == 2 and votes[0] is votes[1] is True:
            wins += 1
        elif len(votes) == 2 and votes[0] is votes[1] is False:
            losses += 1
        elif len(votes) == 2:
            ties += 1
    decided = wins + losses
    return {"wins": wins, "losses": losses, "ties": ties, "errors": errors, "win_rate": proportion(wins, decided)}


# ---- the stage --------------------------------------------------------------------------------


@contextlib.contextmanager
def active(peft, name: str):
    """Run the PEFT model as ``name``: an adapter, or ``base`` with every adapter disabled."""
    if name == "base":
        with peft.disable_adapter():
            yield
    else:
        peft.set_adapter(name)
        yield


def load_models(paths, adapters: dict[str, Path]):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pipelines.train import device_precision

    device, precision = device_precision()
    dtype = torch.bfloat16 if precision["bf16"] else torch.float16 if precision["fp16"] else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(paths.base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(paths.base, dtype=dtype)
    model.to(device)  # type: ignore[arg-type]  # transformers' wrapper hides Module.to's signature
    first, *rest = adapters.items()
    peft = PeftModel.from_pretrained(model, str(first[1]), adapter_name=first[0])
    for name, folder in rest:
        peft.load_adapter(str(folder), adapter_name=name)
    peft.eval()
    return peft, tokenizer


def adapters_of(paths) -> dict[str, Path]:
    found = {"dpo": Path(paths.dpo)}
    if paths.grpo and (Path(paths.grpo) / "adapter_config.json").is_file():
        found["grpo"] = Path(paths.grpo)
    for name, folder in found.items():
        if not (folder / "adapter_config.json").is_file():
            raise PipelineError(f"{folder}: no {name} adapter (run the earlier stages first)")
    return found


def fitted_test_rows(paths, params: dict, tokenizer) -> tuple[list[dict], dict]:
    from pipelines.train import fit_rows

    rows = read_jsonl(Path(paths.data) / "dpo_eval.jsonl")
    return fit_rows(tokenizer, rows, int(params["dpo"]["max_length"]))


def unique_prompts(rows: list[dict], limit: int) -> list[dict]:
    seen, chosen = set(), []
    for row in rows:
        key = json.dumps(row["prompt"], sort_keys=True)
        if key not in seen:
            seen.add(key)
            chosen.append(row)
    return chosen[:limit]


def evaluate(paths, params: dict) -> dict:
    from pipelines.train import quiet_libraries

    quiet_libraries()
    settings = config_from(params, "eval", EvalParams)
    judge = config_from(params, "judge", JudgeParams)
    beta = float(params["dpo"]["beta"])
    if not (Path(paths.base) / "config.json").is_file():
        raise PipelineError(f"{paths.base}: no base model (run the base_model stage first)")
    adapters = adapters_of(paths)
    peft, tokenizer = load_models(paths, adapters)
    rows, fit = fitted_test_rows(paths, params, tokenizer)
    if not rows:
        raise PipelineError(f"{paths.data}/dpo_eval.jsonl: no test pairs (add pairs or raise export.eval_fraction)")
    with active(peft, "base"):
        base_scores = score_rows(peft, tokenizer, rows, settings.batch_size)
    gen_rows = unique_prompts(rows, settings.generate_prompts)
    prompts = [row["prompt"] for row in gen_rows]
    texts = {}
    for name in ("base", *adapters):
        with active(peft, name):
            ids = generate(peft, tokenizer, prompts, settings.max_new_tokens, settings.batch_size, sample=False)
        texts[name] = [tokenizer.decode(a, skip_special_tokens=True).strip() for a in ids]
    metrics: dict = {
        "n_test_pairs": len(rows),
        "fit": fit,
        "n_generation_prompts": len(prompts),
        "base": {
            "drift": drift_guards(texts["base"], settings.repetition_limit),
            "correction_satisfaction": satisfaction_rate(gen_rows, texts["base"]),
        },
    }
    for name in adapters:
        with active(peft, name):
            tuned_scores = score_rows(peft, tokenizer, rows, settings.batch_size)
        report = preference_report(base_scores, tuned_scores, beta)
        report["drift"] = drift_guards(texts[name], settings.repetition_limit)
        report["drift"]["kl_to_base_per_token"] = kl_to_base(peft, tokenizer, prompts, name, settings)
        report["correction_satisfaction"] = satisfaction_rate(gen_rows, texts[name])
        report["chosen_logp_guard"] = {
            "max_drop_nats": settings.max_logp_drop_nats,
            "held": report["chosen_logp_change"] is not None
            and report["chosen_logp_change"] >= -settings.max_logp_drop_nats,
        }
        if judge.url:
            report["judge"] = judge_win_rate(gen_rows, texts[name], texts["base"], judge)
        metrics[name] = report
    write_outputs(paths, metrics, gen_rows, texts)
    print_summary(metrics, list(adapters), settings.min_pairs_for_bare_accuracy)
    return metrics


def write_outputs(paths, metrics: dict, gen_rows: list[dict], texts: dict[str, list[str]]) -> None:
    write_json(paths.metrics, metrics)
    plot = []
    for name in texts:
        if name == "base":
            continue
        m = metrics[name]
        for kind in ("base", "tuned"):
            acc = m["length_normalised_accuracy"][kind]
            plot.append({"model": name if kind == "tuned" else "base", "length_normalised_accuracy": acc["value"]})
    write_json(paths.accuracy_plot, plot)
    all_rows = read_jsonl(Path(paths.data) / "dpo.jsonl")
    write_json(paths.mistakes_plot, mistake_histogram(all_rows))
    Path(paths.generations).parent.mkdir(parents=True, exist_ok=True)
    with open(paths.generations, "w", encoding="utf-8") as fh:
        for i, row in enumerate(gen_rows):
            entry = {"uid": (row.get("metadata") or {}).get("uid"), "prompt": row["prompt"]}
            entry.update({name: answers[i] for name, answers in texts.items()})
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def print_summary(metrics: dict, adapters: list[str], min_n: int) -> None:
    print(f"evaluate: {metrics['n_test_pairs']} test pairs, {metrics['n_generation_prompts']} prompts answered")
    base = metrics["base"]
    print(
        f"  base: correction satisfaction {base['correction_satisfaction']['rate']} "
        f"(n={base['correction_satisfaction']['n']}), degenerate {shown(base['drift']['degenerate'], min_n)}"
    )
    for name in adapters:
        m = metrics[name]
        norm = m["length_normalised_accuracy"]
        print(
            f"  {name}: implicit-reward accuracy {shown(m['implicit_reward_accuracy'], min_n)}; "
            f"length-normalised accuracy {shown(norm['base'], min_n)} → {shown(norm['tuned'], min_n)} "
            f"(McNemar p={norm['mcnemar']['p_value']}); log p(chosen) {m['chosen_logp_change']:+.2f} nats/pair"
        )
        print(
            f"  {name}: correction satisfaction {m['correction_satisfaction']['rate']} "
            f"(n={m['correction_satisfaction']['n']}), degenerate {shown(m['drift']['degenerate'], min_n)}, "
            f"KL to base {m['drift']['kl_to_base_per_token']} nats/token"
        )


def mistake_histogram(rows: Iterable[dict]) -> list[dict]:
    counts = Counter((row.get("metadata") or {}).get("label") or "unlabelled" for row in rows)
    return [{"label": label, "pairs": n} for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


PATHS = {
    "base": "the base model folder",
    "dpo": "the DPO adapter",
    "data": "the export folder (dpo_eval.jsonl is the test split)",
    "metrics": "the figures (JSON)",
    "accuracy_plot": "length-normalised accuracy per model (JSON)",
    "mistakes_plot": "mistake-type histogram (JSON)",
    "generations": "each model's answer to each test prompt (JSONL)",
}


def main(argv: list[str] | None = None) -> int:
    args = path_args(argv, __doc__.splitlines()[0], PATHS, {"grpo": "the GRPO adapter, scored when it exists"})
    return run(lambda: evaluate(args, params_of(args)))


if __name__ == "__main__":
    raise SystemExit(main())
