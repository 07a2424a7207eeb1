"""The one Hugging Face Hub client ichor has: ``ichor share`` and the pipeline's ``publish`` stage both use it.

* Every call is bounded: a connect and a read timeout on each HTTP request, and a deadline on the whole
  operation (retries included), set through a request hook on ``huggingface_hub``'s shared session. The
  hook only acts inside a ``Hub`` call, so other users of that session in the process are unaffected.
* Every failure becomes one ``HubError`` line: the token (and anything else the scrubber recognises) is
  removed *before* the line is shortened, so no cut can leave part of a secret behind.
* An answer the client can't parse (not JSON, a field missing) is a ``HubError`` too, not a traceback.
* ``huggingface_hub`` is imported inside functions: the plugin core stays dependency-free, and a missing
  install is one line naming the extra (``INSTALL_HINT``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import DISTRIBUTION

# The install line a missing huggingface_hub points to; the distribution name is set where the package is named.
INSTALL_HINT = f"pip install '{DISTRIBUTION}[hub]'"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
DEADLINE_S = 300.0  # one operation (a commit with its uploads and retries) gives up after this long
MESSAGE_LIMIT = 200

T = TypeVar("T")
_local = threading.local()


class HubError(Exception):
    """One line for the user. Never carries the token."""


class PublicRepoRefused(HubError):
    """The repository is public but the visibility setting says private: nothing was written."""


class _DeadlinePassed(Exception):
    pass


@dataclass(frozen=True)
class RepoState:
    private: bool
    existed: bool


def require_client() -> None:
    """Raise one line naming the extra when ``huggingface_hub`` is not installed."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise HubError(f"sharing needs huggingface_hub, which is not installed: {INSTALL_HINT}") from None


def one_line(text: str, secrets: Iterable[str] = (), limit: int = MESSAGE_LIMIT) -> str:
    """``text`` as one line without ``secrets`` or anything the scrubber finds, then cut to ``limit``.

    Redaction comes first: a cut made before it could keep the first part of a token and defeat the match.
    """
    from .scrub import scrub

    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    flat = " ".join(scrub(text).text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _transport():
    try:
        import httpx2 as transport
    except ImportError:  # older huggingface_hub releases run over httpx
        import httpx as transport
    return transport


def is_client_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from talking to the Hub (HTTP, network, validation) rather than a bug here."""
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError

    return isinstance(exc, (HfHubHTTPError, HFValidationError, _transport().TransportError, OSError))


def _bound_request(request) -> None:
    """Request hook: inside a Hub call, give the request its timeouts and stop once the deadline passed."""
    limits = getattr(_local, "limits", None)
    if limits is None:
        return
    connect, read, deadline = limits
    if time.monotonic() > deadline:
        raise _DeadlinePassed()
    request.extensions["timeout"] = {"connect": connect, "read": read, "write": read, "pool": connect}


def _install_hook() -> None:
    from huggingface_hub.utils import get_session

    session = get_session()
    hooks = session.event_hooks
    if _bound_request not in hooks["request"]:
        session.event_hooks = {**hooks, "request": [*hooks["request"], _bound_request]}


class Hub:
    """The Hub calls ichor makes, each bounded in time and with errors turned into ``HubError`` lines."""

    def __init__(
        self,
        token: str,
        token_env: str,
        endpoint: str | None = None,
        *,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        deadline: float | None = None,
    ):
        require_client()
        from huggingface_hub import HfApi

        self._api = HfApi(endpoint=endpoint, token=token, library_name="ichor")
        self._token, self.token_env, self.endpoint = token, token_env, self._api.endpoint
        self.connect_timeout = connect_timeout or CONNECT_TIMEOUT_S
        self.read_timeout = read_timeout or READ_TIMEOUT_S
        self.deadline = deadline or DEADLINE_S
        self._repo_id: str | None = None

    # ---- the one place a call is made ---------------------------------------------------------

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        _install_hook()
        _local.limits = (self.connect_timeout, self.read_timeout, time.monotonic() + self.deadline)
        try:
            return fn(*args, **kwargs)
        except HubError:
            raise
        except _DeadlinePassed:
            raise self._error(f"the Hub at {self.endpoint} did not finish {what} within {self.deadline:g} s") from None
        except Exception as exc:
            if is_client_error(exc):
                raise self._error(self._describe(exc)) from None
            if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError, IndexError)):
                raise self._error(
                    f"the Hub at {self.endpoint} sent an answer to {what} that ichor can't read "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            raise
        finally:
            _local.limits = None

    def _error(self, line: str) -> HubError:
        return HubError(one_line(line, [self._token]))

    def _describe(self, exc: Exception) -> str:
        from huggingface_hub.errors import (
            HfHubHTTPError,
            HFValidationError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )

        transport = _transport()
        status = getattr(getattr(exc, "response", None), "status_code", None)
        target = self._repo_id or "your namespace"
        env = self.token_env
        if isinstance(exc, OfflineModeIsEnabled):
            return "huggingface_hub is in offline mode (HF_HUB_OFFLINE=1): unset it to reach the Hub"
        if isinstance(exc, HFValidationError):
            return f"invalid repository name: {str(exc).splitlines()[0]}"
        if isinstance(exc, transport.ConnectTimeout):
            return f"the Hub at {self.endpoint} did not accept a connection within {self.connect_timeout:g} s"
        if isinstance(exc, transport.TimeoutException):
            return f"the Hub at {self.endpoint} did not answer within {self.read_timeout:g} s (read timeout)"
        if status == 401 and not isinstance(exc, RepositoryNotFoundError):
            return f"the Hub refused the token in ${env} (401): check it is valid and not expired"
        if status == 403 or (status == 401 and isinstance(exc, RepositoryNotFoundError)):
            return f"the token in ${env} may not write to {target} ({status}): use a token with write access"
        if status == 400:
            return f"the Hub refused {target} (400): {_server_message(exc)}"
        if isinstance(exc, HfHubHTTPError) and status is not None:
            return f"the Hub answered {status} for {target}: {_server_message(exc)}"
        return f"can't reach the Hub at {self.endpoint} ({type(exc).__name__}): check your network and try again"

    # ---- repositories -------------------------------------------------------------------------

    def owner(self) -> str:
        """The user the token belongs to."""
        info = self._call("whoami", self._api.whoami)
        name = info.get("name") if isinstance(info, dict) else None
        if not isinstance(name, str) or not name:
            raise self._error(f"the Hub at {self.endpoint} sent an answer to whoami without a user name")
        return name

    def repo_id(self, name: str) -> str:
        """``name`` as ``namespace/name``, in the token owner's namespace when it has none."""
        self._repo_id = name if "/" in name else f"{self.owner()}/{name}"
        return self._repo_id

    def state(self, repo_id: str) -> RepoState | None:
        """Whether the dataset repository exists and is private; None when it does not exist."""
        from huggingface_hub.errors import RepositoryNotFoundError

        self._repo_id = repo_id

        def info_or_none():
            try:
                return self._api.repo_info(repo_id, repo_type="dataset")
            except RepositoryNotFoundError:
                return None

        info = self._call("repo info", info_or_none)
        if info is None:
            return None
        if not isinstance(info.private, bool):
            raise self._error(f"the Hub at {self.endpoint} sent repo info for {repo_id} without its visibility")
        return RepoState(private=info.private, existed=True)

    def ensure_repo(self, repo_id: str, private: bool, allow_public: bool = False) -> RepoState:
        """Create the dataset repository if needed. A repository that exists keeps its visibility, but
        one that is public while ``private`` was asked for is refused unless ``allow_public``."""
        state = self.state(repo_id)
        if state is None:
            self._call(
                "create repo", self._api.create_repo, repo_id, repo_type="dataset", private=private, exist_ok=True
            )
            state = self.state(repo_id) or RepoState(private=private, existed=False)
            return RepoState(private=state.private, existed=False)
        if private and not state.private and not allow_public:
            raise PublicRepoRefused(
                f"{repo_id} is public on the Hub but the visibility setting is private: nothing was written "
                "(make the repository private on the Hub, or allow public explicitly)"
            )
        return state

    def files(self, repo_id: str) -> set[str]:
        return set(self._call("list files", self._api.list_repo_files, repo_id, repo_type="dataset"))

    def head(self, repo_id: str) -> str:
        sha = self._call("repo info", self._api.repo_info, repo_id, repo_type="dataset").sha
        if not isinstance(sha, str) or not sha:
            raise self._error(f"the Hub at {self.endpoint} sent repo info for {repo_id} without a revision")
        return sha

    def read_json(self, repo_id: str, path: str) -> dict:
        """A JSON object stored in the repository; ``{}`` when the file holds anything else."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        def fetch():
            url = hf_hub_url(repo_id, path, repo_type="dataset", endpoint=self.endpoint)
            response = get_session().get(url, headers=build_hf_headers(token=self._token))
            hf_raise_for_status(response)
            return response.content

        try:
            data = json.loads(self._call(f"read {path}", fetch))
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def commit(self, repo_id: str, add: dict[str, bytes], message: str, delete: Iterable[str] = ()) -> str:
        """One commit adding ``add`` (path -> bytes) and deleting ``delete``; returns the commit id."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        ops: list = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in add.items()]
        ops += [CommitOperationDelete(path_in_repo=p) for p in delete]
        info = self._call(
            "the commit", self._api.create_commit, repo_id, ops, commit_message=message, repo_type="dataset"
        )
        if not isinstance(info.oid, str) or not info.oid:
            raise self._error(f"the Hub at {self.endpoint} confirmed a commit to {repo_id} without its id")
        return info.oid

    def tag(self, repo_id: str, tag: str, revision: str, message: str) -> None:
        self._call(
            "the tag",
            self._api.create_tag,
            repo_id,
            tag=tag,
            revision=revision,
            repo_type="dataset",
            tag_message=message,
        )

    def tag_target(self, repo_id: str, tag: str) -> str | None:
        """The commit ``tag`` points to, or None when there is no such tag."""
        refs = self._call("list refs", self._api.list_repo_refs, repo_id, repo_type="dataset")
        return next((t.target_commit for t in refs.tags if t.name == tag), None)


def _server_message(exc: Exception) -> str:
    # Not cut here: ``one_line`` redacts the whole line first and cuts after.
    return str(getattr(exc, "server_message", None) or exc)
