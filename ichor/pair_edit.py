"""``ichor edit ID``: the pair's texts in ``$EDITOR`` as JSON, scrubbed again when saved."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from .scrub import merge_counts, scrub, scrub_messages
from .store import NewPair, Pair
from .verbs import CommandError

EDITABLE = ("label", "user_said", "prompt", "rejected", "accepted")


def editable_text(pair: Pair) -> str:
    return json.dumps({key: getattr(pair, key) for key in EDITABLE}, ensure_ascii=False, indent=2) + "\n"


def editor_command() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def edit_in_editor(text: str) -> str:
    """Let the user edit ``text`` in their editor; return what they saved."""
    fd, name = tempfile.mkstemp(prefix="ichor-pair-", suffix=".json")  # 0600: it holds the pair's text
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            done = subprocess.run([*editor_command(), str(path)], check=False)
        except OSError as exc:
            raise CommandError(f"can't start the editor {editor_command()[0]!r}: {exc.strerror}") from None
        if done.returncode != 0:
            raise CommandError(f"the editor exited with status {done.returncode}; the pair is unchanged")
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


def _messages(value) -> list[dict]:
    ok = isinstance(value, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
    )
    if not ok or not value:
        raise CommandError("prompt must be a non-empty list of {role, content} messages; the pair is unchanged")
    return value


def _text(obj: dict, key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise CommandError(f"{key} must be a string; the pair is unchanged")
    return value


def parse_edited(text: str, original: Pair) -> NewPair:
    """The saved JSON, validated and scrubbed again; scrub counts add to the original's."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"not valid JSON ({exc.msg} at line {exc.lineno}); the pair is unchanged") from None
    if not isinstance(obj, dict) or set(obj) != set(EDITABLE):
        raise CommandError(f"expected a JSON object with exactly {', '.join(EDITABLE)}; the pair is unchanged")
    label = obj.get("label")
    if label is not None and not isinstance(label, str):
        raise CommandError("label must be a string or null; the pair is unchanged")
    prompt, prompt_removed = scrub_messages(_messages(obj["prompt"]))
    said, rejected, accepted = (scrub(_text(obj, k)) for k in ("user_said", "rejected", "accepted"))
    return NewPair(
        kind=original.kind,
        user_said=said.text,
        prompt=prompt,
        rejected=rejected.text,
        accepted=accepted.text,
        label=label,
        platform=original.platform,
        session_id=original.session_id,
        scrubbed=merge_counts(original.scrubbed, prompt_removed, said.removed, rejected.removed, accepted.removed),
    )
