"""The correction-based reward: each term, the combiner, the weights spec, and adversaries that must lose."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ichor.reward import (
    DEFAULT_WEIGHTS,
    TERMS,
    Item,
    JudgeConfig,
    Reward,
    Rollout,
    checks_term,
    difference_term,
    echo_term,
    load_spec,
    mean_centre,
    parse_verdict,
    repetition_term,
    reward_from_spec,
    soup_term,
    truncation_term,
)

PNPM = Item(
    prompt=(
        ("user", "How do I install the dev dependencies for the frontend workspace? The repo is a pnpm monorepo."),
    ),
    accepted="Run `pnpm install --filter frontend` from the repo root; pnpm installs dev dependencies by default.",
    rejected="Use `npm install --only=dev` inside the frontend folder. That installs only the devDependencies of the "
    "frontend folder, which is all you need here.",
    user_said="we use pnpm, not npm",
)
DICTS = Item(
    prompt=(("user", "Merge two dicts a and b into a new dict. The service runs on Python 3.8."),),
    accepted="On Python 3.8 use unpacking: `merged = {**a, **b}`; keys in b win.",
    rejected="Use the merge operator: `merged = a | b`. It returns a new dict and keys in b win.",
    user_said="we're still on Python 3.8",
)
# A correct answer in the policy's own words (not the accepted answer recited), and the adversaries.
CASES = {
    PNPM: {
        "correct": "From the repo root run `pnpm install --filter frontend`; dev dependencies are installed by "
        "default.",
        "keyword soup": "pnpm pnpm install filter frontend root default dependencies dev workspace monorepo",
        "style mimicry": "Run `npm install --filter frontend` from the repo root; npm installs dev dependencies by "
        "default.",
        "echo": "we use pnpm, not npm. How do I install the dev dependencies for the frontend workspace? The repo is "
        "a pnpm monorepo.",
    },
    DICTS: {
        "correct": "Python 3.8 has no | for dicts, so unpack both: `merged = {**a, **b}` (b wins on shared keys).",
        # the soup, which outscored a correct answer under the old reward
        "keyword soup": "Python 3.8 3.9 operator unpacking dicts {**a, **b} needs use so on",
        "style mimicry": "On Python 3.8 use the merge operator: `merged = a | b`; keys in b win.",
        "echo": "we're still on Python 3.8. Merge two dicts a and b into a new dict.",
    },
}


def one(values):
    assert len(values) == 1
    return values[0]


@pytest.mark.parametrize("item", list(CASES), ids=["pnpm", "dicts"])
@pytest.mark.parametrize("adversary", ["keyword soup", "style mimicry", "echo"])
def test_adversaries_score_below_a_correct_answer(item, adversary):
    reward = Reward()
    correct, bad = reward.score(item, [Rollout(CASES[item]["correct"], "stop"), Rollout(CASES[item][adversary])])
    assert bad < correct
    assert one(reward.score(item, [Rollout(item.rejected, "stop")])) < correct


def test_checks_term_follows_the_correction():
    # "ok" avoids npm but never names pnpm: half the checks
    assert checks_term(PNPM, [Rollout("Run `pnpm install`."), Rollout("Run `npm install`."), Rollout("ok")]) == [
        1.0,
        -1.0,
        0.0,
    ]
    # no check derivable: the term says nothing
    vague = Item((("user", "fix it"),), "Fixed: `x = 1`.", "`x = 2`", "still failing")
    assert checks_term(vague, [Rollout("anything")]) == [0.0]


def test_difference_term_ignores_shared_words_and_negated_mentions():
    shared_only = one(difference_term(PNPM, [Rollout("install the frontend")]))
    assert shared_only == 0.0
    said_not_npm = one(difference_term(PNPM, [Rollout("Use pnpm, not npm: `pnpm install --filter frontend`.")]))
    ran_npm = one(difference_term(PNPM, [Rollout("Use pnpm or npm: `npm install --filter frontend`.")]))
    assert said_not_npm > ran_npm


def test_penalties():
    assert truncation_term([Rollout("ok", "stop"), Rollout("cut", "length"), Rollout("  ", "stop")]) == [0, -1, -1]
    prose, loop = repetition_term(
        [
            Rollout("Install the dependencies with pnpm, then run the tests and commit the lock."),
            Rollout("the tests the tests the tests the tests the tests the tests the tests"),
        ]
    )
    assert prose == 0.0 and loop < -0.7
    quoted, parroted = echo_term(
        DICTS, [Rollout("Use `{**a, **b}` on Python 3.8."), Rollout("Merge two dicts a and b into a new dict.")]
    )
    assert quoted == 0.0 and parroted == -1.0
    sentence, soup = soup_term(
        [
            Rollout("From the repo root, run `pnpm install --filter frontend` to install the dev dependencies."),
            Rollout("pnpm install filter frontend root default dependencies dev workspace monorepo"),
        ]
    )
    assert sentence == 0.0 and soup == -1.0


def test_mean_centre_sums_to_zero_and_keeps_order():
    centred = mean_centre([3.0, 1.0, 2.0, 6.0])
    assert abs(sum(centred)) < 1e-12
    assert sorted(range(4), key=centred.__getitem__) == [1, 2, 0, 3]
    assert mean_centre([]) == []


def test_weights_missing_terms_weigh_zero_and_unknown_terms_fail():
    rollouts = [Rollout("Run `pnpm install`.", "stop"), Rollout("Run `npm install`.", "length")]
    assert Reward({"checks": 1.0}).score(PNPM, rollouts) == [1.0, -1.0]
    assert Reward({"checks": 1.0, "truncation": 2.0}).score(PNPM, rollouts) == [1.0, -3.0]
    assert Reward({"checks": 1.0}).weights == {t: (1.0 if t == "checks" else 0.0) for t in TERMS}
    assert Reward().weights == DEFAULT_WEIGHTS
    with pytest.raises(ValueError, match="unknown reward term"):
        Reward({"chekcs": 1.0})
    with pytest.raises(ValueError, match="no judge is configured"):
        Reward({"judge": 1.0})


def test_spec_reads_params_yaml_and_exported_json_alike(tmp_path):
    (tmp_path / "params.yaml").write_text("reward:\n  weights:\n    checks: 2.0\n    soup: 0.5\n")
    (tmp_path / "reward.json").write_text(json.dumps({"weights": {"checks": 2.0, "soup": 0.5}}))
    from_yaml, from_json = load_spec(tmp_path / "params.yaml"), load_spec(tmp_path / "reward.json")
    assert from_yaml == from_json
    assert from_yaml["weights"]["checks"] == 2.0 and from_yaml["weights"]["difference"] == 0.0


class JudgeStub(BaseHTTPRequestHandler):
    """An OpenAI-compatible judge that prefers the answer mentioning pnpm, and records every request."""

    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        JudgeStub.seen.append(text)
        a = text.split("Answer A:\n")[1].split("\n\nAnswer B:\n")[0]
        letter = "A" if "pnpm" in a else "B"
        payload = json.dumps({"choices": [{"message": {"content": letter}}], "usage": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_judge_asks_both_orders_with_the_correction_and_never_needs_the_policy():
    server = ThreadingHTTPServer(("127.0.0.1", 0), JudgeStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        reward = reward_from_spec({"weights": {"judge": 1.0}, "judge": {"url": url, "model": "judge"}})
        assert isinstance(reward.judge, JudgeConfig) and reward.judge.configured
        # pnpm wins both orders; yarn vs npm has no pnpm on either side, the stub says "B" both times: a split
        assert reward.score(PNPM, [Rollout("Run `pnpm install`."), Rollout("Run `yarn`.")]) == [1.0, 0.0]
        assert len(JudgeStub.seen) == 4 and all("we use pnpm, not npm" in s for s in JudgeStub.seen)
        dead = reward_from_spec({"weights": {"judge": 1.0}, "judge": {"url": "http://127.0.0.1:9/v1", "model": "j"}})
        assert dead.score(PNPM, [Rollout("pnpm")]) == [0.0]  # an unreachable judge abstains
    finally:
        server.shutdown()
    assert parse_verdict("I think B. Final: \\boxed{A}") == "A" and parse_verdict("neither") is None


def test_item_from_an_exported_row_and_a_trl_row_agree():
    exported = {"messages": PNPM.messages, "accepted": PNPM.accepted, "rejected": PNPM.rejected, "user_said": "x"}
    trl = {
        "prompt": PNPM.messages,
        "chosen": [{"role": "assistant", "content": PNPM.accepted}],
        "rejected": [{"role": "assistant", "content": PNPM.rejected}],
        "user_said": "x",
    }
    assert Item.from_row(exported) == Item.from_row(trl)
