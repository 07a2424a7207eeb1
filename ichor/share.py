"""Upload the pairs queued with ``share ID`` to the user's own Hugging Face dataset repository.

* One file per pair, ``data/<uid>.jsonl``, in the ``dpo.jsonl`` schema. Before a commit we list what
  the repository already holds and skip those uids, so sharing again never uploads a pair twice —
  even when an earlier run died after the Hub took its commit but before we heard back.
* A pair becomes ``uploaded`` only once the Hub confirmed the commit holding it.
* The repository is created with the ``visibility`` setting; an existing one keeps its own, except that
  a public repository is refused while the setting says private (nothing is uploaded).
* The token is read from the environment variable the ``hf_token_env`` setting names and handed to
  ``ichor.hub.Hub``, the one Hub client (shared with the ``publish`` stage), which bounds every call in
  time and keeps the token out of every message.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import settings
from .export import to_dpo_row
from .hub import Hub, HubError, PublicRepoRefused
from .store import Pair, Store

DEFAULT_REPO = "ichor-pairs"
DEFAULT_TOKEN_ENV = "HF_TOKEN"
DEFAULT_LICENSE = "cc-by-4.0"
DATA_PREFIX = "data/"
INDEX_FILE = "index.json"  # uid -> {kind, label}: lets the card count every pair without downloading them
COMMIT_BATCH = 500  # files per commit; each commit is confirmed (and its pairs marked) on its own

_REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


ShareError = HubError  # one line for the user, never carrying the token


@dataclass
class ShareResult:
    repo_id: str | None = None
    uploaded: int = 0
    already_there: int = 0
    private: bool | None = None
    visibility_kept: bool = False  # the repository existed with a visibility other than the setting
    commits: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if self.repo_id is None:
            return "ichor · nothing to share: queue pairs with `share ID` first"
        where = f"{self.repo_id} ({'private' if self.private else 'public'}"
        where += ", left as it was on the Hub)" if self.visibility_kept else ")"
        if not self.uploaded:
            return f"ichor · nothing new to share: {_pairs(self.already_there)} already on {where}"
        line = f"ichor · uploaded {_pairs(self.uploaded)} to {where}"
        if self.already_there:
            line += f"; {self.already_there} were already there"
        return line


def _pairs(n: int) -> str:
    return f"{n} pair" if n == 1 else f"{n} pairs"


def pair_path(uid: str) -> str:
    return f"{DATA_PREFIX}{uid}.jsonl"


def share_row(pair: Pair) -> dict:
    """The shared row: the ``dpo.jsonl`` schema; metadata carries no platform or session id."""
    return to_dpo_row(pair.to_record())


# ---- settings and local checks ------------------------------------------------------------------


def read_token(store: Store) -> tuple[str, str]:
    env = settings.get(store, "hf_token_env") or DEFAULT_TOKEN_ENV
    token = os.environ.get(env, "").strip()
    if not token:
        raise ShareError(
            f"no Hugging Face token: export {env}=hf_… (a token with write access, from "
            "https://huggingface.co/settings/tokens), then run `ichor share` again"
        )
    return env, token


def repo_name(store: Store) -> str:
    name = str(settings.get(store, "repo") or DEFAULT_REPO)
    parts = name.split("/")
    if (
        len(parts) > 2
        or not all(_REPO_NAME.match(p) and ".." not in p and "--" not in p for p in parts)
        or name.endswith(".git")
    ):
        raise ShareError(
            f"invalid repository name {name!r}: use letters, digits, '-', '_' or '.' "
            "(at most 96), e.g. `ichor set repo my-corrections`"
        )
    return name


def _check_leaks(pairs: list[Pair], rows: list[dict]) -> None:
    from .scrub import describe, find_leaks

    for pair, row in zip(pairs, rows, strict=False):
        leaks = find_leaks(json.dumps(row, ensure_ascii=False))
        if leaks:
            raise ShareError(
                f"pair {pair.id} still holds {describe(leaks)}; nothing was uploaded "
                f"(discard it with `ichor discard {pair.id}`)"
            )


# ---- the dataset card ---------------------------------------------------------------------------


def _table(counter: Counter, title: str) -> str:
    if not counter:
        return f"| {title} | pairs |\n|---|---|\n| (none yet) | 0 |\n"
    rows = "".join(f"| {name} | {n} |\n" for name, n in counter.most_common())
    return f"| {title} | pairs |\n|---|---|\n{rows}"


def card_front_matter(license_id: str, pretty_name: str, data_files: dict[str, str]) -> str:
    """The YAML header the Hub reads from a dataset card: licence, tags and which files make each split."""
    splits = "".join(f"  - split: {split}\n    path: {path}\n" for split, path in data_files.items())
    return f"""---
license: {license_id}
pretty_name: {pretty_name}
task_categories:
- text-generation
tags:
- dpo
- preference
- ichor
configs:
- config_name: default
  data_files:
{splits}---
"""


def dataset_card(repo_id: str, index: dict[str, dict], license_id: str = DEFAULT_LICENSE) -> str:
    """README.md for the dataset: counts, mistake types, schema, licence and how to load it."""
    kinds = Counter(v.get("kind") or "unknown" for v in index.values())
    labels = Counter(v.get("label") or "unlabelled" for v in index.values())
    return (
        card_front_matter(license_id, "ichor preference pairs", {"train": "data/*.jsonl"})
        + f"""
# {repo_id}

Preference pairs captured by ichor, a Hermes Agent plugin, when a user corrected,
retried or undid an AI agent's answer: the prompt, the answer the user rejected and the answer they
accepted. Every pair was scrubbed of secrets and personal data on the user's machine, reviewed by the
user on a card, and shared one by one. Rows carry no platform or session identifier.

**{_pairs(len(index))}** in total.

## Kinds

{_table(kinds, "kind")}
## Mistake types

{_table(labels, "mistake type")}
## Schema

One JSON object per line (`data/<uid>.jsonl`), the conversational preference format of TRL's
`DPOTrainer`:

| field | type | meaning |
|---|---|---|
| `prompt` | list of `{{role, content}}` | the conversation up to the user's request |
| `chosen` | list of one `{{role: "assistant", content}}` | the answer the user accepted |
| `rejected` | list of one `{{role: "assistant", content}}` | the answer the user rejected |
| `metadata.uid` | string | random id of the pair (also the file name) |
| `metadata.kind` | string | `correction`, `retry` or `undo` |
| `metadata.label` | string or null | a 2–4 word mistake type |
| `metadata.user_said` | string | what the user wrote when correcting |
| `metadata.created_at` | string | UTC time of capture, ISO 8601 |

## Load it

```python
from datasets import load_dataset

pairs = load_dataset("{repo_id}", split="train")  # add token=... while the repository is private
```

## Licence

`{license_id}`. Change the `license` field above if you share under other terms.
"""
    )


# ---- the upload ---------------------------------------------------------------------------------


def _batches(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _present_uids(paths: set[str]) -> set[str]:
    return {p[len(DATA_PREFIX) : -len(".jsonl")] for p in paths if p.startswith(DATA_PREFIX) and p.endswith(".jsonl")}


def _encode(obj) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def share_queued(store: Store, *, endpoint: str | None = None, batch_size: int = COMMIT_BATCH) -> ShareResult:
    """Upload every ``shared`` pair that the repository does not hold yet; mark them ``uploaded``.

    Raises ShareError (one line, no token) on any failure; pairs from commits the Hub confirmed
    before the failure stay marked, nothing else changes.
    """
    queued = list(store.iter_pairs(("shared",)))
    if not queued:
        return ShareResult()
    name = repo_name(store)
    env, token = read_token(store)
    rows = [share_row(p) for p in queued]
    _check_leaks(queued, rows)

    hub = Hub(token, env, endpoint)
    repo_id = hub.repo_id(name)
    want_private = settings.get(store, "visibility") != "public"
    try:
        repo = hub.ensure_repo(repo_id, want_private)
    except PublicRepoRefused:
        raise ShareError(
            f"{repo_id} is public on the Hub but your visibility setting is private: nothing was uploaded "
            "(make it private on the Hub, or set visibility to public to share there)"
        ) from None
    private = repo.private
    result = ShareResult(repo_id=repo_id, private=private, visibility_kept=repo.existed and private != want_private)

    in_repo = hub.files(repo_id)
    present = _present_uids(in_repo)
    there = [p for p in queued if p.uid in present]
    if there:
        result.already_there = store.mark_uploaded([p.id for p in there], hub.head(repo_id))
    todo = [(p, r) for p, r in zip(queued, rows, strict=False) if p.uid not in present]
    if not todo:
        return result

    index = hub.read_json(repo_id, INDEX_FILE) if INDEX_FILE in in_repo else {}
    index = {uid: v for uid, v in index.items() if uid in present}
    license_id = settings.get(store, "license") or DEFAULT_LICENSE
    for batch in _batches(todo, batch_size):
        files = {pair_path(p.uid): _encode(row) for p, row in batch}
        index.update({p.uid: {"kind": p.kind, "label": p.label} for p, _ in batch})
        files[INDEX_FILE] = _encode(dict(sorted(index.items())))
        files["README.md"] = dataset_card(repo_id, index, license_id).encode("utf-8")
        try:
            oid = hub.commit(repo_id, files, f"ichor: add {_pairs(len(batch))}")
        except ShareError as exc:
            if result.uploaded:
                raise ShareError(
                    f"{exc} (uploaded {_pairs(result.uploaded)} before that; `ichor share` again sends the rest)"
                ) from None
            raise
        result.uploaded += store.mark_uploaded([p.id for p, _ in batch], oid)
        result.commits.append(oid)
    return result
