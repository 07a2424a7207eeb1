"""Score answers to one captured correction with the reward IchorEnv and the GRPO stage share: no server.

    python -m examples.atropos_smoke

The weights are params.yaml's ``reward`` section when it is there, else ``ichor.reward.DEFAULT_WEIGHTS``.
Prints each answer's reward and its terms: the accepted answer, the rejected one, an unrelated answer and
a keyword list built from the accepted answer's words.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ichor.reward import DEFAULT_WEIGHTS, Item, Rollout, load_spec, reward_from_spec

ROOT = Path(__file__).resolve().parent.parent
ITEM = Item(
    prompt=(("user", "Install the project's dependencies."),),
    accepted="This repo uses pnpm (there is a pnpm-lock.yaml): run `pnpm install`.",
    rejected="Run `npm install`.",
    user_said="we use pnpm, not npm",
)
ANSWERS = {
    "accepted": ITEM.accepted,
    "rejected": ITEM.rejected,
    "unrelated": "The Eiffel Tower is 330 metres tall.",
    "soup": "pnpm pnpm-lock.yaml repo install pnpm dependencies project uses",
}


def main() -> int:
    params = ROOT / "params.yaml"
    reward = reward_from_spec(load_spec(params) if params.is_file() else {"weights": DEFAULT_WEIGHTS})
    rollouts = [Rollout(text, "stop") for text in ANSWERS.values()]
    terms = reward.per_term(ITEM, rollouts)
    combined = reward.combine(terms)
    for i, (name, value) in enumerate(zip(ANSWERS, combined, strict=True)):
        detail = ", ".join(f"{t} {terms[t][i]:+.3f}" for t in terms if reward.weights[t])
        print(f"{name:9s} {value:+.3f}   ({detail})")
    scores = dict(zip(ANSWERS, combined, strict=True))
    ok = scores["accepted"] > max(scores["unrelated"], scores["soup"]) and scores["unrelated"] > scores["rejected"]
    print("order accepted > unrelated, soup; unrelated > rejected:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
