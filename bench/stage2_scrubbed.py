"""Does scrubbing the window change stage 2's answers? Measured on the windows whose prompt it changes.

Inside Hermes, and from a shell since ``ichor.confirm.scrubbed``, the model reads the window scrubbed; the
answers in ``bench/stage2_answers.jsonl`` were given to unscrubbed prompts. ``sample DIR`` writes, for every
answered window whose prompt scrubbing changes, the scrubbed prompt to ``DIR/scrubbed`` and the unscrubbed
one to ``DIR/raw`` (each with its ``SYSTEM.txt``). Two fresh instances of the answering model, each blind to
everything but its own folder, answered them into ``bench/stage2_answers_scrubbed.jsonl`` and
``bench/stage2_answers_raw_again.jsonl``. ``score`` counts the windows each set of answers gets right
(``is_correction`` against the label) and how often two sets agree: the two fresh sets differ only by the
scrubbing, and the original and the raw-again sets only by the instance.

    python -m bench.stage2_scrubbed sample /tmp/stage2-scrubbed
    python -m bench.stage2_scrubbed score
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from bench.stage2_by_hand import ANSWERS, DATA, load, load_answers, window
from ichor.confirm import confirmation_messages, parse_confirmation, scrubbed

HERE = Path(__file__).resolve().parent
SETS = {
    "original, unscrubbed": ANSWERS,
    "fresh, scrubbed": HERE / "stage2_answers_scrubbed.jsonl",
    "fresh, unscrubbed": HERE / "stage2_answers_raw_again.jsonl",
}


def changed(rows: list[dict], answered: set[str]) -> list[dict]:
    """The answered windows whose prompt scrubbing changes."""
    return [r for r in rows if r["id"] in answered and _prompt(window(r)) != _prompt(scrubbed(window(r)))]


def _prompt(w) -> str:
    return confirmation_messages(w)[1]["content"]


def answers(path: Path) -> dict[str, bool]:
    """Whether each answer says the window is a correction (an unreadable answer: no)."""
    out = {}
    for window_id, text in load_answers(path).items():
        found = parse_confirmation(text)
        out[window_id] = found is not None and found.is_correction
    return out


def write(rows: list[dict], folder: Path) -> None:
    for name, shape in (("scrubbed", scrubbed), ("raw", lambda w: w)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for row in rows:
            (folder / name / f"{row['id']}.txt").write_text(_prompt(shape(window(row))), encoding="utf-8")
        (folder / name / "SYSTEM.txt").write_text(confirmation_messages(window({}))[0]["content"], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cmd", choices=["sample", "score"])
    parser.add_argument("folder", type=Path, nargs="?", help="with sample: where the prompts go")
    parser.add_argument("--data", type=Path, default=DATA, help="corrections-more.jsonl (the dev set beside it)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.exit(2, f"stage2_scrubbed: {args.data} is missing (the shared data is not here)\n")
    rows = load(args.data) + load(args.data.parent / "corrections-dev.jsonl")
    rows = changed(rows, set(answers(ANSWERS)))
    if args.cmd == "sample":
        if args.folder is None:
            parser.exit(2, "stage2_scrubbed: sample needs a FOLDER\n")
        write(rows, args.folder)
        print(f"{len(rows)} windows whose prompt scrubbing changes -> {args.folder}/scrubbed, {args.folder}/raw")
        return 0
    said = {name: answers(path) for name, path in SETS.items()}
    gold = {r["id"]: r["is_correction"] for r in rows}
    print(f"{len(gold)} windows whose prompt scrubbing changes, {sum(gold.values())} positive")
    for name, got in said.items():
        print(f"{name:<22} right on {sum(got[i] == g for i, g in gold.items())}")
    for (a, x), (b, y) in itertools.combinations(said.items(), 2):
        print(f"{a} vs {b}: agree on {sum(x[i] == y[i] for i in gold)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
