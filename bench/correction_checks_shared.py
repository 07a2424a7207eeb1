"""How the correction checks behave on real corrections (the shared labelled windows; not in the repo).

    python -m bench.correction_checks_shared [../shared/data/corrections-more.jsonl]

For each window labelled ``correction``, checks are derived from the user's message and the answer it
corrected (``prev_assistant``), without an accepted answer (the data has none). Reported, with n and Wilson
intervals: the share of corrections that yield any check, and on those, how often the assistant's next reply
(``assistant``, written after the correction) satisfies more checks than the corrected answer, fewer, or as
many. The reply is not known to be right, so this measures whether the checks move the way a fix would, not
their accuracy. Nothing was fitted on this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ichor.correction_checks import checks_from, satisfaction


def wilson(k: int, n: int) -> list[float] | None:
    if not n:
        return None
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return [round(ci.low, 3), round(ci.high, 3)]


def measure(rows: list[dict]) -> dict:
    corrections = [r for r in rows if r.get("kind") == "correction" and r.get("prev_assistant") and r.get("assistant")]
    covered = up = down = same = 0
    for r in corrections:
        checks = checks_from(r["user"], r["prev_assistant"])
        if not checks:
            continue
        covered += 1
        before, after = satisfaction(r["prev_assistant"], checks), satisfaction(r["assistant"], checks)
        up += after > before
        down += after < before
        same += after == before
    n = len(corrections)
    return {
        "corrections": n,
        "with_checks": {"k": covered, "rate": round(covered / n, 3) if n else None, "ci95": wilson(covered, n)},
        "reply_satisfies_more": {"k": up, "n": covered, "ci95": wilson(up, covered)},
        "reply_satisfies_fewer": {"k": down, "n": covered, "ci95": wilson(down, covered)},
        "same": same,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "../shared/data/corrections-more.jsonl")
    if not path.is_file():
        print(f"{path}: not here (the shared labelled data stays outside the repository); nothing measured")
        return 0
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(json.dumps({"data": str(path), **measure(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
