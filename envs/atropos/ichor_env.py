"""IchorEnv: an Atropos environment that rewards answers the user would accept.

Items are ichor's exported pairs (``pairs.jsonl``: uid, messages, accepted, rejected, user_said, kind,
label, split). For each prompt the policy server samples ``group_size`` answers; each is scored by
``ichor.reward`` (the same reward the GRPO stage trains on) against the user's correction and answers,
the scores are mean-centred, and groups with no spread are dropped (no signal for GRPO-style trainers).

The reward's weights come from ``--env.reward_spec`` (a params.yaml or an exported reward.json); when it
is empty, from ``reward.json`` beside this file (an exported atropos_env/), else ``./params.yaml``, else
``ichor.reward.DEFAULT_WEIGHTS``. The reward code itself is imported from the installed ``ichor`` package.

    python ichor_env.py process --env.pairs_path pairs.jsonl --env.tokenizer_name MODEL_DIR \\
        --openai.base_url http://127.0.0.1:8131/v1 --openai.model_name MODEL --env.use_wandb false
    python ichor_env.py serve ...      # with `run-api --host 127.0.0.1` and a trainer
    python ichor_env.py evaluate ...   # reward and correction satisfaction of the policy on held-out prompts

Tokens are re-tokenised here with ``apply_chat_template(..., tokenize=True, return_dict=False)``:
atroposlib 0.4.0's ``tokenize_for_trainer`` returns a BatchEncoding under transformers 5. For
training-grade token ids and logprobs use ``--openai.server_type vllm`` (or sglang) with
``--env.use_managed_server true``: the managed server returns the sampled ids and their logprobs.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from pydantic import Field

from ichor.correction_checks import satisfaction
from ichor.reward import DEFAULT_WEIGHTS, TERMS, Item, Rollout, item_checks, load_spec, mean_centre, reward_from_spec

# Explicit loopback defaults, never the library's localhost:8000 / :9004-9007.
DEFAULT_POLICY_URL = "http://127.0.0.1:8131/v1"
DEFAULT_TRAJECTORY_API = "http://127.0.0.1:8130"


class IchorEnvConfig(BaseEnvConfig):
    pairs_path: str = Field("data/export/atropos/pairs.jsonl", description="ichor's exported pairs.jsonl")
    train_split: str = Field("train", description="rows sampled for rollouts: train, eval or all")
    max_tokens: int = Field(64, description="max new tokens per rollout")
    temperature: float = Field(1.0, description="sampling temperature for rollouts")
    reward_spec: str = Field("", description="params.yaml or reward.json holding the reward weights (see module doc)")
    eval_samples: int = Field(1, description="policy samples per held-out prompt")
    max_passes: int = Field(0, description="stop after this many passes over the items (0 = cycle forever)")
    use_managed_server: bool = Field(False, description="take sampled ids + logprobs from a vllm/sglang server")
    seed: int = Field(0, description="item order shuffle seed")


def resolve_spec(configured: str) -> dict:
    """The reward spec: the configured file, else an exported reward.json beside this file, else
    ./params.yaml, else the defaults."""
    beside = Path(__file__).resolve().parent / "reward.json"
    for candidate in (configured, beside, "params.yaml"):
        if candidate and Path(candidate).is_file():
            return load_spec(candidate)
    if configured:
        raise FileNotFoundError(f"{configured}: no such reward spec")
    return {"weights": dict(DEFAULT_WEIGHTS), "judge": {}}


def load_pairs(path: str | Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [k for k in ("messages", "accepted", "rejected") if k not in row]
            if missing:
                raise ValueError(f"{path}:{lineno}: missing {', '.join(missing)}")
            rows.append(row)
    return rows


def tokenize_rollout(tokenizer, messages: list[dict], completion: str) -> tuple[list[int], list[int]]:
    """Token ids of prompt + completion, and masks: -100 on the prompt, the id where it is trained.

    ``return_dict=False`` makes transformers 4 and 5 both return a plain list of ints.
    """
    prompt_ids = list(
        tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=False)
    )
    full_ids = list(
        tokenizer.apply_chat_template(
            [*messages, {"role": "assistant", "content": completion}], tokenize=True, return_dict=False
        )
    )
    shared = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        shared += 1
    tokens = [int(t) for t in full_ids]
    masks = [-100] * shared + tokens[shared:]
    return tokens, masks


class IchorEnv(BaseEnv):
    name = "ichor"
    env_config_cls = IchorEnvConfig

    def __init__(self, config: IchorEnvConfig, server_configs, slurm=False, testing=False):
        super().__init__(config, server_configs, slurm, testing)
        self.spec = resolve_spec(config.reward_spec)
        self.reward = reward_from_spec(self.spec)
        self.term_buffer: dict[str, list[float]] = {t: [] for t in TERMS}
        self.score_buffer: list[float] = []

    @classmethod
    def config_init(cls) -> tuple[IchorEnvConfig, list[APIServerConfig]]:
        env_config = IchorEnvConfig(
            tokenizer_name="models/base",
            group_size=4,
            use_wandb=False,
            wandb_name="ichor",
            rollout_server_url=DEFAULT_TRAJECTORY_API,
            max_token_length=1024,
            total_steps=8,
            batch_size=8,
            steps_per_eval=50,
            max_num_workers=2,
        )
        server_configs = [
            APIServerConfig(
                model_name="models/policy",
                base_url=DEFAULT_POLICY_URL,
                api_key="local",
                server_type="openai",
                n_kwarg_is_ignored=True,  # `transformers serve` refuses `n`: ask once per sample
                health_check=False,  # a 1 Hz max_tokens=1 probe would steal a CPU server's time
                num_requests_for_eval=4,
                timeout=600,
            )
        ]
        return env_config, server_configs

    # ------------------------------------------------------------------------------------- data

    def pairs_file(self) -> Path:
        """The configured pairs, or the ``pairs.jsonl`` beside this file (an exported atropos_env/ folder)."""
        configured = Path(self.config.pairs_path)
        beside = Path(__file__).resolve().parent / "pairs.jsonl"
        return beside if not configured.is_file() and beside.is_file() else configured

    async def setup(self):
        rows = load_pairs(self.pairs_file())
        split = self.config.train_split
        self.items = [r for r in rows if split == "all" or r.get("split", "train") == split] or rows
        self.eval_items = [r for r in rows if r.get("split") == "eval"]
        random.Random(self.config.seed).shuffle(self.items)
        self.iter = 0

    async def get_next_item(self):
        if not self.items:
            return None
        if self.config.max_passes and self.iter >= self.config.max_passes * len(self.items):
            return None
        item = self.items[self.iter % len(self.items)]
        self.iter += 1
        return item

    def save_checkpoint(self, step, data=None):
        super().save_checkpoint(step, {"iter": self.iter, **(data or {})})

    # ---------------------------------------------------------------------------------- scoring

    async def score(self, item: dict, rollouts: list[Rollout]) -> tuple[list[float], list[float]]:
        """(mean-centred scores for the trainer, raw rewards for the record). The reward runs in a thread:
        its judge term makes blocking HTTP calls."""
        terms = await asyncio.to_thread(self.reward.per_term, Item.from_row(item), rollouts)
        combined = self.reward.combine(terms)
        for name, values in terms.items():
            self.term_buffer[name].extend(values)
        self.score_buffer.extend(combined)
        return mean_centre(combined), combined

    async def sample(self, messages: list[dict], n: int, split: str) -> tuple[list[Rollout], list | None]:
        """``n`` answers; with a managed vllm/sglang server, also the sampled ids, masks and logprobs."""
        kwargs = dict(
            messages=messages, n=n, max_tokens=self.config.max_tokens, temperature=self.config.temperature, split=split
        )
        if not self.config.use_managed_server:
            completion = await self.server.chat_completion(**kwargs)
            return [Rollout(c.message.content or "", c.finish_reason) for c in completion.choices], None
        async with self.server.managed_server(tokenizer=self.tokenizer) as managed:
            completion = await managed.chat_completion(**kwargs)
            nodes = managed.get_state()["nodes"]
        return [Rollout(c.message.content or "", c.finish_reason) for c in completion.choices], nodes

    async def collect_trajectories(self, item: dict):
        rollouts, nodes = await self.sample(item["messages"], self.config.group_size, "train")
        scores, raw = await self.score(item, rollouts)
        if len({round(s, 9) for s in scores}) <= 1:
            return None, []
        group = ScoredDataGroup(
            tokens=[],
            masks=[],
            scores=[],
            messages=[],
            overrides=[
                {"raw_score": r, "finish_reason": x.finish_reason} for r, x in zip(raw, rollouts, strict=False)
            ],
        )
        for i, (rollout, score) in enumerate(zip(rollouts, scores, strict=False)):
            if nodes is not None:
                tokens, masks = list(nodes[i].tokens), list(nodes[i].masked_tokens)
                group.setdefault("inference_logprobs", []).append(list(nodes[i].logprobs))
            else:
                tokens, masks = tokenize_rollout(self.tokenizer, item["messages"], rollout.text)
            group["tokens"].append(tokens)
            group["masks"].append(masks)
            group["scores"].append(score)
            group["messages"].append([*item["messages"], {"role": "assistant", "content": rollout.text}])
        return group, []

    # ------------------------------------------------------------------------------- evaluation

    async def held_out(self, rows: list[dict]) -> tuple[dict, list[dict]]:
        """The policy's answers to the held-out prompts: mean reward, correction satisfaction (on the prompts
        where a check could be derived) and how often an answer out-scores the rejected one, each with its n."""
        rewards, satisfied, wins, samples = [], [], [], []
        for row in rows:
            item = Item.from_row(row)
            rollouts, _ = await self.sample(row["messages"], self.config.eval_samples, "eval")
            scores = await asyncio.to_thread(self.reward.score, item, [*rollouts, Rollout(item.rejected, "stop")])
            for rollout, value in zip(rollouts, scores[:-1], strict=False):
                share = satisfaction(rollout.text, item_checks(item))
                rewards.append(value)
                wins.append(value > scores[-1])
                if share is not None:
                    satisfied.append(share)
                samples.append(
                    {
                        "uid": row.get("uid"),
                        "messages": row["messages"],
                        "response": rollout.text,
                        "finish_reason": rollout.finish_reason,
                        "reward": value,
                        "rejected_reward": scores[-1],
                        "correction_satisfaction": share,
                    }
                )
        metrics = {
            "eval/prompts": len(rows),
            "eval/answers": len(rewards),
            "eval/mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "eval/win_rate_vs_rejected": sum(wins) / len(wins) if wins else 0.0,
            "eval/answers_with_checks": len(satisfied),
            "eval/correction_satisfaction": sum(satisfied) / len(satisfied) if satisfied else 0.0,
        }
        return metrics, samples

    async def evaluate(self, *args, **kwargs):
        start = time.time()
        metrics, samples = await self.held_out(self.eval_items)
        self.eval_metrics = list(metrics.items())
        await self.evaluate_log(
            metrics,
            start_time=start,
            end_time=time.time(),
            samples=samples,
            generation_parameters={"max_tokens": self.config.max_tokens, "temperature": self.config.temperature},
        )
        return metrics

    async def wandb_log(self, wandb_metrics: dict | None = None):
        wandb_metrics = dict(wandb_metrics or {})
        for name, values in self.term_buffer.items():
            if values:
                wandb_metrics[f"train/reward_{name}"] = sum(values) / len(values)
        if self.score_buffer:
            wandb_metrics["train/reward"] = sum(self.score_buffer) / len(self.score_buffer)
        self.term_buffer = {t: [] for t in TERMS}
        self.score_buffer = []
        for key, value in getattr(self, "eval_metrics", []):
            wandb_metrics[key] = value
        self.eval_metrics = []
        await super().wandb_log(wandb_metrics)


if __name__ == "__main__":
    IchorEnv.cli()
