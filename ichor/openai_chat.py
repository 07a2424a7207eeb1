"""One chat completion against any OpenAI-compatible endpoint, with the standard library only.

The detector's confirmation from a shell (``ichor detect --llm URL``), the evaluation's judge and the
reward's judge all call an endpoint this way. The API key is read from an environment variable whose
*name* is configured, never from a file or an argument, so it cannot land in a log or a setting.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence


class ChatError(RuntimeError):
    """The endpoint could not be reached, timed out, or answered something that is not a completion."""


def complete(
    messages: Sequence[dict],
    *,
    url: str,
    model: str,
    api_key_env: str | None = None,
    timeout: float = 30.0,
    max_tokens: int = 200,
    temperature: float = 0.0,
) -> tuple[str, dict]:
    """POST ``messages`` to ``{url}/chat/completions``; return the answer's text and the usage dict."""
    body = {"model": model, "messages": list(messages), "max_tokens": max_tokens, "temperature": temperature}
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        hint = " (does the URL end in /v1?)" if getattr(exc, "code", None) == 404 else ""
        raise ChatError(f"{url}: {type(exc).__name__}: {_without_key(str(exc), key)}{hint}") from None
    try:
        text = payload["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise ChatError(f"{url}: the answer has no choices[0].message.content") from None
    return str(text), dict(payload.get("usage") or {})


def _without_key(text: str, key: str | None) -> str:
    return text.replace(key, "[REDACTED]") if key else text
