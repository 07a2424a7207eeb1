"""Upload the pairs queued with ``share ID`` to the user's own Hugging Face dataset repository.

* One file per pair, ``data/<uid>.jsonl``, in the ``dpo.jsonl`` schema. Before a commit we list what
  the repository already holds and skip those uids, so sharing again never uploads a pair twice —
  even when an earlier run died after the Hub took its commit but before we heard back.
* A pair becomes ``uploaded`` only once the Hub confirmed the commit holding it.
* The token is read from the environment variable the ``hf_token_env`` setting names, handed to
  ``huggingface_hub`` for the Hub endpoint only, and scrubbed out of every message we raise.
* ``huggingface_hub`` is imported inside functions: the core package stays dependency-free.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .export import to_dpo_row
from .store import Pair, Store

DEFAULT_REPO = "ichor-pairs"
DEFAULT_TOKEN_ENV = "HF_TOKEN"
DEFAULT_LICENSE = "cc-by-4.0"
DATA_PREFIX = "data/"
INDEX_FILE = "index.json"  # uid -> {kind, label}: lets the card count every pair without downloading them
COMMIT_BATCH = 500  # files per commit; each commit is confirmed (and its pairs marked) on its own

_REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


class ShareError(Exception):
    """One line for the user. Never carries the token."""


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
    env = store.get_setting("hf_token_env", DEFAULT_TOKEN_ENV) or DEFAULT_TOKEN_ENV
    token = os.environ.get(env, "").strip()
    if not token:
        raise ShareError(
            f"no Hugging Face token: export {env}=hf_… (a token with write access, from "
            "https://huggingface.co/settings/tokens), then run `ichor share` again"
        )
    return env, token


def repo_name(store: Store) -> str:
    name = str(store.get_setting("repo", DEFAULT_REPO) or DEFAULT_REPO)
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


# ---- talking to the Hub -------------------------------------------------------------------------


def hub_error(exc: Exception, token: str, env: str, repo_id: str | None, endpoint: str) -> ShareError:
    """Turn whatever the client raised into one line without the token (the publish stage uses it too)."""
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled, RepositoryNotFoundError

    status = getattr(getattr(exc, "response", None), "status_code", None)
    target = repo_id or "your namespace"
    if isinstance(exc, OfflineModeIsEnabled):
        line = "huggingface_hub is in offline mode (HF_HUB_OFFLINE=1): unset it to reach the Hub"
    elif isinstance(exc, HFValidationError):
        line = f"invalid repository name: {str(exc).splitlines()[0]}"
    elif status == 401 and not isinstance(exc, RepositoryNotFoundError):
        line = f"the Hub refused the token in ${env} (401): check it is valid and not expired"
    elif status == 403 or (status == 401 and isinstance(exc, RepositoryNotFoundError)):
        line = f"the token in ${env} may not write to {target} ({status}): use a token with write access"
    elif status == 400:
        line = f"the Hub refused {target} (400): {_server_message(exc)}"
    elif isinstance(exc, HfHubHTTPError) and status is not None:
        line = f"the Hub answered {status} for {target}: {_server_message(exc)}"
    else:
        line = f"can't reach the Hub at {endpoint} ({type(exc).__name__}): check your network and try again"
    return ShareError(_redact(line, token))


def _server_message(exc: Exception) -> str:
    message = getattr(exc, "server_message", None) or str(exc)
    return " ".join(message.split())[:200]


def _redact(text: str, token: str) -> str:
    return " ".join(text.replace(token, "***").split())


def is_client_error(exc: Exception) -> bool:
    """Whether ``exc`` came from talking to the Hub (HTTP, network, validation) rather than a bug here."""
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError

    try:
        import httpx2 as transport
    except ImportError:  # older huggingface_hub releases run over httpx
        import httpx as transport
    return isinstance(exc, (HfHubHTTPError, HFValidationError, transport.TransportError, OSError))


class HubClient:
    """The Hub calls ichor makes (here and in the publish stage), with errors turned into ShareError lines."""

    def __init__(self, token: str, env: str, endpoint: str | None):
        from huggingface_hub import HfApi

        self.api = HfApi(endpoint=endpoint, token=token, library_name="ichor")
        self.token, self.env, self.endpoint = token, env, self.api.endpoint
        self.repo_id: str | None = None

    def call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_client_error(exc):
                raise
            raise hub_error(exc, self.token, self.env, self.repo_id, self.endpoint) from None

    def owner(self) -> str:
        return self.call(self.api.whoami)["name"]

    def ensure_repo(self, repo_id: str, private: bool) -> tuple[bool, bool]:
        """Create the repository if needed; return (its private flag, whether it already existed)."""
        from huggingface_hub.errors import RepositoryNotFoundError

        self.repo_id = repo_id
        try:
            info = self.api.repo_info(repo_id, repo_type="dataset")
            return bool(info.private), True
        except RepositoryNotFoundError:
            pass
        except Exception as exc:
            if not is_client_error(exc):
                raise
            raise hub_error(exc, self.token, self.env, repo_id, self.endpoint) from None
        self.call(self.api.create_repo, repo_id, repo_type="dataset", private=private, exist_ok=True)
        return private, False

    def files(self, repo_id: str) -> set[str]:
        return set(self.call(self.api.list_repo_files, repo_id, repo_type="dataset"))

    def head(self, repo_id: str) -> str:
        return self.call(self.api.repo_info, repo_id, repo_type="dataset").sha

    def read_json(self, repo_id: str, path: str) -> dict:
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        url = hf_hub_url(repo_id, path, repo_type="dataset", endpoint=self.endpoint)
        response = self.call(get_session().get, url, headers=build_hf_headers(token=self.token))
        self.call(hf_raise_for_status, response)
        try:
            data = json.loads(response.content)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def commit(self, repo_id: str, files: dict[str, bytes], message: str) -> str:
        from huggingface_hub import CommitOperationAdd

        ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in files.items()]
        info = self.call(self.api.create_commit, repo_id, ops, commit_message=message, repo_type="dataset")
        return info.oid


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

    hub = HubClient(token, env, endpoint)
    repo_id = name if "/" in name else f"{hub.owner()}/{name}"
    want_private = store.get_setting("visibility", "private") != "public"
    private, existed = hub.ensure_repo(repo_id, want_private)
    result = ShareResult(repo_id=repo_id, private=private, visibility_kept=existed and private != want_private)

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
    license_id = store.get_setting("license", DEFAULT_LICENSE) or DEFAULT_LICENSE
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
