"""Stage `audit`: re-scan every kept pair with the scrubber before anything is exported.

* A secret of a known format (``ichor.scrub.find_leaks``) stops the pipeline with exit status 1,
  naming the pair's uid and the kind of secret, never the secret, unless ``audit.fail_on_leak`` is false;
  then it is repaired by scrubbing like everything else.
* Every text is scrubbed again (idempotent on already-scrubbed text); what was removed is counted.
* Exact duplicates and pairs whose accepted answer equals the rejected one are dropped.

When the plugin's pair store is visible (``$HERMES_HOME/plugin-data/ichor/ichor.db``), a file whose pair
that store no longer has (discarded, forgotten, or made pending again) is dropped and counted; files of
pairs the store never held (another profile's) are left to the other checks.

Reads ``data.pairs_dir`` (falling back to ``data.sample_dir`` while it holds no pairs), writes
``data/audited/pairs.jsonl`` and ``metrics/audit.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.common import PipelineError, parse_config, run, section, write_json

# The record fields that carry user or model text; the rest are ids, enums and timestamps.
TEXT_FIELDS = ("user_said", "label", "prompt", "rejected", "accepted")


@dataclass
class AuditConfig:
    pairs_dir: str = field(default="data/pairs", metadata={"help": "the versioned data directory"})
    sample_dir: str = field(default="data/sample", metadata={"help": "used when pairs_dir holds no pairs"})
    fail_on_leak: bool = field(default=True, metadata={"help": "exit 1 if a known-format secret is found"})
    out: str = field(default="data/audited/pairs.jsonl", metadata={"help": "the audited records"})
    metrics: str = field(default="metrics/audit.json", metadata={"help": "where the counts go"})

    @classmethod
    def from_params(cls, params: dict) -> AuditConfig:
        data, audit = section(params, "data"), section(params, "audit")
        return cls(
            pairs_dir=data.get("pairs_dir", cls.pairs_dir),
            sample_dir=data.get("sample_dir", cls.sample_dir),
            fail_on_leak=bool(audit.get("fail_on_leak", True)),
        )


class LeakError(PipelineError):
    def __init__(self, uid: str, kinds: dict[str, int]):
        names = ", ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in sorted(kinds.items()))
        super().__init__(
            f"pair {uid} would export a secret ({names}); discard or fix it, "
            "or set audit.fail_on_leak: false to redact it",
            code=1,
        )


def leaks_in(record: dict) -> dict[str, int]:
    """Known-format secrets in the record's text fields, by kind."""
    from ichor.scrub import find_leaks, merge_counts, string_leaves

    found: dict[str, int] = {}
    for name in TEXT_FIELDS:
        for text in string_leaves(record.get(name)):
            found = merge_counts(found, find_leaks(text))
    return {kind: n for kind, n in found.items() if n}


def scrub_record(record: dict) -> tuple[dict, dict[str, int]]:
    """The record with every text field scrubbed, and what was removed."""
    from ichor.scrub import scrub_messages

    texts = {name: record.get(name) for name in TEXT_FIELDS}
    cleaned, removed = scrub_messages(texts)
    return {**record, **cleaned}, {kind: n for kind, n in removed.items() if n}


def content_key(record: dict) -> str:
    return json.dumps([record["prompt"], record["rejected"], record["accepted"]], sort_keys=True, ensure_ascii=False)


def is_identical(record: dict) -> bool:
    return record["accepted"].strip() == record["rejected"].strip()


def audit_records(records: Iterable[dict], fail_on_leak: bool = True) -> tuple[list[dict], dict]:
    """Audit ``records``; returns the records to export and the counts for ``metrics/audit.json``."""
    from ichor.scrub import merge_counts

    kept: list[dict] = []
    seen: set[str] = set()
    stats = {"pairs_in": 0, "pairs_out": 0, "leaks_found": 0, "duplicates": 0, "identical": 0, "redactions": {}}
    for record in records:
        stats["pairs_in"] += 1
        leaks = leaks_in(record)
        if leaks:
            if fail_on_leak:
                raise LeakError(record["uid"], leaks)
            stats["leaks_found"] += sum(leaks.values())
        record, removed = scrub_record(record)
        stats["redactions"] = merge_counts(stats["redactions"], removed)
        if is_identical(record):
            stats["identical"] += 1
            continue
        key = content_key(record)
        if key in seen:
            stats["duplicates"] += 1
            continue
        seen.add(key)
        kept.append(record)
    stats["pairs_out"] = len(kept)
    stats["redactions"] = dict(sorted(stats["redactions"].items()))
    return kept, stats


def without_forgotten(records: Iterable[dict], store_file: Path, stats: dict, batch: int = 500) -> Iterator[dict]:
    """``records`` less those whose pair the store at ``store_file`` no longer has; counts them in ``stats``.

    The store is opened read-only; when it can't be seen, nothing is dropped and ``stats`` says so.
    """
    from ichor.store import Store, StoreError

    stats["dropped_not_in_store"] = 0
    try:
        store = Store(store_file, read_only=True)
    except (StoreError, OSError) as exc:
        stats["store"] = f"not checked: {exc}"
        yield from records
        return
    stats["store"] = str(store_file)
    with store:
        pending: list[dict] = []
        for record in [*records, None]:
            if record is not None:
                pending.append(record)
            if pending and (record is None or len(pending) >= batch):
                states = store.export_states(r["uid"] for r in pending)
                for held in pending:
                    if states.get(held["uid"]) in ("pending", "forgotten"):
                        stats["dropped_not_in_store"] += 1
                    else:
                        yield held
                pending = []


def _has_pairs(folder: Path) -> bool:
    return folder.is_dir() and any(p.is_file() and not p.name.startswith(".") for p in folder.rglob("*.jsonl"))


def pick_source(config: AuditConfig) -> tuple[Path, str]:
    pairs = Path(config.pairs_dir)
    if _has_pairs(pairs):
        return pairs, "pairs"
    sample = Path(config.sample_dir)
    if not _has_pairs(sample):
        raise PipelineError(f"no pairs in {pairs} and no sample pairs in {sample}")
    return sample, "sample"


def write_records(records: list[dict], out: str | Path) -> None:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def audit(config: AuditConfig) -> dict:
    from ichor.export import load_records
    from ichor.paths import db_path

    source, source_kind = pick_source(config)
    store_stats: dict = {}
    records = without_forgotten(load_records(source), db_path(), store_stats)
    kept, stats = audit_records(records, config.fail_on_leak)
    write_records(kept, config.out)
    stats.update(store_stats, source=source_kind)
    write_json(config.metrics, stats)
    print(
        f"audit: {stats['pairs_in']} pairs from {source} ({source_kind}) → {stats['pairs_out']} kept; "
        f"{stats['leaks_found']} leaks, {stats['duplicates']} duplicates, {stats['identical']} identical; "
        f"{stats['dropped_not_in_store']} dropped as no longer in the pair store ({stats['store']})"
    )
    return stats


def main(argv: list[str] | None = None) -> int:
    config = parse_config(AuditConfig, argv, __doc__.splitlines()[0])
    return run(lambda: audit(config))


if __name__ == "__main__":
    raise SystemExit(main())
