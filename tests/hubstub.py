"""A loopback, stdlib-only server that speaks enough of the Hugging Face Hub API for the real
``huggingface_hub`` (2.4) and ``datasets`` (5.2) clients: create repo, preupload, commit (ndjson),
classic LFS batch + PUT, validate-yaml, repo info, tree, paths-info, resolve, refs, tags, whoami.

Repositories live on disk under ``root``: blobs by sha256 in ``root/blobs``, and each repository's
commits, branches and tags in ``root/repos/<type>/<ns>/<name>.json``. Every commit is a full
snapshot, so any old revision or tag can still be read.

Failure switches, for tests that simulate trouble:

* ``fail_commit_at = N`` (with ``fail_status``): the N-th commit request is refused, nothing applied.
* ``hold_commit_at = N``: the N-th commit is applied, then ``committed`` is set and the answer waits
  for ``release`` — the window in which a test kills the client.
* ``down = True``: every connection is closed without an answer.
* ``hang = True``: every request is read and never answered (until ``release`` is set, as ``stop`` does);
  ``hang_on = (METHOD, path prefix)``: only matching requests are.
* ``answers = {(METHOD, path prefix): (status, body bytes, headers)}``: a canned answer, well-formed or not,
  for matching requests; everything else is served as usual.

Tokens: ``tokens = {token: (user, "write" | "read")}``; unknown tokens get 401, read tokens 403 on writes.
Only the token's presence is recorded in ``requests``, never its value.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

REPO_TYPES = {"datasets": "dataset", "models": "model", "spaces": "space"}
LFS_SUFFIXES = (".parquet", ".arrow", ".bin", ".safetensors", ".zip", ".gz")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _is_binary(path: str, sample: bytes) -> bool:
    if path.endswith(LFS_SUFFIXES) or b"\0" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, body: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.body = status, code, body


class Repo:
    """One repository: a list of snapshot commits, branches and tags, persisted as JSON."""

    def __init__(self, path: Path, repo_id: str, repo_type: str, private: bool):
        self.path, self.repo_id, self.repo_type, self.private = path, repo_id, repo_type, private
        self.commits: dict[str, dict] = {}
        self.branches: dict[str, str] = {}
        self.tags: dict[str, str] = {}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "id": self.repo_id,
            "type": self.repo_type,
            "private": self.private,
            "commits": self.commits,
            "branches": self.branches,
            "tags": self.tags,
        }
        self.path.write_text(json.dumps(state, indent=1, sort_keys=True))

    def resolve(self, rev: str) -> str:
        rev = rev.removeprefix("refs/heads/").removeprefix("refs/tags/")
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if rev in self.commits:
            return rev
        if rev == "main" and not self.branches:
            return ""
        raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")

    def files(self, rev: str = "main") -> dict[str, dict]:
        oid = self.resolve(rev)
        return self.commits[oid]["files"] if oid else {}


class Hub:
    """The state behind the handler: repositories, blobs, tokens and the failure switches."""

    def __init__(self, root: Path, tokens: dict[str, tuple[str, str]]):
        self.root = Path(root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        self.tokens = tokens
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.RLock()
        self.endpoint = ""
        self.commit_count = 0
        self.fail_commit_at: int | None = None
        self.fail_status = 500
        self.hold_commit_at: int | None = None
        self.committed = threading.Event()
        self.release = threading.Event()
        self.down = False
        self.hang = False
        self.hang_on: tuple[str, str] | None = None
        self.answers: dict[tuple[str, str], tuple[int, bytes, dict]] = {}
        self.requests: list[tuple[str, str, bool]] = []
        self.resent: list[str] = []  # paths a client offered again though the revision already held them

    # ---- helpers the tests use -------------------------------------------------------------

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        return self.repos[(repo_type, repo_id)]

    def read(self, repo_id: str, path: str, rev: str = "main", repo_type: str = "dataset") -> bytes:
        entry = self.repo(repo_id, repo_type).files(rev)[path]
        return self.blob_path(entry["sha256"]).read_bytes()

    def commits_added(self, repo_id: str, repo_type: str = "dataset") -> list[list[str]]:
        """The paths each commit added or changed, in commit order."""
        repo = self.repo(repo_id, repo_type)
        return [c["added"] for c in sorted(repo.commits.values(), key=lambda c: c["seq"])]

    def blob_path(self, sha256: str) -> Path:
        return self.root / "blobs" / sha256

    # ---- state changes ---------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        target = self.blob_path(sha)
        if not target.exists():
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return sha

    def create_repo(self, repo_type: str, repo_id: str, private: bool) -> tuple[bool, Repo]:
        with self.lock:
            key = (repo_type, repo_id)
            if key in self.repos:
                return False, self.repos[key]
            path = self.root / "repos" / repo_type / f"{repo_id}.json"
            repo = Repo(path, repo_id, repo_type, private)
            self._commit(
                repo,
                "main",
                "initial commit",
                [
                    {
                        "key": "file",
                        "value": {
                            "path": ".gitattributes",
                            "content": base64.b64encode(b"*.parquet filter=lfs\n").decode(),
                            "encoding": "base64",
                        },
                    }
                ],
            )
            self.repos[key] = repo
            return True, repo

    def _commit(self, repo: Repo, branch: str, summary: str, ops: list[dict]) -> str:
        parent = repo.branches.get(branch, "")
        files = dict(repo.commits[parent]["files"]) if parent else {}
        added = []
        for op in ops:
            key, value = op["key"], op["value"]
            path = value.get("path", "")
            if key == "file":
                data = (
                    base64.b64decode(value["content"])
                    if value.get("encoding") == "base64"
                    else value["content"].encode()
                )
                files[path] = {"sha256": self.put_blob(data), "size": len(data), "lfs": False}
                added.append(path)
            elif key == "lfsFile":
                if not self.blob_path(value["oid"]).exists():
                    raise HubError(422, f"LFS object {value['oid']} for {path} was never uploaded")
                files[path] = {"sha256": value["oid"], "size": value["size"], "lfs": True}
                added.append(path)
            elif key == "deletedFile":
                if path not in files:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                del files[path]
            elif key == "deletedFolder":
                prefix = path.rstrip("/") + "/"
                for p in [p for p in files if p.startswith(prefix)]:
                    del files[p]
        seq = len(repo.commits)
        oid = hashlib.sha1(json.dumps([parent, seq, summary, files, time.time()]).encode()).hexdigest()
        repo.commits[oid] = {"seq": seq, "parent": parent, "summary": summary, "files": files, "added": added}
        repo.branches[branch] = oid
        repo.save()
        return oid


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hubstub/1"
    hub: Hub

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    # ---- plumbing ---------------------------------------------------------------------------

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(
        self, status: int, body: bytes | dict | list = b"", headers: dict | None = None, head: bool = False
    ) -> None:
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _user(self, write: bool) -> str | None:
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else None
        if token is None:
            if write:
                raise HubError(401, "Invalid credentials in Authorization header")
            return None
        if token not in self.hub.tokens:
            raise HubError(401, "Invalid credentials in Authorization header")
        user, role = self.hub.tokens[token]
        if write and role != "write":
            raise HubError(403, "You don't have the rights to write to this repository")
        return user

    def _handle(self, method: str) -> None:
        hub = self.hub
        if hub.down:
            self.close_connection = True
            return
        url = urlsplit(self.path)
        segs = [unquote(s) for s in url.path.split("/")[1:]]
        query = parse_qs(url.query)
        hub.requests.append((method, url.path, "Authorization" in self.headers))
        body = self._body() if method in ("POST", "PUT") else b""
        if hub.hang or (hub.hang_on and method == hub.hang_on[0] and url.path.startswith(hub.hang_on[1])):
            hub.release.wait(60)
            self.close_connection = True
            return
        for (want_method, prefix), (status, canned, headers) in hub.answers.items():
            if method == want_method and url.path.startswith(prefix):
                return self._send(status, canned, headers, head=method == "HEAD")
        try:
            self._route(method, segs, query, body)
        except HubError as exc:
            headers = {"X-Error-Message": str(exc)}
            if exc.code:
                headers["X-Error-Code"] = exc.code
            self._send(exc.status, {"error": str(exc), **(exc.body or {})}, headers, head=method == "HEAD")

    do_GET = lambda self: self._handle("GET")  # noqa: E731
    do_HEAD = lambda self: self._handle("HEAD")  # noqa: E731
    do_POST = lambda self: self._handle("POST")  # noqa: E731
    do_PUT = lambda self: self._handle("PUT")  # noqa: E731

    def _repo(self, type_seg: str, ns: str, name: str, write: bool = False) -> Repo:
        user = self._user(write)
        repo = self.hub.repos.get((REPO_TYPES.get(type_seg, "model"), f"{ns}/{name}"))
        if repo is None or (repo.private and user != ns):
            raise HubError(404, "Repository not found", "RepoNotFound")
        if write and user != ns:
            raise HubError(403, "You don't have the rights to write to this repository")
        return repo

    # ---- routes -----------------------------------------------------------------------------

    def _route(self, method: str, segs: list[str], query: dict, body: bytes) -> None:
        if segs[:2] == ["api", "whoami-v2"]:
            user = self._user(write=False)
            if user is None:
                raise HubError(401, "Invalid credentials in Authorization header")
            role = self.hub.tokens[self.headers["Authorization"].removeprefix("Bearer ").strip()][1]
            return self._send(
                200,
                {
                    "type": "user",
                    "name": user,
                    "fullname": user,
                    "orgs": [],
                    "auth": {"type": "access_token", "accessToken": {"role": role}},
                },
            )
        if segs[:2] == ["api", "repos"] and segs[2:3] == ["create"]:
            return self._create(json.loads(body or b"{}"))
        if segs[:2] == ["api", "validate-yaml"]:
            return self._send(200, {"errors": [], "warnings": []})
        if segs[0] == "api" and len(segs) >= 4 and segs[1] in REPO_TYPES:
            return self._api_repo(method, segs[1], segs[2], segs[3], segs[4:], query, body)
        if segs[0] == "lfs-upload" and method == "PUT":
            return self._lfs_put(segs[1], body)
        type_seg = segs[0] if segs[0] in REPO_TYPES else "models"
        rest = segs[1:] if segs[0] in REPO_TYPES else segs
        if len(rest) >= 2 and rest[1].endswith(".git") and rest[2:] == ["info", "lfs", "objects", "batch"]:
            return self._lfs_batch(type_seg, rest[0], rest[1][:-4], json.loads(body))
        if len(rest) >= 5 and rest[2] == "resolve":
            return self._resolve(method, type_seg, rest[0], rest[1], rest[3], "/".join(rest[4:]))
        raise HubError(404, f"no route for {method} /{'/'.join(segs)}")

    def _create(self, payload: dict) -> None:
        user = self._user(write=True)
        ns = payload.get("organization") or user
        name = payload.get("name", "")
        if not NAME_RE.match(name) or ".." in name or name.endswith((".git", ".")):
            raise HubError(400, f"Invalid repo name: {name!r}")
        if ns != user:
            raise HubError(403, f"You don't have the rights to create repos in {ns}")
        repo_type = payload.get("type") or "model"
        private = payload.get("visibility", "private" if payload.get("private") else "public") != "public"
        created, repo = self.hub.create_repo(repo_type, f"{ns}/{name}", private)
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.hub.endpoint}/{prefix}{ns}/{name}"
        if not created:
            raise HubError(409, "You already created this repo", body={"url": url})
        self._send(200, {"url": url, "name": f"{ns}/{name}", "id": f"{ns}/{name}"})

    def _api_repo(self, method, type_seg, ns, name, rest, query, body) -> None:
        write = method == "POST" and rest[:1] in (["preupload"], ["commit"], ["tag"])
        repo = self._repo(type_seg, ns, name, write=write)
        action = rest[0] if rest else "revision"
        rev = rest[1] if len(rest) > 1 else "main"
        if method == "GET" and action == "revision":
            return self._info(repo, rev)
        if method == "GET" and action == "refs":
            return self._send(
                200,
                {
                    "branches": [
                        {"name": b, "ref": f"refs/heads/{b}", "targetCommit": o} for b, o in repo.branches.items()
                    ],
                    "tags": [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": o} for t, o in repo.tags.items()],
                    "converts": [],
                },
            )
        if method == "GET" and action == "tree":
            return self._tree(repo, rev, "/".join(rest[2:]).strip("/"), query.get("recursive", ["false"])[0])
        if method == "POST" and action == "paths-info":
            return self._paths_info(repo, rev, body)
        if method == "POST" and action == "preupload":
            return self._preupload(repo, rev, json.loads(body))
        if method == "POST" and action == "commit":
            return self._commit(repo, rev, body)
        if method == "POST" and action == "tag":
            return self._tag(repo, rev, json.loads(body or b"{}"))
        raise HubError(404, f"no route for {method} {action}")

    def _entry(self, path: str, meta: dict) -> dict:
        data_oid = git_sha1(self.hub.blob_path(meta["sha256"]).read_bytes())
        entry = {"type": "file", "path": path, "size": meta["size"], "oid": data_oid}
        if meta["lfs"]:
            entry["lfs"] = {"oid": meta["sha256"], "size": meta["size"], "pointerSize": 134}
        return entry

    def _info(self, repo: Repo, rev: str) -> None:
        with self.hub.lock:
            sha = repo.resolve(rev)
            files = repo.files(rev)
        self._send(
            200,
            {
                "id": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": sha or None,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "tags": [],
                "lastModified": "2026-01-01T00:00:00.000Z",
                "cardData": {},
                "siblings": [{"rfilename": p} for p in sorted(files)],
            },
        )

    def _tree(self, repo: Repo, rev: str, prefix: str, recursive: str) -> None:
        with self.hub.lock:
            files = repo.files(rev)
        base = prefix + "/" if prefix else ""
        if prefix and prefix in files:
            raise HubError(404, f"{prefix} is a file", "EntryNotFound")
        entries, dirs = [], set()
        for path, meta in sorted(files.items()):
            if not path.startswith(base):
                continue
            tail = path[len(base) :]
            if recursive.lower() in ("true", "1"):
                parts = tail.split("/")
                dirs.update(base + "/".join(parts[:i]) for i in range(1, len(parts)))
                entries.append(self._entry(path, meta))
            elif "/" in tail:
                dirs.add(base + tail.split("/")[0])
            else:
                entries.append(self._entry(path, meta))
        if prefix and not entries and not dirs:
            raise HubError(404, f"{prefix} does not exist", "EntryNotFound")
        tree = [{"type": "directory", "path": d, "oid": git_sha1(d.encode()), "size": 0} for d in sorted(dirs)]
        self._send(200, tree + entries)

    def _paths_info(self, repo: Repo, rev: str, body: bytes) -> None:
        form = parse_qs(body.decode()) if body and not body.startswith(b"{") else {}
        wanted = form.get("paths") or json.loads(body or b"{}").get("paths", [])
        with self.hub.lock:
            files = repo.files(rev)
        out = []
        for path in wanted:
            path = path.strip("/")
            if path in files:
                out.append(self._entry(path, files[path]))
            elif any(p.startswith(path + "/") for p in files):
                out.append({"type": "directory", "path": path, "oid": git_sha1(path.encode()), "size": 0})
        self._send(200, out)

    def _preupload(self, repo: Repo, rev: str, payload: dict) -> None:
        files = repo.files(rev)
        out = []
        for f in payload.get("files", []):
            lfs = _is_binary(f["path"], base64.b64decode(f.get("sample", "")))
            remote = files.get(f["path"])
            oid = None
            if remote and remote["lfs"] == lfs:
                oid = remote["sha256"] if lfs else git_sha1(self.hub.blob_path(remote["sha256"]).read_bytes())
                self.hub.resent.append(f["path"])
            out.append(
                {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid}
            )
        self._send(200, {"files": out, "commitOid": repo.branches.get(rev)})

    def _commit(self, repo: Repo, rev: str, body: bytes) -> None:
        hub = self.hub
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next((ln["value"] for ln in lines if ln["key"] == "header"), {})
        ops = [ln for ln in lines if ln["key"] != "header"]
        with hub.lock:
            hub.commit_count += 1
            n = hub.commit_count
            if hub.fail_commit_at == n:
                raise HubError(hub.fail_status, "injected commit failure")
            oid = hub._commit(repo, rev, header.get("summary", ""), ops)
        if hub.hold_commit_at == n:
            hub.committed.set()
            hub.release.wait(60)
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        self._send(
            200,
            {
                "commitUrl": f"{hub.endpoint}/{prefix}{repo.repo_id}/commit/{oid}",
                "commitOid": oid,
                "pullRequestUrl": None,
            },
        )

    def _tag(self, repo: Repo, rev: str, payload: dict) -> None:
        tag = payload.get("tag", "")
        with self.hub.lock:
            if tag in repo.tags:
                raise HubError(409, f"Tag {tag} already exists")
            repo.tags[tag] = repo.resolve(rev)
            repo.save()
        self._send(200, {})

    def _lfs_batch(self, type_seg: str, ns: str, name: str, payload: dict) -> None:
        self._repo(type_seg, ns, name, write=payload.get("operation") == "upload")
        objects = []
        for obj in payload.get("objects", []):
            entry = {"oid": obj["oid"], "size": obj["size"]}
            if not self.hub.blob_path(obj["oid"]).exists():
                entry["actions"] = {"upload": {"href": f"{self.hub.endpoint}/lfs-upload/{obj['oid']}"}}
            objects.append(entry)
        self._send(200, {"transfer": "basic", "objects": objects})

    def _lfs_put(self, oid: str, body: bytes) -> None:
        if hashlib.sha256(body).hexdigest() != oid:
            raise HubError(400, "sha256 mismatch")
        self.hub.put_blob(body)
        self._send(200, b"")

    def _resolve(self, method, type_seg, ns, name, rev, path) -> None:
        repo = self._repo(type_seg, ns, name)
        with self.hub.lock:
            sha = repo.resolve(rev)
            meta = repo.files(rev).get(path)
        commit = {"X-Repo-Commit": sha}
        if meta is None:
            raise HubError(404, "Entry not found", "EntryNotFound")
        data = self.hub.blob_path(meta["sha256"]).read_bytes()
        etag = meta["sha256"] if meta["lfs"] else git_sha1(data)
        headers = {**commit, "ETag": f'"{etag}"', "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        if meta["lfs"]:
            headers["X-Linked-Etag"] = f'"{etag}"'
            headers["X-Linked-Size"] = str(len(data))
        self._send(200, data, headers, head=method == "HEAD")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A client killed mid-request (the point of some tests) is not a server error worth a traceback.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class HubStub:
    """Start with ``HubStub(tmp_path).start()``; ``.endpoint`` is ``http://127.0.0.1:<port>``; the state and
    the failure switches are on ``.hub``."""

    def __init__(self, root: Path, tokens: dict[str, tuple[str, str]] | None = None):
        self.hub = Hub(root, tokens or {})
        handler = type("BoundHandler", (Handler,), {"hub": self.hub})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.hub.endpoint = self.endpoint
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> HubStub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.hub.release.set()
        self.server.shutdown()
        self.server.server_close()
