"""Stage `audit`: re-scan every kept pair with the scrubber before anything is exported.

* A secret of a known format (``ichor.scrub.find_leaks``) stops the pipeline with exit status 1,
  naming the pair's uid and the kind of secret, never the secret, unless ``audit.fail_on_leak`` is false;
  then it is repaired by scrubbing like everything else.
* Every text is scrubbed again (idempotent on already-scrubbed text); what was removed is counted.
* Exact duplicates and pairs whose accepted answer equals the rejected one are dropped.

Reads the user's pairs and/or the bundled samples as ``data.include_samples`` says, prints which it used
(and a warning below ``data.min_pairs``), and streams ``--out`` one record at a time (only a digest per
record is kept, for duplicates), writing the counts and the data version to ``--metrics``.

When the plugin's pair store is visible (``$HERMES_HOME/plugin-data/ichor/ichor.db``), a file whose pair
that store no longer has (discarded, forgotten, or made pending again) is dropped and counted; files of
pairs the store never held (another profile's) are left to the other checks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pipelines.common import PipelineError, config_from, params_of, path_args, run, write_json

# The record fields that carry user or model text; the rest are ids, enums and timestamps.
TEXT_FIELDS = ("user_said", "label", "prompt", "rejected", "accepted")
INCLUDE_SAMPLES = ("auto", "always", "never")


@dataclass
class DataParams:
    include_samples: str
    min_pairs: int

    def __post_init__(self):
        if self.include_samples not in INCLUDE_SAMPLES:
            raise PipelineError(f"params.yaml data.include_samples: one of {', '.join(INCLUDE_SAMPLES)}")


@dataclass
class AuditParams:
    fail_on_leak: bool


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


def content_digest(record: dict) -> str:
    text = json.dumps([record["prompt"], record["rejected"], record["accepted"]], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_identical(record: dict) -> bool:
    return record["accepted"].strip() == record["rejected"].strip()


def audit_records(records: Iterable[dict], stats: dict, fail_on_leak: bool = True) -> Iterator[dict]:
    """Yield the records to export, audited, one at a time; ``stats`` is filled in as they pass."""
    from ichor.scrub import merge_counts

    seen: set[str] = set()
    stats.update(pairs_in=0, pairs_out=0, leaks_found=0, duplicates=0, identical=0, redactions={})
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
        digest = content_digest(record)
        if digest in seen:
            stats["duplicates"] += 1
            continue
        seen.add(digest)
        stats["pairs_out"] += 1
        yield record
    stats["redactions"] = dict(sorted(stats["redactions"].items()))


def store_check_line(stats: dict) -> str:
    """What the audit says about the pair store: how many it dropped, or why it could not look."""
    if stats["store"].startswith("not checked"):
        return f"kept pairs were {stats['store']}"
    return f"{stats['dropped_not_in_store']} dropped as no longer in the pair store ({stats['store']})"


def without_forgotten(records: Iterable[dict], store_file: Path, stats: dict, batch: int = 500) -> Iterator[dict]:
    """``records`` less those whose pair the store at ``store_file`` no longer has; counts them in ``stats``.

    The store is opened read-only; when it can't be seen, nothing is dropped and ``stats`` says so.
    """
    from ichor.store import Store, StoreError

    stats["dropped_not_in_store"] = 0
    if not Path(store_file).exists():
        stats["store"] = f"not checked: no pair store at {store_file}"
        yield from records
        return
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


def has_pairs(folder: Path) -> bool:
    return folder.is_dir() and any(p.is_file() and not p.name.startswith(".") for p in folder.rglob("*.jsonl"))


def pick_sources(pairs: Path, samples: Path, include_samples: str) -> list[tuple[Path, str]]:
    """The folders to read, by what ``data.include_samples`` says and what exists."""
    chosen = []
    if has_pairs(pairs):
        chosen.append((pairs, "pairs"))
    if include_samples == "always" or (include_samples == "auto" and not chosen):
        if has_pairs(samples):
            chosen.append((samples, "sample"))
    if not chosen:
        raise PipelineError(f"no pairs in {pairs}" + ("" if include_samples == "never" else f" nor in {samples}"))
    return chosen


def data_version(folder: Path) -> str | None:
    """The md5 ``dvc add`` recorded for ``folder`` (``folder.dvc``), when it is versioned that way."""
    import yaml

    dvc_file = folder.with_name(folder.name + ".dvc")
    if not dvc_file.is_file():
        return None
    outs = (yaml.safe_load(dvc_file.read_text(encoding="utf-8")) or {}).get("outs") or [{}]
    return outs[0].get("md5")


def write_records(records: Iterable[dict], out: str | Path) -> None:
    """Stream ``records`` to ``out``; a failure part-way leaves no file behind."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def audit(paths, params: dict) -> dict:
    from itertools import chain

    from ichor.export import load_records
    from ichor.paths import db_path

    data, settings = config_from(params, "data", DataParams), config_from(params, "audit", AuditParams)
    sources = pick_sources(Path(paths.pairs), Path(paths.samples), data.include_samples)
    stats: dict = {}
    store_stats: dict = {}
    loaded = chain.from_iterable(load_records(folder) for folder, _ in sources)
    records = without_forgotten(loaded, db_path(), store_stats)
    write_records(audit_records(records, stats, settings.fail_on_leak), paths.out)
    stats.update(store_stats, source="+".join(kind for _, kind in sources))
    stats["data_version"] = data_version(Path(paths.pairs))
    write_json(paths.metrics, stats)
    used = " and ".join(f"{kind} ({folder})" for folder, kind in sources)
    print(
        f"audit: {stats['pairs_in']} pairs from {used} → {stats['pairs_out']} kept; "
        f"{stats['leaks_found']} leaks, {stats['duplicates']} duplicates, {stats['identical']} identical; "
        + store_check_line(stats)
    )
    if stats["pairs_out"] < data.min_pairs:
        print(
            f"audit: warning: {stats['pairs_out']} pairs is below data.min_pairs ({data.min_pairs}); "
            "the adapter and its figures will mean little"
        )
    return stats


PATHS = {
    "pairs": "the versioned pairs folder (the plugin's data dir)",
    "samples": "the bundled sample pairs",
    "out": "the audited records (JSONL)",
    "metrics": "counts and the data version (JSON)",
}


def main(argv: list[str] | None = None) -> int:
    args = path_args(argv, __doc__.splitlines()[0], PATHS)
    return run(lambda: audit(args, params_of(args)))


if __name__ == "__main__":
    raise SystemExit(main())
