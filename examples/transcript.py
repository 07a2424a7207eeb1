"""Print a real ichor transcript: Hermes' gateway, a recording Telegram adapter, a loopback model.

Everything but the model and the chat network is real: hermes-agent 0.19.0's ``GatewayRunner``
and agent loop, ichor discovered through its entry point, the SQLite store. Run it from the
repository root (ichor installed in the same environment as hermes-agent):

    python -m examples.transcript
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ichor.testing.hermes_harness import run_scenario

EVENTS = [
    {"text": "list the files in /home/ada/photos, largest first", "reply": "ls -S", "expect_sent": 1},
    {"text": "no, make it human readable and sorted by size", "reply": "ls -lhS", "expect_sent": 2},
    {"text": "k"},
]


def indent(text: str, prefix: str) -> str:
    lines = text.splitlines() or [""]
    return "\n".join([prefix + lines[0]] + [" " * len(prefix) + line for line in lines[1:]])


def render(report: dict) -> str:
    out = []
    edits = {e["message_id"]: e["text"] for e in report["edits"]}
    for event in report["events"]:
        out.append(indent(event["text"], "you    › "))
        for message in event["sent"]:
            if message["text"].startswith("📬"):
                continue  # Hermes' own one-time "no home channel" notice
            who = "ichor  › " if message["text"].startswith("ichor ·") else "hermes › "
            out.append(indent(message["text"], who))
        if not event["reached_model"] and not event["sent"]:
            out.append("         (claimed by ichor; never reached the agent)")
    for message_id, text in edits.items():
        out.append(indent(text, f"ichor  ✎ card {message_id} edited to: "))
    return "\n".join(out)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ichor-transcript-") as tmp:
        report = run_scenario({"kind": "gateway", "events": EVENTS}, Path(tmp) / "home")
    print(render(report))
    [pair] = report["pairs"]
    record = {
        k: pair[k] for k in ("kind", "label", "user_said", "prompt", "rejected", "accepted", "platform", "scrubbed")
    }
    print("\nstored pair, status " + pair["status"] + ":\n" + json.dumps(record, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
