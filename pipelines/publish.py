"""Stage `publish`: push the audited export to a Hugging Face dataset, tagged with its data version.

With ``hub.push: false`` (the default) it only writes ``metrics/publish.json`` saying so: no token
needed. With ``hub.push: true`` it commits each split of the export (``data/export/dpo_{split}.jsonl``)
byte for byte as ``data/{split}.jsonl``, plus a dataset card, to
``<token owner>/<hub.repo>`` (created ``hub.visibility``; an existing repository keeps its own, but a
public one is refused while ``hub.visibility`` is private unless ``--allow-public``), then tags that
commit ``data-<first 12 hex of the md5 DVC recorded for data/export in dvc.lock>``. So
``load_dataset(repo, revision=TAG)`` loads exactly the rows that trained this run's adapter. When the
workspace has a default DVC remote, the same data version is pushed there too (``dvc push data/export``).

The Hub calls go through ``ichor.hub.Hub``, the client ``ichor share`` uses: bounded in time, one line
per error, never the token. ``hub.visibility`` here governs ``publish`` only; ``ichor share`` follows
the plugin's own ``visibility`` setting.

``--dry-run DIR`` writes the would-be commit (files, card, tag name in ``commit.json``) to DIR and
touches neither the Hub nor the metrics.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ichor.export import SPLITS
from ichor.hub import Hub, HubError, PublicRepoRefused, one_line
from ichor.share import card_front_matter
from pipelines.common import PipelineError, parse_config, run, section, write_json

EXPORT_OUT = "data/export"
SPLIT_FILES = {split: f"dpo_{split}.jsonl" for split in SPLITS}
OWNED_PATHS = ("README.md", *(f"data/{split}.jsonl" for split in SPLITS))


@dataclass
class PublishConfig:
    push: bool = field(default=False, metadata={"help": "push to the Hub (hub.push); false writes the metric only"})
    repo: str = field(default="ichor-dpo", metadata={"help": "dataset name (token owner's namespace) or NS/NAME"})
    visibility: str = field(default="private", metadata={"help": "private | public, for a new repository"})
    allow_public: bool = field(
        default=False, metadata={"help": "push even to an existing public repository while visibility is private"}
    )
    token_env: str = field(default="HF_TOKEN", metadata={"help": "environment variable holding the token"})
    endpoint: str = field(default="", metadata={"help": "Hub URL; empty = $HF_ENDPOINT or huggingface.co"})
    export_dir: str = field(default=EXPORT_OUT, metadata={"help": "the export folder to publish"})
    lock: str = field(default="dvc.lock", metadata={"help": "where DVC recorded the export's md5"})
    license: str = field(default="cc-by-4.0", metadata={"help": "licence field of the dataset card"})
    dry_run: str = field(default="", metadata={"help": "write the would-be commit to this folder instead"})
    metrics: str = field(default="metrics/publish.json", metadata={"help": "where the outcome goes"})

    @classmethod
    def from_params(cls, params: dict) -> PublishConfig:
        hub = section(params, "hub")
        return cls(
            push=bool(hub.get("push", False)),
            repo=str(hub.get("repo") or cls.repo),
            visibility=str(hub.get("visibility") or cls.visibility),
            token_env=str(hub.get("token_env") or cls.token_env),
            license=str(hub.get("license") or cls.license),
        )


# ---- the data version ---------------------------------------------------------------------------


def _file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dvc_dir_md5(folder: str | os.PathLike) -> str:
    """The md5 DVC 3 records for a directory output: the md5 of the JSON list of
    ``{"md5", "relpath"}`` entries sorted by relpath (``json.dumps(..., sort_keys=True)``), plus ".dir"."""
    root = Path(folder)
    entries = [
        {"md5": _file_md5(p), "relpath": p.relative_to(root).as_posix()} for p in root.rglob("*") if p.is_file()
    ]
    entries.sort(key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode("utf-8")).hexdigest() + ".dir"


def locked_md5(lock: str | os.PathLike, out_path: str) -> str | None:
    """The md5 a stage in ``dvc.lock`` recorded for the output ``out_path``, if any."""
    import yaml

    file = Path(lock)
    if not file.exists():
        return None
    stages = (yaml.safe_load(file.read_text(encoding="utf-8")) or {}).get("stages") or {}
    for stage in stages.values():
        for out in stage.get("outs") or []:
            if Path(out.get("path", "")) == Path(out_path):
                return out.get("md5")
    return None


def data_version(config: PublishConfig) -> tuple[str, str]:
    """(tag, where it came from). The files are hashed the way DVC hashes them; when dvc.lock has an
    entry it must agree, or the tag would name data that did not train this run's adapter."""
    if not Path(config.export_dir).is_dir():
        raise PipelineError(f"{config.export_dir}: no such folder (run `dvc repro export` first)")
    actual = dvc_dir_md5(config.export_dir)
    recorded = locked_md5(config.lock, config.export_dir)
    tag = f"data-{actual[:12]}"
    if recorded is None:
        return tag, f"hashed {config.export_dir} as DVC does ({config.lock} has no entry for it yet)"
    if recorded != actual:
        raise PipelineError(
            f"{config.export_dir} changed since {config.lock} recorded it "
            f"(data-{recorded[:12]} there, {tag} on disk): run `dvc repro export` first"
        )
    return tag, f"{config.lock}: md5 of {config.export_dir}"


# ---- the commit ---------------------------------------------------------------------------------


def _rows(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def split_files(config: PublishConfig) -> dict[str, Path]:
    """The non-empty split files of the export, by split name."""
    files = {}
    for split, name in SPLIT_FILES.items():
        path = Path(config.export_dir) / name
        if not path.exists():
            raise PipelineError(f"{path}: missing (run `dvc repro export` first)")
        if _rows(path):
            files[split] = path
    if not files:
        raise PipelineError(f"{config.export_dir}: no rows to publish")
    return files


def dataset_card(repo_id: str, tag: str, splits: dict[str, int], license_id: str) -> str:
    counts = "".join(f"| {s} | {n} |\n" for s, n in splits.items())
    front = card_front_matter(license_id, "ichor DPO training data", {s: f"data/{s}.jsonl" for s in splits})
    return (
        front
        + f"""
# {repo_id}

The audited preference pairs one ichor pipeline run trained on: TRL conversational preference rows
(`prompt`, `chosen`, `rejected`, `metadata`), split train/eval by prompt so no prompt is in both.
Every text was scrubbed of secrets and personal data before it left the machine.

| split | rows |
|---|---|
{counts}
## Versions

Each push is tagged with its data version, `data-` and the first 12 hex digits of the md5 DVC
recorded for `data/export` in `dvc.lock`. This revision is **{tag}**:

```python
from datasets import load_dataset

pairs = load_dataset("{repo_id}", revision="{tag}")  # add token=... while the repository is private
```
"""
    )


def build_commit(config: PublishConfig, repo_id: str, tag: str) -> tuple[dict[str, bytes], dict[str, int]]:
    files = split_files(config)
    rows = {split: _rows(path) for split, path in files.items()}
    commit = {f"data/{split}.jsonl": path.read_bytes() for split, path in files.items()}
    commit["README.md"] = dataset_card(repo_id, tag, rows, config.license).encode("utf-8")
    return commit, rows


def write_dry_run(folder: str, files: dict[str, bytes], manifest: dict) -> None:
    out = Path(folder)
    if out.exists():
        shutil.rmtree(out)
    for path, data in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    write_json(out / "commit.json", manifest)


# ---- the Hub ------------------------------------------------------------------------------------


def open_hub(config: PublishConfig) -> Hub:
    token = os.environ.get(config.token_env, "").strip()
    if not token:
        raise PipelineError(
            f"hub.push is true but ${config.token_env} is empty: export {config.token_env}=hf_… "
            "(a token with write access), or set hub.push: false"
        )
    try:
        return Hub(token, config.token_env, config.endpoint or None)
    except HubError as exc:
        raise PipelineError(str(exc)) from None


def push_to_hub(config: PublishConfig, hub: Hub, tag: str) -> dict[str, Any]:
    """Create or check the repository and commit and tag the data, unless the tag is already there."""
    repo_id = hub.repo_id(config.repo)
    files, rows = build_commit(config, repo_id, tag)
    try:
        state = hub.ensure_repo(repo_id, config.visibility == "private", allow_public=config.allow_public)
    except PublicRepoRefused:
        raise PipelineError(
            f"{repo_id} is public on the Hub but hub.visibility is private: nothing was pushed "
            "(make it private on the Hub, or pass --allow-public)"
        ) from None
    result: dict[str, Any] = {
        "pushed": True,
        "repo": repo_id,
        "revision": None,
        "tag": tag,
        "rows": sum(rows.values()),
        "splits": rows,
        "private": state.private,
    }
    if state.private != (config.visibility == "private"):
        result["note"] = f"{repo_id} already existed as {'private' if state.private else 'public'}; left as it was"
    existing = hub.tag_target(repo_id, tag)
    if existing:
        result.update(pushed=False, revision=existing, reason=f"{tag} is already on the Hub: same data, not pushed")
        return result
    present = hub.files(repo_id)
    stale = [p for p in OWNED_PATHS if p in present and p not in files]
    oid = hub.commit(repo_id, files, f"ichor publish {tag}", delete=stale)
    hub.tag(repo_id, tag, oid, f"ichor data version {tag}")
    result["revision"] = oid
    return result


def push_to_dvc_remote(export_dir: str) -> dict | None:
    """Push the export's data version to the workspace's default DVC remote; None when there is none."""
    try:
        from dvc.exceptions import DvcException, NotDvcRepoError  # type: ignore[import-untyped]
        from dvc.repo import Repo  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        root = Repo.find_root(str(Path(export_dir).resolve().parent))
    except NotDvcRepoError:
        return None
    with Repo(root) as repo:
        remote = repo.config["core"].get("remote")
        if not remote:
            return None
        try:
            pushed = repo.push(targets=[str(Path(export_dir).resolve())])
        except DvcException as exc:
            raise PipelineError(
                f"dvc push of {export_dir} to remote {remote!r} failed: {one_line(str(exc))}"
            ) from None
    return {"remote": remote, "pushed": pushed}


def publish(config: PublishConfig) -> dict:
    if config.visibility not in ("private", "public"):
        raise PipelineError(f"hub.visibility must be private or public, not {config.visibility!r}")
    if not config.push and not config.dry_run:
        result: dict[str, Any] = {
            "pushed": False,
            "reason": "hub.push is false in params.yaml",
            "repo": config.repo,
            "revision": None,
            "tag": None,
            "rows": None,
        }
        write_json(config.metrics, result)
        print("publish: skipped (hub.push is false)")
        return result

    tag, source = data_version(config)
    if config.dry_run:
        repo_id = config.repo if "/" in config.repo else f"<token owner>/{config.repo}"
        files, rows = build_commit(config, repo_id, tag)
        manifest = {
            "repo": repo_id,
            "visibility": config.visibility,
            "tag": tag,
            "tag_source": source,
            "message": f"ichor publish {tag}",
            "rows": sum(rows.values()),
            "splits": rows,
            "files": [
                {"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in sorted(files.items())
            ],
        }
        write_dry_run(config.dry_run, files, manifest)
        print(f"publish: dry run, {manifest['rows']} rows tagged {tag} written to {config.dry_run}")
        return manifest

    hub = open_hub(config)
    dvc_remote = push_to_dvc_remote(config.export_dir)  # first: a failed push leaves nothing tagged on the Hub
    try:
        result = push_to_hub(config, hub, tag)
    except HubError as exc:
        raise PipelineError(str(exc)) from None
    result["tag_source"] = source
    if dvc_remote:
        result["dvc_remote"] = dvc_remote
    write_json(config.metrics, result)
    print(
        f"publish: {result['rows']} rows → {result['repo']} @ {tag} ({result['revision'][:12]})"
        + ("" if result["pushed"] else " — already there")
    )
    return result


def main(argv: list[str] | None = None) -> int:
    config = parse_config(PublishConfig, argv, __doc__.splitlines()[0])
    return run(lambda: publish(config))


if __name__ == "__main__":
    raise SystemExit(main())
