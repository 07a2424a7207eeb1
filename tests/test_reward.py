"""IchorEnv's reward terms, the combiner, the tokenisation helper, and the measured accuracy target."""

import asyncio
import json
from pathlib import Path

import pytest

from envs.atropos.reward import (
    Anchor,
    AnchorReward,
    CombinedReward,
    EmbeddingMarginReward,
    JudgeReward,
    MiniLMEmbedder,
    PreferenceHeadReward,
    RepetitionPenalty,
    Rollout,
    StringSimilarityReward,
    TruncationPenalty,
    mean_centre,
    pairwise_accuracy,
    parse_verdict,
)

ROOT = Path(__file__).resolve().parent.parent

PNPM = Anchor(accepted="Use pnpm: run `pnpm install`.", rejected="Run `npm install`.")


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder.load()


def test_anchor_matches_accepted_and_rejected_after_normalising():
    anchor = AnchorReward()
    texts = ["use PNPM: run pnpm install", "Run npm install!", "Try yarn.", ""]
    assert anchor.score([Rollout(t) for t in texts], [PNPM]) == [1.0, -1.0, 0.0, 0.0]


def test_anchor_needs_very_high_similarity_not_overlap():
    # shares most words with the accepted answer but says something else
    assert AnchorReward().score([Rollout("Use pnpm: run `pnpm uninstall`. Then reboot the machine.")], [PNPM]) == [0.0]


def test_minilm_forward_matches_sentence_transformers_reference(embedder):
    # all-MiniLM-L6-v2 quick-start cosines from sentence-transformers (torch) at 4 decimals
    assert round(embedder.cosine("The new movie is awesome", "The new movie is so great"), 4) == 0.8939
    assert round(embedder.cosine("A man is playing guitar", "A woman watches TV"), 4) == -0.0327


def test_embedding_margin_sign_on_paraphrase_and_off_topic(embedder):
    term = EmbeddingMarginReward(embedder)
    anchor = Anchor("Install the packages with pnpm: `pnpm install`.", "Install the packages with npm: `npm install`.")
    paraphrase, wrong, off_topic = term.score(
        [
            Rollout("Run pnpm install to get the dependencies."),
            Rollout("Run npm install to get the dependencies."),
            Rollout("Paris is the capital of France."),
        ],
        [anchor],
    )
    assert paraphrase > 0.02
    assert wrong < -0.02
    assert abs(off_topic) < paraphrase


def test_string_similarity_baseline_prefers_surface_overlap():
    base = StringSimilarityReward()
    near, far = base.score([Rollout("Use pnpm: run `pnpm install`."), Rollout("zzz")], [PNPM])
    assert near == 1.0 and far < 0.2


def test_truncation_and_repetition_penalties():
    assert TruncationPenalty().score([Rollout("ok", "stop"), Rollout("cut", "length"), Rollout("  ", "stop")]) == [
        0.0,
        -1.0,
        -1.0,
    ]
    rep = RepetitionPenalty()
    prose, loop = rep.score(
        [
            Rollout("Install the dependencies with pnpm, then run the tests and commit the lock."),
            Rollout("the tests the tests the tests the tests the tests the tests the tests"),
        ]
    )
    assert prose == 0.0
    assert loop < -0.7


def test_mean_centre_sums_to_zero_and_keeps_order():
    centred = mean_centre([3.0, 1.0, 2.0, 6.0])
    assert abs(sum(centred)) < 1e-12
    assert sorted(range(4), key=centred.__getitem__) == [1, 2, 0, 3]
    assert mean_centre([]) == []


def test_combiner_weights_and_unknown_terms(embedder):
    rollouts = [Rollout("Use pnpm: run `pnpm install`.", "stop"), Rollout("Run `npm install`.", "length")]
    only_anchor = CombinedReward({"anchor": 1.0}, embedder=embedder)
    assert only_anchor.score(rollouts, [PNPM]) == [1.0, -1.0]
    with_trunc = CombinedReward({"anchor": 1.0, "truncation": 2.0}, embedder=embedder)
    assert with_trunc.score(rollouts, [PNPM]) == [1.0, -3.0]
    with pytest.raises(ValueError, match="unknown reward term"):
        CombinedReward({"anchr": 1.0}, embedder=embedder)


def test_preference_head_learns_what_accepted_answers_share(embedder):
    rows = [
        {"accepted": f"Use pnpm to add {p}: `pnpm add {p}`.", "rejected": f"Use npm to add {p}: `npm install {p}`."}
        for p in ("react", "lodash", "vite", "zod", "express", "jest")
    ]
    head = PreferenceHeadReward.fit(embedder, rows)
    acc, rej = head.score(
        [Rollout("Use pnpm to add axios: `pnpm add axios`."), Rollout("Use npm to add axios: `npm install axios`.")]
    )
    assert acc > rej
    assert PreferenceHeadReward.fit(embedder, []).score([Rollout("x")]) == [0.0]


def test_judge_asks_both_orders_so_position_bias_cancels():
    calls = []

    async def always_a(messages):
        calls.append(messages[-1]["content"])
        return "A"

    def rank(text):  # pnpm over npm over anything else
        return 2 if "pnpm" in text else 1 if "npm" in text else 0

    async def prefers_pnpm(messages):
        body = messages[-1]["content"]
        a, b = body.split("Answer A:\n")[1].split("\n\nAnswer B:\n")
        return "\\boxed{A}" if rank(a) >= rank(b.split("\n\nWhich")[0]) else "B"

    judge = JudgeReward()
    rollouts = [Rollout("pnpm install"), Rollout("yarn")]
    assert asyncio.run(judge.score(always_a, [{"role": "user", "content": "install"}], rollouts, [PNPM])) == [0.0, 0.0]
    assert len(calls) == 4 and "Answer A:\npnpm install" in calls[0] and "Answer B:\npnpm install" in calls[1]
    assert asyncio.run(judge.score(prefers_pnpm, [{"role": "user", "content": "install"}], rollouts, [PNPM])) == [
        1.0,
        -1.0,
    ]
    assert parse_verdict("I think B. Final: A") == "A" and parse_verdict("neither") is None


def test_tokenize_rollout_gives_int_lists_and_masks_the_prompt(tmp_path):
    from transformers import AutoTokenizer

    from envs.atropos.ichor_env import tokenize_rollout
    from tests.atropos_stub import build_tokenizer

    tok = AutoTokenizer.from_pretrained(build_tokenizer(tmp_path / "tok"))
    messages = [{"role": "user", "content": "install the dependencies of my project"}]
    tokens, masks = tokenize_rollout(tok, messages, "Run npm install.")
    prompt = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=False)
    assert isinstance(tokens, list) and all(type(t) is int for t in tokens)
    assert len(masks) == len(tokens)
    assert masks[: len(prompt)] == [-100] * len(prompt)
    assert masks[len(prompt) :] == tokens[len(prompt) :] and all(m != -100 for m in masks[len(prompt) :])
    assert tok.decode(tokens[len(prompt) :]).startswith("Run npm install.")


def test_combined_reward_beats_string_similarity_on_the_bundled_samples(tmp_path):
    """The issue's target, measured on data/sample's held-out split: neighbours as anchors, head fitted on train."""
    from ichor.export import ExportConfig, load_records, write_export

    write_export(load_records(ROOT / "data" / "sample"), tmp_path, ExportConfig(strip_acknowledgement=True))
    rows = [json.loads(line) for line in (tmp_path / "atropos" / "pairs.jsonl").read_text().splitlines()]
    held_out = [r for r in rows if r["split"] == "eval"]
    train = [r for r in rows if r["split"] == "train"]
    reward = CombinedReward()
    reward.fit_preference(train)
    measured = pairwise_accuracy(held_out, train, reward, k=4)
    assert measured["pairs"] >= 10
    assert measured["combined"] > measured["baseline_string_similarity"]
