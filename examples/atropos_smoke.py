"""Score an accepted, a rejected and an unrelated answer with IchorEnv's reward: no inference server.

    python -m examples.atropos_smoke

The anchors are one captured correction; the preference head is fitted on the bundled sample pairs
when they are there (else it stays neutral). Prints each answer's combined reward and its terms.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROMPT = [{"role": "user", "content": "Install the project's dependencies."}]
ACCEPTED = "This repo uses pnpm (there is a pnpm-lock.yaml): run `pnpm install`."
REJECTED = "Run `npm install`."
UNRELATED = "The Eiffel Tower is 330 metres tall."


def sample_pairs() -> list[dict]:
    rows = []
    for path in sorted((ROOT / "data" / "sample").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def main() -> int:
    from envs.atropos.reward import DEFAULT_WEIGHTS, Anchor, CombinedReward, Rollout, load_weights

    params = ROOT / "params.yaml"
    reward = CombinedReward(load_weights(params) if params.is_file() else DEFAULT_WEIGHTS)
    reward.fit_preference(sample_pairs())
    rollouts = [Rollout(ACCEPTED, "stop"), Rollout(REJECTED, "stop"), Rollout(UNRELATED, "stop")]
    anchors = [Anchor(ACCEPTED, REJECTED)]
    terms = reward.per_term(rollouts, anchors)
    combined = reward.combine(terms)
    for name, rollout, value in zip(("accepted", "rejected", "unrelated"), rollouts, combined, strict=False):
        detail = ", ".join(f"{t} {terms[t][rollouts.index(rollout)]:+.3f}" for t in terms if reward.weights[t])
        print(f"{name:9s} {value:+.3f}   ({detail})")
    ok = combined[0] > combined[2] > combined[1]
    print("order accepted > unrelated > rejected:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
