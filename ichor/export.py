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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


class ExportError(Exception):
    """Bad input to an export, with the file and line at fault."""


REQUIRED_FIELDS = ("uid", "prompt", "rejected", "accepted")
SPLITS = ("train", "eval")

# "You're right, …", "Sorry about that. …", "Good catch! …": the apology says nothing about the
# content, and left in it teaches the model to apologise rather than to answer.
_ACK_OPENER = re.compile(
    r"""\A\s*(?:
        (?:you(?:'re|\s+are)\s+(?:absolutely\s+|totally\s+|quite\s+)?(?:right|correct))
      | (?:(?:my\s+)?apologies)
      | (?:(?:i'?m\s+|i\s+am\s+)?sorry(?:\s+about\s+that|\s+for\s+the\s+(?:confusion|mistake|error|oversight))?)
      | (?:good\s+(?:catch|point|call|eye))
      | (?:thanks\s+for\s+(?:catching|pointing|the\s+correction)[^.!\n]{0,60})
      | (?:ah,?\s+(?:yes|right|i\s+see))
      | (?:oops)
      | (?:my\s+(?:bad|mistake))
    )[ \t]*[,.!:;—–-]*[ \t]*""",
    re.IGNORECASE | re.VERBOSE,
)
_SECOND_ACK = re.compile(
    r"\A\s*(?:i\s+(?:apologi[sz]e|misunderstood|misread|was\s+wrong|made\s+a\s+mistake)[^.!\n]{0,120}[.!]|"
    r"(?:that|this)\s+was\s+(?:my\s+)?(?:mistake|wrong|an\s+error)[^.!\n]{0,80}[.!])\s*",
    re.IGNORECASE,
)


@dataclass
class ExportConfig:
    """How records become training rows."""

    eval_fraction: float = 0.25
    seed: int = 0
    strip_acknowledgement: bool = False


def strip_acknowledgement(text: str) -> str:
    """Drop an acknowledgement opener from an accepted answer, keeping the content.

    >>> strip_acknowledgement("You're right, sorry! Use `pnpm install` instead.")
    'Use `pnpm install` instead.'
    >>> strip_acknowledgement("Right-click the file.")
    'Right-click the file.'
    """
    out = text
    for _ in range(3):
        stripped = _SECOND_ACK.sub("", _ACK_OPENER.sub("", out, count=1), count=1)
        if stripped == out:
            break
        out = stripped
    out = out.lstrip()
    if not out:
        return text
    return out[0].upper() + out[1:] if out[0].islower() and out != text else out


def prompt_key(record: dict) -> str:
    """A stable text key of the prompt: pairs with the same prompt always share a split."""
    return json.dumps(record["prompt"], sort_keys=True, ensure_ascii=False)


def split_of(record: dict, eval_fraction: float, seed: int) -> str:
    """Seeded, prompt-disjoint assignment of a record to "train" or "eval"."""
    digest = hashlib.sha256(f"{seed}\x00{prompt_key(record)}".encode("utf-8", "surrogatepass")).digest()
    return "eval" if int.from_bytes(digest[:8], "big") / 2**64 < eval_fraction else "train"


def metadata_of(record: dict, split: str | None = None) -> dict:
    """What travels with a row: no platform, no session, nothing the user did not see on the card."""
    meta = {
        "uid": record["uid"],
        "kind": record.get("kind"),
        "label": record.get("label"),
        "user_said": record.get("user_said"),
        "created_at": record.get("created_at"),
    }
    if split:
        meta["split"] = split
    return meta


def to_dpo_row(record: dict, strip_ack: bool = False, split: str | None = None) -> dict:
    """A TRL conversational preference row with an explicit prompt.

    >>> row = to_dpo_row({"uid": "a1", "prompt": [{"role": "user", "content": "install deps"}],
    ...                   "rejected": "npm install", "accepted": "You're right. pnpm install"}, strip_ack=True)
    >>> row["prompt"], row["chosen"], row["rejected"]
    ([{'role': 'user', 'content': 'install deps'}], [{'role': 'assistant', 'content': 'Pnpm install'}], \
[{'role': 'assistant', 'content': 'npm install'}])
    """
    accepted = strip_acknowledgement(record["accepted"]) if strip_ack else record["accepted"]
    return {
        "prompt": [{"role": m["role"], "content": m["content"]} for m in record["prompt"]],
        "chosen": [{"role": "assistant", "content": accepted}],
        "rejected": [{"role": "assistant", "content": record["rejected"]}],
        "metadata": metadata_of(record, split),
    }


def to_atropos_row(record: dict, strip_ack: bool = False, split: str | None = None) -> dict:
    """A row of IchorEnv's ``pairs.jsonl``: the prompt messages and both answers as plain text."""
    accepted = strip_acknowledgement(record["accepted"]) if strip_ack else record["accepted"]
    return {
        "uid": record["uid"],
        "messages": [{"role": m["role"], "content": m["content"]} for m in record["prompt"]],
        "accepted": accepted,
        "rejected": record["rejected"],
        "kind": record.get("kind"),
        "label": record.get("label"),
        "split": split,
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
            "train": _private_writer(out_dir / "dpo_train.jsonl"),
            "eval": _private_writer(out_dir / "dpo_eval.jsonl"),
            "atropos": _private_writer(out_dir / "atropos" / "pairs.jsonl"),
        }

    def write(self, name: str, row: dict) -> None:
        self.files[name].write(json.dumps(row, ensure_ascii=False) + "\n")

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()


def write_export(records: Iterable[dict], out_dir: str | os.PathLike, config: ExportConfig | None = None) -> dict:
    """Stream ``records`` into ``out_dir``: ``dpo.jsonl`` (all rows, ``metadata.split`` set),
    ``dpo_train.jsonl``, ``dpo_eval.jsonl`` and ``atropos/pairs.jsonl``. Returns counts.

    Memory stays flat: one row at a time; the split is a pure function of the prompt.
    """
    config = config or ExportConfig()
    out = Path(out_dir)
    writers = _Writers(out)
    counts = {"pairs": 0, "train": 0, "eval": 0, "kinds": {}, "labels": {}}
    try:
        for record in records:
            split = split_of(record, config.eval_fraction, config.seed)
            row = to_dpo_row(record, config.strip_acknowledgement, split)
            writers.write("dpo", row)
            writers.write(split, row)
            writers.write("atropos", to_atropos_row(record, config.strip_acknowledgement, split))
            counts["pairs"] += 1
            counts[split] += 1
            kind = record.get("kind") or "unknown"
            counts["kinds"][kind] = counts["kinds"].get(kind, 0) + 1
            label = record.get("label") or "unlabelled"
            counts["labels"][label] = counts["labels"].get(label, 0) + 1
    finally:
        writers.close()
    return counts
