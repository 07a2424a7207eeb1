"""Stage 2's prompt judged without a host model: a capable model answers the exact prompt, then it is scored.

``sample`` picks whole repositories of ``../shared/data/corrections-more.jsonl`` in a seeded order until
at least ``--n`` windows are in, and writes for each window the exact user message
``ichor.confirm.confirmation_messages`` builds (the system message is the same for all: ``RULES``) to
a folder outside the repository. The answering model reads those files only, never the labels.
Its raw JSON answers go in ``bench/stage2_answers.jsonl`` (ids and answers only: no text of the data).
``score`` then reads the labels and reports stage 1 (fitted on every other labelled window, so it has
never seen these repositories), stage 2 alone, and stage 1's candidates AND stage 2, with 95 % Wilson
intervals.

    python -m bench.stage2_by_hand sample /tmp/stage2-prompts [--sample 2]
    python -m bench.stage2_by_hand score [--sample 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path

from ichor.confirm import Window, confirmation_messages, parse_confirmation, stage1
from ichor.evaluate import _cell, _ratio

# ../shared/data beside the checkout, or $ICHOR_SHARED_DATA (as the tests find it)
DATA = (
    Path(os.environ.get("ICHOR_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared/data")
    / "corrections-more.jsonl"
)
ANSWERS = Path(__file__).resolve().parent / "stage2_answers.jsonl"
SEED = 11
FIELDS = ("prev_user", "prev_assistant", "user", "assistant")


def repository(row: dict) -> str:
    return row["source"].split("@", 1)[0]


def load(path: Path = DATA) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def sample(rows: list[dict], n: int, seed: int = SEED, number: int = 1) -> list[dict]:
    """Whole repositories, in a seeded random order, until at least ``n`` windows; sample 2 takes the
    repositories that follow sample 1's in the same order, and so on."""
    repos = sorted({repository(r) for r in rows})
    random.Random(seed).shuffle(repos)
    samples: list[list[dict]] = [[]]
    for repo in repos:
        if len(samples[-1]) >= n:
            samples.append([])
        samples[-1] += [r for r in rows if repository(r) == repo]
    return samples[number - 1] if 1 <= number <= len(samples) else []


def load_answers(path: Path) -> dict[str, str]:
    """The answering model's raw answers, by window id."""
    with path.open(encoding="utf-8") as fh:
        return {obj["id"]: obj["answer"] for obj in (json.loads(line) for line in fh if line.strip())}


def window(row: dict) -> Window:
    return Window(*(row.get(f) or "" for f in FIELDS))


def write_prompts(rows: list[dict], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for row in rows:
        (folder / f"{row['id']}.txt").write_text(confirmation_messages(window(row))[1]["content"], encoding="utf-8")
    (folder / "SYSTEM.txt").write_text(confirmation_messages(Window("", "", ""))[0]["content"], encoding="utf-8")


def held_out_stage1(data_dir: Path, rows: list[dict]):
    """Stage 1 fitted on every labelled window outside ``rows``' repositories (thresholds chosen there too)."""
    from ichor import detect, detect_fit, detect_model

    held = {repository(r) for r in rows}
    files = [data_dir / name for name in ("corrections-dev.jsonl", "corrections-more.jsonl")]
    train = [r for r in detect_fit.load_rows(*(f for f in files if f.is_file())) if repository(r) not in held]
    path = Path(tempfile.mkdtemp(prefix="stage2-")) / "detector.json"
    written = detect_fit.load_rows(*sorted((Path(__file__).resolve().parents[1] / "data/written").glob("s*.jsonl")))
    detect_model.dump(detect_fit.fit(train, written_rows=written), path)

    def run(row: dict, threshold: str) -> bool:
        w = window(row)
        found = detect.detect(w.prev_user, w.prev_assistant, w.user, w.assistant, threshold=threshold, model_path=path)
        return found.is_correction

    return run, len(train)


def nested_cv_stage1(cv_json: Path):
    """Stage 1 as the nested grouped CV decided each window (``ichor.detect_cv --json FILE``): every decision
    made by a model and thresholds fitted without the window's repository."""
    held = json.loads(cv_json.read_text(encoding="utf-8"))["held_out"]

    def run(row: dict, threshold: str) -> bool:
        return bool(held[row["id"]][threshold])

    return run


def shipped_stage1(row: dict, threshold: str) -> bool:
    return stage1(window(row), threshold).is_correction


def slice_of(row: dict) -> str:
    """corrections-more's slices: ids ``l5-`` are agent transcripts, ``l1-``–``l3-`` aider logs."""
    return "agent transcripts" if row["id"].startswith("l5-") else "aider logs"


def score_by_slice(rows: list[dict], answers: dict[str, str], stage1_fn=shipped_stage1) -> dict[str, dict]:
    """``score`` on every window, then on each slice."""
    report = {"all": score(rows, answers, stage1_fn)}
    for name in sorted({slice_of(r) for r in rows}):
        report[name] = score([r for r in rows if slice_of(r) == name], answers, stage1_fn)
    return report


def score(rows: list[dict], answers: dict[str, str], stage1_fn=shipped_stage1) -> dict:
    gold, first, candidates, alone, both = [], [], [], [], []
    for row in rows:
        found = parse_confirmation(answers[row["id"]])
        candidate, standalone = stage1_fn(row, "candidate"), stage1_fn(row, "standalone")
        gold.append(row["kind"] != "none")
        first.append(standalone)
        candidates.append(candidate)
        alone.append(bool(found and found.is_correction))
        # as in ichor.confirm: an answer that can't be read falls back to stage 1's standalone decision
        both.append(candidate and (found.is_correction if found else standalone))
    return {
        "n": len(rows),
        "repositories": len({repository(r) for r in rows}),
        "positives": sum(gold),
        "reached stage 2": _ratio(sum(candidates), len(rows)),
        "stage1 standalone": _pr(gold, first),
        "stage1 candidate": _pr(gold, candidates),
        "stage2 alone": _pr(gold, alone),
        "stage1 candidate and stage2": _pr(gold, both),
    }


def _pr(gold: list[bool], said: list[bool]) -> dict:
    tp = sum(g and s for g, s in zip(gold, said, strict=True))
    return {"precision": _ratio(tp, sum(said)), "recall": _ratio(tp, sum(gold))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("sample", help="write the prompts of the sampled windows to FOLDER")
    p.add_argument("folder", type=Path)
    p = sub.add_parser("score", help="score bench/stage2_answers.jsonl against the labels")
    for p in sub.choices.values():
        p.add_argument("--n", type=int, default=250)
        p.add_argument("--sample", type=int, default=1, help="which sample: 2 is the repositories after sample 1's")
        p.add_argument("--data", type=Path, default=DATA, help="corrections-more.jsonl (default %(default)s)")
    sub.choices["score"].add_argument(
        "--cv",
        type=Path,
        help="stage 1 as decided by `python -m ichor.detect_cv … --json FILE` (default: one model "
        "fitted on every window outside the sampled repositories)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.exit(2, f"stage2_by_hand: {args.data} is missing (the shared data is not here)\n")
    rows = sample(load(args.data), args.n, number=args.sample)
    if not rows:
        parser.exit(2, f"stage2_by_hand: no sample {args.sample} of {args.n} windows in {args.data}\n")
    if args.cmd == "sample":
        write_prompts(rows, args.folder)
        print(f"{len(rows)} windows from {len({repository(r) for r in rows})} repositories -> {args.folder}")
        return 0
    answers = load_answers(ANSWERS)
    missing = [r["id"] for r in rows if r["id"] not in answers]
    if missing:
        parser.exit(
            2, f"stage2_by_hand: {len(missing)} sampled windows have no answer in {ANSWERS} (first: {missing[0]})\n"
        )
    if args.cv:
        stage1_fn = nested_cv_stage1(args.cv)
        print(f"stage 1: the nested grouped CV's held-out decisions in {args.cv}")
    else:
        stage1_fn, trained = held_out_stage1(args.data.parent, rows)
        print(f"stage 1 fitted on the other {trained} windows")
    for part, report in score_by_slice(rows, answers, stage1_fn).items():
        print(
            f"\n{part}: n {report['n']} windows, {report['repositories']} repositories, {report['positives']} positive"
        )
        print(f"reached stage 2: {_cell(report['reached stage 2'])}")
        for name in ("stage1 standalone", "stage1 candidate", "stage2 alone", "stage1 candidate and stage2"):
            block = report[name]
            print(f"{name:<30} P {_cell(block['precision'])}   R {_cell(block['recall'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
