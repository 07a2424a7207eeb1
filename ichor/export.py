"""Turn stored pair records into training files. Pure, example-level functions in the style of
``trl.data_utils``, plus one streaming writer that the `export` DVC stage, ``ichor export`` and
``/ichor export`` all share.

A *record* is what the store writes into the data directory (``Pair.to_record()``)::

    {"uid": "9f…", "kind": "correction", "label": "wrong package manager", "user_said": "no, use pnpm",
     "prompt": [{"role": "user", "content": "install deps"}], "rejected": "npm install",
     "accepted": "pnpm install", "platform": "cli", "scrubbed": {}, "created_at": "2026-11-30T15:00:00Z"}
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


class ExportError(Exception):
    """Bad input to an export, with the file and line at fault."""


REQUIRED_FIELDS = ("uid", "prompt", "rejected", "accepted")
# "eval" is the test split: nothing is chosen on it. "validation" is what choices are made on.
SPLITS = ("train", "validation", "eval")

_APOSTROPHE = "['\u2019]"
# "You're right, …", "Sorry about that. …", "Good catch! …": the apology says nothing about the
# content, and left in it teaches the model to apologise rather than to answer. An opener counts only
# when punctuation (or the end) follows it, so "Good call sites…" and "You are right that…" stay.
_ACK_OPENER = re.compile(
    rf"""\A\s*(?:(?:ah|oh)[ \t]*,?[ \t]*)?(?:
        (?:you{_APOSTROPHE}re|you\s+are)\s+(?:absolutely\s+|totally\s+|quite\s+|completely\s+)?(?:right|correct)
      | (?:my\s+)?apologies
      | (?:i{_APOSTROPHE}m\s+|i\s+am\s+)?sorry(?:\s+about\s+that|\s+for\s+the\s+(?:confusion|mistake|error|oversight))?
      | good\s+(?:catch|point|call|eye)
      | thanks\s+for\s+(?:catching|pointing|the\s+correction)[^.!\n]{{0,60}}
      | (?:ah|oh)[ \t]*,?[ \t]*(?:yes|right|i\s+see)
      | got\s+it | fair\s+point | oops
      | my\s+(?:bad|mistake)
    )\b(?:[ \t]*[,.!:;\u2014\u2013]+|[ \t]+-+(?=\s)|[ \t]*\Z)[ \t]*""",
    re.IGNORECASE | re.VERBOSE,
)
_SECOND_ACK = re.compile(
    r"\A\s*(?:i\s+(?:apologi[sz]e|misunderstood|misread|was\s+wrong|made\s+a\s+mistake)\b[^.!\n]{0,120}[.!]|"
    r"(?:that|this)\s+was\s+(?:my\s+)?(?:mistake|wrong|an\s+error)\b[^.!\n]{0,80}[.!])\s*",
    re.IGNORECASE,
)
# Words too common to say that a correction added information.
_STOPWORDS = frozenset(
    """a an and are as at be but by can do does don't for from has have i if in instead is it its just like me my
    no not of on or please should so that the then this to try use used using want was we were what when which
    why will with wrong you your yes actually again also here there need now only one""".split()
)
_TERM = re.compile(r"[A-Za-z0-9_./@:+-]*[A-Za-z0-9_]")


# How a correction that supplies information the prompt lacked is trained: "turns" puts the rejected
# answer and the correction in the prompt (the accepted answer answers exactly that); "preference"
# pairs it on the original prompt as if the model could have known.
FORMS_FOR_INFORMATION = ("turns", "preference")


@dataclass
class ExportConfig:
    """How records become training rows. The export stage reads the same fields from params.yaml's
    ``export:`` section, and a test keeps the two equal, so ``ichor export`` and ``dvc repro`` agree."""

    eval_fraction: float = 0.2
    validation_fraction: float = 0.15
    seed: int = 0
    strip_acknowledgement: bool = True
    near_duplicate_jaccard: float = 0.7
    information_form: str = "turns"

    def __post_init__(self):
        if self.information_form not in FORMS_FOR_INFORMATION:
            raise ExportError(f"information_form must be one of {', '.join(FORMS_FOR_INFORMATION)}")
        if not 0 <= self.eval_fraction + self.validation_fraction < 1:
            raise ExportError("eval_fraction + validation_fraction must be in [0, 1)")


def strip_acknowledgement(text: str) -> str:
    """Drop an acknowledgement opener from an accepted answer, keeping the content.

    >>> strip_acknowledgement("You\u2019re right, sorry! Use `pnpm install` instead.")
    'Use `pnpm install` instead.'
    >>> strip_acknowledgement("Good call sites are listed below.")
    'Good call sites are listed below.'
    """
    out = text
    for _ in range(4):
        stripped = _SECOND_ACK.sub("", _ACK_OPENER.sub("", out, count=1), count=1)
        if stripped == out:
            break
        out = stripped
    out = out.lstrip()
    # No re-capitalising: the first word is often a command or identifier ("pnpm install").
    return out or text


def _terms(text: str) -> set[str]:
    return {t.lower() for t in _TERM.findall(text or "")} - _STOPWORDS


def supplies_information(record: dict) -> bool:
    """True when the user's correction names something (a tool, flag, file, version, word) that the accepted
    answer uses and that neither the prompt nor the rejected answer contained: the model could not have known it.

    >>> supplies_information({"user_said": "no, this repo uses pnpm", "accepted": "pnpm install",
    ...     "rejected": "npm install", "prompt": [{"role": "user", "content": "install deps"}]})
    True
    """
    said = _terms(record.get("user_said") or "")
    if not said:
        return False
    seen = _terms(" ".join(m["content"] for m in record["prompt"]) + " " + record["rejected"])
    return bool((said & _terms(record["accepted"])) - seen)


def form_of(record: dict, information_form: str = "turns") -> str:
    """Which DPO form a record takes: ``preference`` (prompt, accepted ≻ rejected), ``turns`` (the prompt
    carries the rejected answer and the correction) or ``undo`` (paired on the message the accepted answer
    answers)."""
    kind = record.get("kind")
    if kind == "undo" and (record.get("user_said") or "").strip():
        return "undo"
    if kind == "correction" and information_form == "turns" and supplies_information(record):
        return "turns"
    return "preference"


def dpo_prompt(record: dict, form: str) -> list[dict]:
    """The prompt messages the accepted answer actually answers, for the record's form."""
    prompt = [{"role": m["role"], "content": m["content"]} for m in record["prompt"]]
    if form == "turns":
        return [
            *prompt,
            {"role": "assistant", "content": record["rejected"]},
            {"role": "user", "content": record["user_said"]},
        ]
    if form == "undo":
        return [*prompt[:-1], {"role": "user", "content": record["user_said"]}]
    return prompt


def group_keys(record: dict) -> list[str]:
    """Keys that must share a split: the question itself, whatever its context (for an undo, also the new
    question the accepted answer answers); the conversation's opening
    exchange (first user message and first answer: a session proxy, since records carry no session id);
    and the session, when a record names one."""
    dialogue = [m for m in record["prompt"] if m["role"] != "system"]
    keys = [f"q:{_normal(dialogue[-1]['content'])}"]
    if record.get("kind") == "undo" and record.get("user_said"):
        keys.append(f"q:{_normal(record['user_said'])}")  # the question the accepted answer answers
    if len(dialogue) > 2:
        keys.append(f"open:{_normal(dialogue[0]['content'])}\x00{_normal(dialogue[1]['content'])}")
    if record.get("session"):
        keys.append(f"s:{record['session']}")
    return keys


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def split_of_group(group: str, config: ExportConfig) -> str:
    """Seeded assignment of a group key to a split."""
    digest = hashlib.sha256(f"{config.seed}\x00{group}".encode("utf-8", "surrogatepass")).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < config.eval_fraction:
        return "eval"
    if u < config.eval_fraction + config.validation_fraction:
        return "validation"
    return "train"


def split_records(records: list[dict], config: ExportConfig) -> list[str]:
    """One split per record; records linked by any shared group key (union-find) share a split."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for record in records:
        first, *rest = group_keys(record)
        for key in rest:
            a, b = find(first), find(key)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [split_of_group(find(group_keys(r)[0]), config) for r in records]


def shingles(text: str, n: int = 5) -> set[str]:
    """Character n-grams of the lower-cased, whitespace-normalised text."""
    flat = " ".join(text.lower().split())
    return {flat[i : i + n] for i in range(max(1, len(flat) - n + 1))}


def _dedup_text(record: dict) -> str:
    users = [m["content"] for m in record["prompt"] if m["role"] == "user"]
    return f"{users[-1]}\n{record['accepted']}"


def near_duplicates_of_train(records: list[dict], splits: list[str], threshold: float) -> set[int]:
    """Indexes of held-out records whose question+answer shingles have Jaccard ≥ ``threshold`` with some
    train record (an inverted index over shingles, so only records sharing a shingle are compared)."""
    index: dict[str, list[int]] = defaultdict(list)
    sets = [shingles(_dedup_text(r)) for r in records]
    for i, split in enumerate(splits):
        if split == "train":
            for gram in sets[i]:
                index[gram].append(i)
    found = set()
    for i, split in enumerate(splits):
        if split == "train":
            continue
        overlap = Counter(j for gram in sets[i] for j in index.get(gram, ()))
        if any(n / (len(sets[i]) + len(sets[j]) - n) >= threshold for j, n in overlap.items()):
            found.add(i)
    return found


def prompt_key(record: dict) -> str:
    """A stable text key of the prompt."""
    return json.dumps(record["prompt"], sort_keys=True, ensure_ascii=False)


def metadata_of(record: dict, split: str | None = None, form: str | None = None) -> dict:
    """What travels with a row: no platform, no session, nothing the user did not see on the card."""
    meta = {
        "uid": record["uid"],
        "kind": record.get("kind"),
        "label": record.get("label"),
        "user_said": record.get("user_said"),
        "created_at": record.get("created_at"),
        "form": form or form_of(record),
    }
    if split:
        meta["split"] = split
    return meta


def to_dpo_row(
    record: dict, strip_ack: bool = False, split: str | None = None, information_form: str = "turns"
) -> dict:
    """A TRL conversational preference row with an explicit prompt, in the record's form.

    >>> row = to_dpo_row({"uid": "a1", "kind": "retry", "prompt": [{"role": "user", "content": "install deps"}],
    ...                   "rejected": "npm install", "accepted": "You're right. pnpm install"}, strip_ack=True)
    >>> row["prompt"], row["chosen"], row["rejected"]
    ([{'role': 'user', 'content': 'install deps'}], [{'role': 'assistant', 'content': 'pnpm install'}], \
[{'role': 'assistant', 'content': 'npm install'}])
    """
    form = form_of(record, information_form)
    accepted = strip_acknowledgement(record["accepted"]) if strip_ack else record["accepted"]
    return {
        "prompt": dpo_prompt(record, form),
        "chosen": [{"role": "assistant", "content": accepted}],
        "rejected": [{"role": "assistant", "content": record["rejected"]}],
        "metadata": metadata_of(record, split, form),
    }


def to_atropos_row(dpo_row: dict) -> dict:
    """A row of IchorEnv's ``pairs.jsonl``: the DPO row's prompt messages and both answers as plain text."""
    meta = dpo_row["metadata"]
    return {
        "uid": meta["uid"],
        "messages": dpo_row["prompt"],
        "accepted": dpo_row["chosen"][0]["content"],
        "rejected": dpo_row["rejected"][0]["content"],
        "kind": meta.get("kind"),
        "label": meta.get("label"),
        "user_said": meta.get("user_said"),
        "split": meta.get("split"),
    }


def validate_record(record, where: str) -> dict:
    """Check a record's shape; raise ExportError naming ``where`` otherwise."""
    if not isinstance(record, dict):
        raise ExportError(f"{where}: expected a JSON object")
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise ExportError(f"{where}: missing field(s) {', '.join(missing)}")
    prompt = record["prompt"]
    if (
        not isinstance(prompt, list)
        or not prompt
        or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in prompt
        )
    ):
        raise ExportError(f"{where}: prompt must be a non-empty list of {{role, content}} messages")
    if prompt[-1]["role"] != "user":
        raise ExportError(f"{where}: the prompt must end with the user's message")
    for key in ("rejected", "accepted"):
        if not isinstance(record[key], str):
            raise ExportError(f"{where}: {key} must be a string")
    if not isinstance(record["uid"], str) or not record["uid"]:
        raise ExportError(f"{where}: uid must be a non-empty string")
    return record


def _jsonl_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        return sorted(p for p in source.rglob("*.jsonl") if not p.name.startswith("."))
    raise ExportError(f"{source}: no such file or folder")


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    lineno = 0
    with open(path, encoding="utf-8") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                yield lineno, line
        except UnicodeDecodeError:
            raise ExportError(f"{path}: not UTF-8 text (after line {lineno})") from None


def load_records(source: str | os.PathLike) -> Iterator[dict]:
    """Stream validated records from a ``.jsonl`` file or a folder of them (recursively, sorted)."""
    for path in _jsonl_files(Path(source)):
        for lineno, line in _numbered_lines(path):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExportError(f"{where}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise ExportError(f"{where}: JSON nested too deeply") from None
            yield validate_record(record, where)


def _private_writer(path: Path):
    """A text file only its owner can read, never written through a symbolic link."""
    from .paths import open_private

    return open_private(path)


class _Writers:
    """Open-once JSONL writers for one export folder."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        (out_dir / "atropos").mkdir(parents=True, exist_ok=True)
        self.files = {
            "dpo": _private_writer(out_dir / "dpo.jsonl"),
            **{split: _private_writer(out_dir / f"dpo_{split}.jsonl") for split in SPLITS},
            "atropos": _private_writer(out_dir / "atropos" / "pairs.jsonl"),
        }

    def write(self, name: str, row: dict) -> None:
        self.files[name].write(json.dumps(row, ensure_ascii=False) + "\n")

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()


def write_export(records: Iterable[dict], out_dir: str | os.PathLike, config: ExportConfig | None = None) -> dict:
    """Write ``records`` into ``out_dir``: ``dpo.jsonl`` (every kept row, ``metadata.split`` set),
    ``dpo_train.jsonl``, ``dpo_validation.jsonl``, ``dpo_eval.jsonl`` (the test split) and
    ``atropos/pairs.jsonl``. Returns counts, including what was changed or dropped and why.

    The split needs every record's group keys, so records are held in memory (a few hundred bytes of
    keys each; at 100k pairs this is tens of MB). Rows are written one at a time.
    """
    config = config or ExportConfig()
    records = list(records)
    splits = split_records(records, config)
    near = near_duplicates_of_train(records, splits, config.near_duplicate_jaccard)
    writers = _Writers(Path(out_dir))
    counts: dict = {"pairs_in": len(records), "pairs": 0, **dict.fromkeys(SPLITS, 0)}
    counts.update(near_duplicates_dropped=len(near), acknowledgements_stripped=0, forms={}, kinds={}, labels={})
    try:
        for i, (record, split) in enumerate(zip(records, splits, strict=True)):
            if i in near:
                continue
            row = to_dpo_row(record, config.strip_acknowledgement, split, config.information_form)
            counts["acknowledgements_stripped"] += row["chosen"][0]["content"] != record["accepted"]
            for name in ("dpo", split, "atropos"):
                writers.write(name, to_atropos_row(row) if name == "atropos" else row)
            counts["pairs"] += 1
            counts[split] += 1
            _bump(counts["forms"], row["metadata"]["form"])
            _bump(counts["kinds"], record.get("kind") or "unknown")
            _bump(counts["labels"], record.get("label") or "unlabelled")
    finally:
        writers.close()
    return counts


def _bump(counter: dict, key: str) -> None:
    counter[key] = counter.get(key, 0) + 1
