"""The reward for answers to a corrected prompt: one module used by the GRPO stage, IchorEnv and atropos_env/.

An *item* is one user decision: the prompt, the answer the user rejected, the correction they typed
(``user_said``) and the answer they accepted. Each term maps a group of sampled answers to one float each;
the reward is Σ weight · term. The terms (their failure modes are in docs/atropos.md):

- ``checks``: 2·satisfaction − 1 over the checks ``ichor.correction_checks`` derives from the correction
  (a named tool/flag/file/version must appear, a negated one must not); 0 when none could be derived.
- ``difference``: recall of the words only the accepted answer has, minus recall of the words only the
  rejected one has (a negated mention, "not npm", is not counted). Words both answers share say nothing.
- ``embedding``: MiniLM cos(answer, accepted-only spans) − cos(answer, rejected-only spans): the same
  contrast, for paraphrases.
- ``judge``: an OpenAI-compatible judge (``ichor.openai_chat``; never the policy) compares the answer with
  the rejected one, told what the user said, in both orders; +1 both wins, −1 both losses.
- ``truncation``, ``repetition``, ``echo`` (copying the prompt or the correction), ``soup`` (prose with
  almost no function words: a keyword list): penalties in [−1, 0].

Weights come from ``params.yaml`` ``reward.weights`` (or an exported ``reward.json``); a term left out weighs 0
everywhere, and an unknown term is an error. numpy is only needed for ``embedding``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ichor.correction_checks import Check, checks_from, satisfaction

TERMS = ("checks", "difference", "embedding", "judge", "truncation", "repetition", "echo", "soup")
DEFAULT_WEIGHTS = {
    "checks": 1.0,
    "difference": 1.0,
    "embedding": 0.0,
    "judge": 0.0,
    "truncation": 0.5,
    "repetition": 0.5,
    "echo": 1.0,
    "soup": 1.0,
}
FUNCTION_WORDS = frozenset(
    """a an the to of in on at for with from by as is are was be been it its this that these those and or
    but if then so than not no you your we our they their there here which what when where how can will
    would should must may do does don't isn't instead only also just all any each""".split()
)


@dataclass(frozen=True)
class Item:
    """What the user decided about one prompt."""

    prompt: tuple  # the chat messages, as (role, content) pairs so an Item can be a cache key
    accepted: str
    rejected: str
    user_said: str = ""

    @classmethod
    def from_row(cls, row: dict) -> Item:
        """An exported pair: ``messages`` or a TRL ``prompt``; answers as text or as one assistant message."""
        messages = row.get("messages") or row.get("prompt") or []
        return cls(
            prompt=tuple((m.get("role", "user"), m.get("content") or "") for m in messages),
            accepted=_text(row.get("accepted", row.get("chosen", ""))),
            rejected=_text(row.get("rejected", "")),
            user_said=row.get("user_said") or "",
        )

    @property
    def messages(self) -> list[dict]:
        return [{"role": r, "content": c} for r, c in self.prompt]

    @property
    def asked(self) -> str:
        """What the user wrote: every user turn of the prompt and the correction."""
        return "\n".join([c for r, c in self.prompt if r == "user"] + [self.user_said])


@dataclass
class Rollout:
    """A sampled answer and why generation stopped ("stop", "length", or None when unknown)."""

    text: str
    finish_reason: str | None = None


def _text(value) -> str:
    if isinstance(value, list):  # TRL conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content") or "" for m in value)
    return value or ""


STRIP = "\"'.,;:!?()[]<>"
NEGATORS = frozenset({"not", "never", "no", "instead", "rather", "avoid", "without", "don't", "isn't", "doesn't"})


def _stem(token: str) -> str:
    """A crude suffix strip so "unpack" and "unpacking" count as one word."""
    if token.isalpha() and len(token) > 5:
        for suffix in ("ing", "ed", "es", "s"):
            if token.endswith(suffix):
                return token[: -len(suffix)]
    return token


def words(text: str) -> list[str]:
    """Lower-cased whitespace tokens, outer punctuation stripped, so code keeps its shape: ``--filter``,
    ``3.8``, ``{**a``, ``|``."""
    tokens = (t.strip(STRIP) for t in (text or "").replace("`", " ").lower().split())
    return [_stem(t) for t in tokens if t]


# ---------------------------------------------------------------------------------------------- terms


@lru_cache(maxsize=4096)
def item_checks(item: Item) -> tuple[Check, ...]:
    return tuple(checks_from(item.user_said, item.rejected, item.accepted))


def checks_term(item: Item, rollouts: Sequence[Rollout]) -> list[float]:
    checks = item_checks(item)
    out = []
    for r in rollouts:
        share = satisfaction(r.text, checks)
        out.append(0.0 if share is None else 2.0 * share - 1.0)
    return out


@lru_cache(maxsize=4096)
def differing(item: Item) -> tuple[frozenset, frozenset, str, str]:
    """(words only in accepted, words only in rejected, accepted-only spans, rejected-only spans)."""
    acc, rej = words(item.accepted), words(item.rejected)
    only_acc = frozenset(acc) - set(rej) - FUNCTION_WORDS
    only_rej = frozenset(rej) - set(acc) - FUNCTION_WORDS
    spans_acc, spans_rej = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, rej, acc, autojunk=False).get_opcodes():
        if tag != "equal":
            spans_rej.append(" ".join(rej[i1:i2]))
            spans_acc.append(" ".join(acc[j1:j2]))
    return only_acc, only_rej, " ".join(s for s in spans_acc if s), " ".join(s for s in spans_rej if s)


def _used_words(text: str) -> set[str]:
    """The answer's words, leaving out those a negation governs ("not npm", "instead of npm")."""
    tokens = words(text)
    return {t for i, t in enumerate(tokens) if not NEGATORS & set(tokens[max(0, i - 2) : i])}


def difference_term(item: Item, rollouts: Sequence[Rollout]) -> list[float]:
    only_acc, only_rej, _, _ = differing(item)
    out = []
    for r in rollouts:
        mentioned, used = set(words(r.text)), _used_words(r.text)
        gain = len(only_acc & mentioned) / len(only_acc) if only_acc else 0.0
        loss = len(only_rej & used) / len(only_rej) if only_rej else 0.0
        out.append(gain - loss)
    return out


def embedding_term(embedder, item: Item, rollouts: Sequence[Rollout]) -> list[float]:
    _, _, acc_spans, rej_spans = differing(item)
    if not acc_spans or not rej_spans:
        return [0.0] * len(rollouts)
    acc, rej = embedder.embed(acc_spans), embedder.embed(rej_spans)
    return [float(embedder.embed(r.text) @ acc - embedder.embed(r.text) @ rej) for r in rollouts]


def truncation_term(rollouts: Sequence[Rollout]) -> list[float]:
    """−1 for an answer cut off by the token limit, or empty."""
    return [-1.0 if r.finish_reason == "length" or not r.text.strip() else 0.0 for r in rollouts]


def _grams(tokens: Sequence[str], n: int) -> list[tuple]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def repetition_term(rollouts: Sequence[Rollout], n: int = 3, tolerance: float = 0.1) -> list[float]:
    """Minus the share of repeated word n-grams above a natural level: 0 for prose, near −1 for loops."""
    out = []
    for r in rollouts:
        grams = _grams(r.text.split(), n)
        repeated = 1.0 - len(set(grams)) / len(grams) if len(grams) >= 4 else 0.0
        out.append(-max(0.0, repeated - tolerance) / (1.0 - tolerance))
    return out


def echo_term(item: Item, rollouts: Sequence[Rollout], n: int = 3, tolerance: float = 0.25) -> list[float]:
    """Minus the share of the answer's word trigrams copied from the prompt or the correction, above a
    tolerance (quoting a command or a file name back is normal)."""
    source = set(_grams(words(item.asked), n))
    out = []
    for r in rollouts:
        grams = _grams(words(r.text), n)
        copied = sum(g in source for g in grams) / len(grams) if grams else 0.0
        out.append(-max(0.0, copied - tolerance) / (1.0 - tolerance))
    return out


def soup_term(rollouts: Sequence[Rollout], longest_natural: int = 5, scale: int = 4) -> list[float]:
    """Penalty for a keyword list: prose strings content words together with function words and
    punctuation, so a run of more than ``longest_natural`` content words in a row (code spans and
    punctuation break runs) costs up to −1 at ``longest_natural + scale``."""
    out = []
    for r in rollouts:
        longest = run = 0
        for token in re.sub(r"```.*?(```|$)|`[^`\n]*`", " . ", r.text or "", flags=re.S).split():
            bare = token.strip(STRIP).lower()
            run = 0 if not bare or bare in FUNCTION_WORDS else run + 1
            longest = max(longest, run)
            if token[-1:] in ".,;:!?)":
                run = 0
        out.append(-min(1.0, max(0, longest - longest_natural) / scale))
    return out


# ---------------------------------------------------------------------------------------------- judge

JUDGE_SYSTEM = (
    "You compare two answers to the same request. The user rejected an earlier answer and said what was wrong "
    "with it. Prefer the answer that does what the user asked. Reply with one letter, A or B."
)


@dataclass(frozen=True)
class JudgeConfig:
    """An OpenAI-compatible judge; never the policy being trained."""

    url: str = ""
    model: str = ""
    key_env: str = ""
    timeout: float = 60.0

    @property
    def configured(self) -> bool:
        return bool(self.url and self.model)


def judge_messages(item: Item, first: str, second: str) -> list[dict]:
    request = "\n".join(f"{r}: {c}" for r, c in item.prompt)
    body = (
        f"Request:\n{request}\n\nThe rejected earlier answer:\n{item.rejected}\n\nWhat the user said about it:\n"
        f"{item.user_said}\n\nAnswer A:\n{first}\n\nAnswer B:\n{second}\n\nWhich answer does what the user "
        "asked, A or B?"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": body}]


def parse_verdict(text: str) -> str | None:
    """The judge's letter: a boxed or bare A/B, the last one said; None when it says neither."""
    found = re.findall(r"\\boxed\{\s*([AB])\s*\}", text or "") or re.findall(r"\b([AB])\b", text or "")
    return found[-1] if found else None


def judge_term(config: JudgeConfig, item: Item, rollouts: Sequence[Rollout]) -> list[float]:
    """Each answer against the rejected one, in both orders to cancel position bias; a failed call is 0."""
    from ichor.openai_chat import ChatError, complete

    def verdict(first: str, second: str) -> str:
        try:
            text, _ = complete(
                judge_messages(item, first, second),
                url=config.url,
                model=config.model,
                api_key_env=config.key_env or None,
                timeout=config.timeout,
                max_tokens=8,
                temperature=0.0,
            )
        except ChatError:
            return ""
        return parse_verdict(text) or ""

    votes = {"A": 1.0, "B": -1.0}
    return [
        (votes.get(verdict(r.text, item.rejected), 0.0) - votes.get(verdict(item.rejected, r.text), 0.0)) / 2.0
        for r in rollouts
    ]


# ------------------------------------------------------------------------------------------- combiner


def normalise_weights(weights: dict | None) -> dict[str, float]:
    """Every term's weight: a term left out weighs 0; an unknown term is an error."""
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    unknown = set(weights) - set(TERMS)
    if unknown:
        raise ValueError(f"unknown reward term(s): {', '.join(sorted(unknown))}; known: {', '.join(TERMS)}")
    return {t: float(weights.get(t) or 0.0) for t in TERMS}


class Reward:
    """Σ weight · term over a group of answers to one item. Terms that weigh 0 are not computed."""

    def __init__(self, weights: dict | None = None, judge: JudgeConfig | None = None, embedder=None):
        self.weights = normalise_weights(weights)
        self.judge = judge or JudgeConfig()
        self.embedder = embedder
        if self.weights["judge"] and not self.judge.configured:
            raise ValueError("reward.weights.judge is set but no judge is configured (reward.judge url and model)")

    def term(self, name: str, item: Item, rollouts: Sequence[Rollout]) -> list[float]:
        if name == "checks":
            return checks_term(item, rollouts)
        if name == "difference":
            return difference_term(item, rollouts)
        if name == "embedding":
            return embedding_term(self._embedder(), item, rollouts)
        if name == "judge":
            return judge_term(self.judge, item, rollouts)
        if name == "truncation":
            return truncation_term(rollouts)
        if name == "repetition":
            return repetition_term(rollouts)
        if name == "echo":
            return echo_term(item, rollouts)
        if name == "soup":
            return soup_term(rollouts)
        raise ValueError(f"unknown reward term {name!r}")

    def _embedder(self):
        if self.embedder is None:
            from ichor.embed import MiniLMEmbedder

            self.embedder = MiniLMEmbedder.load()
        return self.embedder

    def per_term(self, item: Item, rollouts: Sequence[Rollout]) -> dict[str, list[float]]:
        """Each term's unweighted scores; a term that weighs 0 scores 0."""
        return {t: self.term(t, item, rollouts) if self.weights[t] else [0.0] * len(rollouts) for t in TERMS}

    def combine(self, per_term: dict[str, list[float]]) -> list[float]:
        n = len(next(iter(per_term.values())))
        return [sum(self.weights[t] * per_term[t][i] for t in TERMS) for i in range(n)]

    def score(self, item: Item, rollouts: Sequence[Rollout]) -> list[float]:
        return self.combine(self.per_term(item, rollouts))


def mean_centre(scores: Sequence[float]) -> list[float]:
    """Subtract the group mean: a GRPO trainer learns only from the ranking inside a group."""
    if not scores:
        return []
    mean = sum(scores) / len(scores)
    return [s - mean for s in scores]


# --------------------------------------------------------------------------------------------- config


def spec_from_params(params: dict) -> dict:
    """``{"weights": ..., "judge": ...}`` from a parsed params.yaml's ``reward`` section."""
    section = params.get("reward") or {}
    return {"weights": normalise_weights(section.get("weights")), "judge": dict(section.get("judge") or {})}


def load_spec(path: str | Path) -> dict:
    """The reward spec from a params.yaml (``reward:`` section) or an exported ``reward.json``."""
    file = Path(path)
    if file.suffix == ".json":
        data = json.loads(file.read_text(encoding="utf-8"))
        return {"weights": normalise_weights(data.get("weights")), "judge": dict(data.get("judge") or {})}
    import yaml

    return spec_from_params(yaml.safe_load(file.read_text(encoding="utf-8")) or {})


def reward_from_spec(spec: dict, embedder=None) -> Reward:
    judge = spec.get("judge") or {}
    config = JudgeConfig(**{k: judge[k] for k in ("url", "model", "key_env", "timeout") if judge.get(k)})
    return Reward(spec.get("weights"), config, embedder)
