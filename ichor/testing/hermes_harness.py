"""A real Hermes Agent on loopback, for ichor's plugin tests, benchmark and transcript.

* ``StubLLM``: a stdlib OpenAI-compatible server on 127.0.0.1 (stream and non-stream
  ``/v1/chat/completions``, ``/v1/models``) whose next answers a scenario scripts.
* ``write_home``: a temporary ``HERMES_HOME`` whose ``config.yaml`` points Hermes at the stub and
  enables the listed plugins.
* ``run_scenario``: Hermes reads ``HERMES_HOME`` when it is imported, so every scenario runs in a
  fresh subprocess (``python -m ichor.testing.hermes_harness SPEC.json``) and reports JSON back.

Nothing here is a fake Hermes: the agent loop, plugin discovery (ichor through its entry point),
hook dispatch and the gateway's message handling are Hermes' own code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SCRUBBED_ENV = (
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "HERMES_SAFE_MODE",
    "ICHOR_DATA_DIR",
)


# --------------------------------------------------------------------------------- the stub model

# In every prompt of ichor's stage-2 confirmation (``ichor.confirm``), never in a turn's messages.
CONFIRMATION = "NEW MESSAGE (user) - classify this one"
_SECTION = re.compile(r"^=== (.+?) ===\n(.*?)(?=\n\n=== )", re.S | re.M)


def agreeing_host(body: dict) -> str:
    """What the stub answers a confirmation unless a scenario says otherwise: a host model that decides as
    stage 1 does at its standalone point, so a scenario not about stage 2 captures what it did before it.
    No label of its own, so the detector's stays."""
    from ichor import confirm

    sections = dict(_SECTION.findall(body["messages"][-1]["content"]))
    texts = ["" if (t := sections.get(title, "")) == "(empty)" else t for _, title in confirm.SECTIONS]
    found = confirm.stage1(confirm.Window(*texts), "standalone")
    return json.dumps({"is_correction": found.is_correction, "kind": found.kind, "label": None})


class StubLLM:
    """Answers each chat completion with the next scripted reply (or a default)."""

    def __init__(self, default: str = "stub answer"):
        self.default = default
        self.replies: list[str] = []
        # A fixed answer for requests whose messages contain the key. A confirmation running in the
        # background has its own, so it never takes a reply scripted for a turn.
        self.reply_when: dict[str, str | Callable[[dict], str]] = {CONFIRMATION: agreeing_host}
        self.delay_when: dict[str, float] = {}  # seconds to wait before answering such requests
        self.fail_when: list[str] = []  # answer such requests with HTTP 500
        self.requests: list[dict] = []
        self.auth: list[str | None] = []  # the Authorization header of each chat request
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_reply(self, body: dict) -> str:
        with self._lock:
            self.requests.append(body)
            text = json.dumps(body.get("messages", []))
            for needle, reply in reversed(self.reply_when.items()):  # keys added later win
                if needle in text:
                    return reply(body) if callable(reply) else reply
            return self.replies.pop(0) if self.replies else self.default

    def trouble(self, body: dict) -> tuple[float, bool]:
        """(delay, fail) for a request, from ``delay_when`` and ``fail_when``."""
        text = json.dumps(body.get("messages", []))
        delay = max([s for needle, s in self.delay_when.items() if needle in text], default=0.0)
        return delay, any(needle in text for needle in self.fail_when)

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                stub.auth.append(self.headers.get("Authorization"))
                delay, fail = stub.trouble(body)
                text = stub.next_reply(body)  # recorded as it arrives, however it is answered
                time.sleep(delay)
                try:
                    if fail:
                        self._json(500, {"error": {"message": "stub failure", "type": "server_error"}})
                    elif body.get("stream"):
                        self._stream(text)
                    else:
                        self._json(200, _completion(text))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting (its timeout)

            def _stream(self, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                words = text.split(" ")
                chunks = [{"role": "assistant", "content": ""}]
                chunks += [{"content": (w if i == 0 else " " + w)} for i, w in enumerate(words)]
                for delta in chunks:
                    self._event(_chunk(delta, None))
                self._event(_chunk({}, "stop"))
                self._event({**_chunk({}, None), "choices": [], "usage": _usage()})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _event(self, obj: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

        return Handler


def _usage() -> dict:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(text: str) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "stub-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": _usage(),
    }


def _chunk(delta: dict, finish: str | None) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "stub-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


# ------------------------------------------------------------------------------- the Hermes home


def write_home(
    home: Path, base_url: str, plugins: list[str] | tuple[str, ...] = ("ichor",), entries: dict | None = None
) -> Path:
    """``entries`` becomes ``plugins.entries`` (per-plugin settings such as ``llm.allow_model_override``)."""
    home.mkdir(parents=True, exist_ok=True)
    enabled = "\n".join(f"    - {p}" for p in plugins) or "    []"
    (home / "config.yaml").write_text(
        "model:\n  default: stub-model\n  provider: custom\n"
        f"  base_url: {base_url}\n"
        "plugins:\n  enabled:\n"
        + enabled
        + "\n"
        + (f"  entries: {json.dumps(entries)}\n" if entries else "")
        + "compression:\n  enabled: false\n"
        "approvals:\n  destructive_slash_confirm: false\n"
    )
    return home


# ------------------------------------------------------------------------- subprocess scenarios


def run_script(module: str, spec: dict, home: Path, marker: str, timeout: float = 120) -> tuple[dict, str]:
    """Run ``python -m module spec.json`` in a fresh interpreter with ``HERMES_HOME=home``.

    Returns the JSON report the script printed after ``marker``, and the rest of its stdout.
    """
    home.mkdir(parents=True, exist_ok=True)
    spec_file = home.parent / f"spec-{os.getpid()}-{time.monotonic_ns()}.json"
    spec_file.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(HERMES_HOME=str(home), HF_HUB_OFFLINE="1", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-m", module, str(spec_file)],
        env=env,
        cwd=str(home.parent),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(marker)]
    if proc.returncode != 0 or not lines:
        raise AssertionError(
            f"scenario failed (rc={proc.returncode})\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
        )
    rest = "\n".join(ln for ln in proc.stdout.splitlines() if not ln.startswith(marker))
    return json.loads(lines[-1][len(marker) :]), rest


def run_scenario(spec: dict, home: Path, timeout: float = 120) -> dict:
    """Run a ``hermes_scenarios`` spec in a fresh interpreter; return its report and other stdout."""
    report, rest = run_script("ichor.testing.hermes_harness", spec, home, "ICHOR-HARNESS-RESULT ", timeout)
    report["stdout"] = rest
    return report


def _main(spec_file: str) -> None:
    from ichor.testing import hermes_scenarios

    spec = json.loads(Path(spec_file).read_text())
    result = hermes_scenarios.run(spec)
    sys.stdout.flush()
    print("ICHOR-HARNESS-RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1])
