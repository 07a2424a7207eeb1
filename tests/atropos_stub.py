"""Offline fixtures for the Atropos tests: a tiny ChatML tokenizer and a loopback OpenAI-compatible stub.

The stub honours ``n`` and rotates through canned answers, so a group gets answers that match the
accepted answer, the rejected one, and neither (one of them cut off by ``max_tokens``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

ANSWERS = [
    ("Use pnpm: run `pnpm install` in the project folder.", "stop"),
    ("Run npm install.", "stop"),
    ("The weather in Lisbon is mild in spring and the beaches are lovely", "length"),
    ("Use pnpm: run pnpm install.", "stop"),
]

PAIRS = [
    {
        "uid": "p1",
        "messages": [{"role": "user", "content": "install the dependencies of my project"}],
        "accepted": "Use pnpm: run `pnpm install` in the project folder.",
        "rejected": "Run npm install.",
        "user_said": "we use pnpm, not npm",
        "kind": "correction",
        "label": "wrong package manager",
        "split": "train",
    },
    {
        "uid": "p2",
        "messages": [{"role": "user", "content": "add lodash to the project"}],
        "accepted": "Run `pnpm add lodash`.",
        "rejected": "Run `npm install lodash`.",
        "user_said": "this repo uses pnpm",
        "kind": "correction",
        "label": "wrong package manager",
        "split": "train",
    },
    {
        "uid": "p3",
        "messages": [{"role": "user", "content": "list the files in this folder, including hidden"}],
        "accepted": "ls -la",
        "rejected": "ls",
        "user_said": "you need -a for hidden files",
        "kind": "retry",
        "label": "missing flag",
        "split": "train",
    },
    {
        "uid": "p4",
        "messages": [{"role": "user", "content": "add react to my app's dependencies"}],
        "accepted": "Run `pnpm add react`.",
        "rejected": "Run `npm install react`.",
        "user_said": "not npm, pnpm",
        "kind": "correction",
        "label": "wrong package manager",
        "split": "eval",
    },
]


def write_pairs(path: Path, rows=PAIRS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def build_tokenizer(folder: Path) -> Path:
    """A byte-level BPE with ChatML specials, saved so transformers 4 and 5 both load it offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [a for a, _ in ANSWERS] + [json.dumps(p) for p in PAIRS] + ["user assistant system"]
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "chat_template": CHATML,
                "eos_token": "<|im_end|>",
                "bos_token": None,
                "pad_token": "<|endoftext|>",
                "unk_token": None,
                "model_max_length": 4096,
            }
        )
    )
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"})
    )
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler(BaseHTTPRequestHandler):
    counter = 0
    lock = threading.Lock()
    requests: list = []

    def log_message(self, *args):
        pass

    def _send(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            return self._send({"object": "list", "data": [{"id": "stub", "object": "model"}]})
        self._send({"error": "not found"}, 404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).requests.append(body)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send({"error": "not found"}, 404)
        choices = []
        for i in range(int(body.get("n") or 1)):
            with self.lock:
                text, reason = ANSWERS[type(self).counter % len(ANSWERS)]
                type(self).counter += 1
            if body.get("max_tokens") == 8:  # the judge's short calls
                text, reason = "A", "stop"
            choices.append({"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": reason})
        self._send(
            {
                "id": "cmpl-stub",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": choices,
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


def start_stub() -> tuple[ThreadingHTTPServer, str]:
    """A fresh stub on a free 127.0.0.1 port; returns (server, base_url ending in /v1)."""
    handler = type("StubHandler", (_Handler,), {"counter": 0, "requests": [], "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":  # handy by hand: python -m tests.atropos_stub OUT_DIR
    import sys

    out = Path(sys.argv[1])
    build_tokenizer(out / "tok")
    write_pairs(out / "pairs.jsonl")
    server, url = start_stub()
    print(url, flush=True)
    server.serve_forever()
