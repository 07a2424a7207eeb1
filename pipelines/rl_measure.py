"""The rl stage's measurement: policies sampled on held-out prompts, scored by the reward and by the checks.

For each held-out prompt, each policy (base, DPO adapter, GRPO adapter) samples ``samples`` answers. Reported,
each figure with its n:

- per policy: mean reward of the first answer (95% normal interval), correction satisfaction (mean share of
  checks met, on the prompts where a check could be derived) and the rate of fully satisfied answers (Wilson);
- best-of-n for n = 1 .. samples (the answer the reward ranks first among n): its reward and its satisfaction.
  Reward rising with n while satisfaction does not is the hacking check;
- pairwise win rates by the correction checks (GRPO vs DPO, GRPO vs base, DPO vs base): wins / (wins + losses),
  Wilson interval, ties counted apart;
- Kendall's τ-b over every sampled answer with checks: the reward vs satisfaction, and the reward *without* its
  checks term vs satisfaction (the first is partly circular; the second says whether the other terms agree),
  and vs the judge when one is configured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ichor.correction_checks import satisfaction
from ichor.evaluate import wilson
from ichor.reward import Item, Reward, Rollout, item_checks


@dataclass
class Scored:
    """One sampled answer with its reward, the reward less its checks term, and its checks satisfaction."""

    text: str
    reward: float
    rest: float
    judge: float
    satisfaction: float | None


# ------------------------------------------------------------------------------------------ statistics


def wilson_ci(successes: float, n: int) -> list[float] | None:
    """Wilson's 95% interval (``ichor.evaluate.wilson``, the one every ichor figure uses), rounded; None for n=0."""
    return [round(x, 4) for x in wilson(successes, n)] if n else None


def mean_interval(values: Sequence[float], bounds: tuple[float, float] | None = None) -> dict:
    """The mean with a 95% interval: Wilson's for shares in [0, 1] (a normal interval collapses to a point when
    a few answers all agree), else a normal one, clipped to ``bounds``."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "ci95": None}
    mean = sum(values) / n
    if bounds == (0.0, 1.0):
        low, high = wilson(mean * n, n)  # fractional successes: the satisfaction share of each answer
    else:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        low, high = mean - 1.96 * sd / math.sqrt(n), mean + 1.96 * sd / math.sqrt(n)
        if bounds:
            low, high = max(low, bounds[0]), min(high, bounds[1])
    return {"n": n, "mean": round(mean, 4), "ci95": [round(low, 4), round(high, 4)]}


def kendall(xs: Sequence[float], ys: Sequence[float]) -> dict:
    from scipy.stats import kendalltau

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return {"n": len(xs), "tau_b": None, "p": None}
    result = kendalltau(xs, ys)
    return {"n": len(xs), "tau_b": round(float(result.statistic), 4), "p": round(float(result.pvalue), 4)}


# ------------------------------------------------------------------------------------------- sampling


def finish_reason(ids: Sequence[int], eos_ids: set[int], max_new_tokens: int) -> str:
    return "stop" if any(i in eos_ids for i in ids) or len(ids) < max_new_tokens else "length"


def sample(model, tokenizer, prompts: Sequence[list[dict]], n: int, max_new_tokens: int, temperature: float):
    """``n`` sampled answers per prompt, batched with left padding; returns lists of Rollouts."""
    import torch

    tokenizer.padding_side = "left"
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    eos = tokenizer.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    out: list[list[Rollout]] = []
    for start in range(0, len(texts), 8):
        batch = tokenizer(texts[start : start + 8], return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: v.to(model.device) for k, v in batch.items()}
        with torch.no_grad():
            generated = model.generate(
                **batch,
                do_sample=True,
                temperature=temperature,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                num_return_sequences=n,
                pad_token_id=tokenizer.pad_token_id,
                use_cache=True,  # training may have switched the cache off (gradient checkpointing)
            )
        completions = generated[:, batch["input_ids"].shape[1] :].tolist()
        for i in range(0, len(completions), n):
            group = []
            for ids in completions[i : i + n]:
                kept = [t for t in ids if t != tokenizer.pad_token_id or t in eos_ids]
                cut = next((j for j, t in enumerate(kept) if t in eos_ids), len(kept))
                text = tokenizer.decode(kept[:cut], skip_special_tokens=True).strip()
                group.append(Rollout(text, finish_reason(kept, eos_ids, max_new_tokens)))
            out.append(group)
    return out


@contextmanager
def policy(model, name: str):
    """``model`` (a PeftModel holding the adapters) acting as ``name``: "base" disables every adapter."""
    if name == "base":
        with model.disable_adapter():
            yield model
    else:
        model.set_adapter(name)
        yield model


def score(reward: Reward, item: Item, rollouts: Sequence[Rollout]) -> list[Scored]:
    terms = reward.per_term(item, rollouts)
    totals = reward.combine(terms)
    checks = item_checks(item)
    return [
        Scored(
            r.text,
            totals[i],
            totals[i] - reward.weights["checks"] * terms["checks"][i],
            terms["judge"][i],
            satisfaction(r.text, checks),
        )
        for i, r in enumerate(rollouts)
    ]


# ------------------------------------------------------------------------------------------ reporting


def policy_figures(scored: Sequence[Sequence[Scored]]) -> dict:
    firsts = [group[0] for group in scored]
    with_checks = [s.satisfaction for s in firsts if s.satisfaction is not None]
    full = sum(1 for s in with_checks if s == 1.0)
    return {
        "reward": mean_interval([s.reward for s in firsts]),
        "correction_satisfaction": mean_interval(with_checks, (0.0, 1.0)),
        "fully_satisfied": {
            "n": len(with_checks),
            "rate": _rate(full, len(with_checks)),
            "ci95": wilson_ci(full, len(with_checks)),
        },
        "best_of": best_of(scored),
    }


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def best_of(scored: Sequence[Sequence[Scored]]) -> list[dict]:
    """For n = 1 .. group size: the reward's top answer among the first n, its reward and its satisfaction."""
    size = min(len(g) for g in scored) if scored else 0
    rows = []
    for n in range(1, size + 1):
        picks = [max(group[:n], key=lambda s: s.reward) for group in scored]
        rows.append(
            {
                "n": n,
                "reward": mean_interval([p.reward for p in picks]),
                "correction_satisfaction": mean_interval(
                    [p.satisfaction for p in picks if p.satisfaction is not None]
                ),
            }
        )
    return rows


def hacking(best: list[dict]) -> dict | None:
    """Does raising best-of-n raise the reward without raising the checks?"""
    if len(best) < 2:
        return None
    first, last = best[0], best[-1]
    reward_gain = last["reward"]["mean"] - first["reward"]["mean"]
    sat = (first["correction_satisfaction"]["mean"], last["correction_satisfaction"]["mean"])
    sat_gain = None if None in sat else sat[1] - sat[0]
    return {
        "from_n": first["n"],
        "to_n": last["n"],
        "reward_gain": round(reward_gain, 4),
        "satisfaction_gain": None if sat_gain is None else round(sat_gain, 4),
        "suspected": bool(reward_gain > 0 and sat_gain is not None and sat_gain <= 0),
    }


def win_rate(a: Sequence[Sequence[Scored]], b: Sequence[Sequence[Scored]]) -> dict:
    """``a``'s first answers vs ``b``'s by correction satisfaction, on prompts where both have checks."""
    wins = losses = ties = 0
    for ga, gb in zip(a, b, strict=True):
        sa, sb = ga[0].satisfaction, gb[0].satisfaction
        if sa is None or sb is None:
            continue
        wins += sa > sb
        losses += sa < sb
        ties += sa == sb
    decided = wins + losses
    return {
        "prompts": wins + losses + ties,
        "wins": wins,
        "losses": losses,
        "ties": ties,
        "win_rate": _rate(wins, decided),
        "ci95": wilson_ci(wins, decided),
    }


def rank_agreement(scored: Mapping[str, Sequence[Sequence[Scored]]], judged: bool) -> dict:
    answers = [s for groups in scored.values() for group in groups for s in group if s.satisfaction is not None]
    satisfied = [s.satisfaction or 0.0 for s in answers]  # never None here: filtered above
    out = {
        "reward_vs_checks": kendall([s.reward for s in answers], satisfied),
        "reward_without_checks_vs_checks": kendall([s.rest for s in answers], satisfied),
    }
    if judged:
        every = [s for groups in scored.values() for group in groups for s in group]
        out["reward_without_judge_vs_judge"] = kendall([s.reward - s.judge for s in every], [s.judge for s in every])
    return out


def report(scored: dict[str, list[list[Scored]]], judged: bool) -> dict:
    policies = {name: policy_figures(groups) for name, groups in scored.items()}
    for figures in policies.values():
        figures["hacking"] = hacking(figures["best_of"])
    names = list(scored)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[:i]]  # later policies vs earlier ones
    first = next(iter(scored.values()), [])
    return {
        "prompts": len(first),
        "prompts_with_checks": sum(1 for group in first if group and group[0].satisfaction is not None),
        "samples_per_prompt": min((len(g) for groups in scored.values() for g in groups), default=0),
        "policies": policies,
        "win_rate_by_checks": {f"{a}_vs_{b}": win_rate(scored[a], scored[b]) for a, b in pairs},
        "kendall": rank_agreement(scored, judged),
    }
