"""Scenarios run inside a fresh interpreter by ``hermes_harness.run_scenario``.

``HERMES_HOME`` is already set when this module runs; Hermes is imported only here. Each scenario
returns a JSON-able report: Hermes' own answers, what reached the model, the pairs in ichor's store,
what a recording platform adapter was asked to send or edit, and ichor's log lines.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path

from ichor.testing.hermes_harness import CONFIRMATION, StubLLM, write_home


class LogTap(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        msg = record.getMessage()
        if "ichor" in record.name or "ichor" in msg:
            self.lines.append(f"{record.levelname} {record.name}: {msg}")


def run(spec: dict) -> dict:
    home = Path(os.environ["HERMES_HOME"])
    stub = StubLLM(default=spec.get("default_reply", "stub answer"))
    stub.reply_when.update(spec.get("reply_when", {}))
    stub.delay_when.update(spec.get("delay_when", {}))
    stub.fail_when.extend(spec.get("fail_when", []))
    write_home(home, stub.base_url, spec.get("plugins", ["ichor"]), spec.get("plugin_entries"))
    for name in spec.get("install_dirs", []):
        _install_directory_plugin(home, name)
    _skip_environment_probe()
    tap = LogTap()
    logging.getLogger().addHandler(tap)
    logging.getLogger().setLevel(logging.INFO)
    try:
        report = SCENARIOS[spec["kind"]](spec, stub, home)
    finally:
        stub.close()
    report["log"] = tap.lines
    report["plugin"] = _plugin_info()
    return report


# ---------------------------------------------------------------------------------- helpers


def _skip_environment_probe() -> None:
    """Hermes probes pip/uv with subprocesses for its system prompt (~2.5 s); irrelevant here."""
    try:
        from tools import env_probe

        env_probe._CACHED_LINE = ""
        env_probe._PROBE_DONE.set()
    except (ImportError, AttributeError):
        pass


def _install_directory_plugin(home: Path, name: str) -> None:
    from ichor.cli import main

    assert main(["install-plugin", "--home", str(home)]) == 0, name


def _plugin_info() -> dict:
    from hermes_cli.plugins import get_plugin_manager

    loaded = get_plugin_manager()._plugins.get("ichor")
    if loaded is None:
        return {}
    return {
        "enabled": loaded.enabled,
        "error": loaded.error,
        "source": loaded.manifest.source,
        "hooks": sorted(loaded.hooks_registered),
        "commands": sorted(loaded.commands_registered),
    }


def _pairs() -> list[dict]:
    from ichor.store import STATUSES, Store

    _mend_store()
    with Store.open(os.environ["HERMES_HOME"]) as store:
        return [
            {"id": p.id, "status": p.status, **p.to_record(), "session_id": p.session_id}
            for p in store.iter_pairs(STATUSES)
        ]


_INTACT: dict[str, object] = {}


def seeded_pair(i: int, session_id: str):
    """The i-th of the pnpm corrections scenarios seed a store with."""
    from ichor.store import NewPair

    return NewPair(
        "correction",
        "no, use pnpm",
        [{"role": "user", "content": f"install {i}"}],
        f"npm install {i}",
        f"pnpm install {i}",
        label="wrong package manager",
        platform="cli",
        session_id=session_id,
    )


def _break(parts) -> None:
    """Make ichor fail inside every hook: its store, its tracker, its card board."""
    from ichor.capture import Tracker
    from ichor.hermes.cards import CardBoard

    def boom(*args, **kwargs):
        raise RuntimeError("injected ichor failure")

    if "store" in parts:
        _break_store()
    if "tracker" in parts:
        setattr(Tracker, "advance", boom)  # noqa: B010 (a plain assignment to a method is a type error)
        setattr(Tracker, "forget_session", boom)  # noqa: B010
    if "board" in parts:
        setattr(CardBoard, "claimable", boom)  # noqa: B010


def _break_store() -> None:
    """Every way ichor reaches its database now fails, as with a full disk or a read-only home."""
    from ichor import store

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    for name in ("__init__", "_read", "_write"):  # opening, and every query of a store already open
        _INTACT.setdefault(name, getattr(store.Store, name))
        setattr(store.Store, name, broken)


def _mend_store() -> None:
    from ichor import store

    for name in list(_INTACT):
        setattr(store.Store, name, _INTACT.pop(name))


def _ichor_plugin():
    """The IchorPlugin Hermes registered: the owner of its /ichor handler."""
    from hermes_cli.plugins import get_plugin_command_handler

    handler = get_plugin_command_handler("ichor")
    return getattr(handler, "__self__", None)


def _discover(spec: dict | None = None):
    from hermes_cli.plugins import PluginManager, discover_plugins

    if spec and spec.get("hide_entry_points"):  # as if ichor were importable but not pip-registered
        PluginManager._scan_entry_points = lambda self: []
    discover_plugins()


def _agent(stub: StubLLM, platform: str, stream: bool, **kw):
    from run_agent import AIAgent

    agent = AIAgent(
        base_url=stub.base_url,
        api_key="sk-stub",
        provider="custom",
        model="stub-model",
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        enabled_toolsets=[],
        platform=platform,
        max_iterations=4,
        **kw,
    )
    if not stream:
        agent._disable_streaming = True
    return agent


def history_for(op, messages: list[dict]) -> list[dict]:
    """The history a turn starts from, the way Hermes' own commands shape it."""
    if op in (None, "continue"):
        return messages
    if op == "rewind":  # /retry and /undo: drop the last exchange (everything from the last user message)
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        return messages[:last_user]
    if op == "compress":  # context compression / a reset: the history is rebuilt much shorter
        return [
            {"role": "user", "content": "[summary of the earlier conversation]"},
            {"role": "assistant", "content": "Understood."},
        ]
    if op == "new":
        return []
    raise ValueError(op)


# --------------------------------------------------------------------------- the agent loop


def loop_scenario(spec: dict, stub: StubLLM, home: Path) -> dict:
    _break(spec.get("break", ()))
    if "confirm_timeout" in spec:
        from ichor import confirm

        confirm.TIMEOUT = spec["confirm_timeout"]
    _discover(spec)
    for key, value in spec.get("settings", {}).items():
        from ichor.store import Store

        with Store.open(home) as store:
            store.set_setting(key, value)
    responses, timings, pairs_per_turn = [], [], []
    for session in spec["sessions"]:
        agent = _agent(stub, session.get("platform", "cli"), session.get("stream", True))
        messages: list[dict] = []
        for step in session["turns"]:
            messages = history_for(step.get("history"), messages)
            stub.replies.append(step["reply"])
            started = time.perf_counter()
            result = agent.run_conversation(step["user"], conversation_history=messages)
            timings.append(time.perf_counter() - started)
            if spec.get("count_pairs_per_turn"):  # what the store held when the turn came back
                pairs_per_turn.append(len(_pairs()))
            responses.append(result["final_response"])
            messages = result["messages"]
        if session.get("finalize"):  # what the CLI fires when it shuts down (cli.py, reason="shutdown")
            from hermes_cli.plugins import invoke_hook

            invoke_hook("on_session_finalize", session_id=agent.session_id, platform="cli", reason="shutdown")
    drain()
    plugin = _ichor_plugin()
    tracked = len(plugin.tracker) if plugin else None
    turn_calls = [r for r in stub.requests if CONFIRMATION not in json.dumps(r.get("messages", []))]
    return {
        "responses": responses,
        "pairs": _pairs(),
        "timings": timings,
        "tracked_sessions": tracked,
        "model_calls": [r.get("stream", False) for r in turn_calls],
        "confirm_calls": [r for r in stub.requests if r not in turn_calls],
        "pairs_per_turn": pairs_per_turn,
    }


def drain(timeout: float = 30) -> None:
    """Wait until ichor's background half of the turns so far (capture, confirmation, store, card) is done."""
    plugin = _ichor_plugin()
    if plugin is not None and not plugin.drain(timeout):
        raise AssertionError(f"ichor's background work did not finish within {timeout} s")


# ------------------------------------------------------------------------------- the gateway


def _recording_adapter():
    from gateway.config import Platform, PlatformConfig
    from gateway.platforms.base import BasePlatformAdapter, SendResult

    class RecordingAdapter(BasePlatformAdapter):
        """A platform that records what the gateway asks it to do instead of calling an API."""

        def __init__(self, can_edit: bool = True):
            super().__init__(PlatformConfig(enabled=True, token="test-token"), Platform.TELEGRAM)
            self.can_edit = can_edit
            self.sent: list[dict] = []
            self.edits: list[dict] = []
            self._ids = 1000

        async def connect(self, *, is_reconnect: bool = False) -> bool:
            self._running = True
            return True

        async def disconnect(self) -> None:
            self._running = False

        async def send(self, chat_id, content, reply_to=None, metadata=None):
            self._ids += 1
            self.sent.append({"chat_id": str(chat_id), "text": content, "message_id": str(self._ids)})
            return SendResult(success=True, message_id=str(self._ids))

        async def edit_message(self, chat_id, message_id, content, *, finalize=False):
            if not self.can_edit:
                return SendResult(success=False, error="Not supported")
            self.edits.append({"chat_id": str(chat_id), "message_id": str(message_id), "text": content})
            return SendResult(success=True, message_id=str(message_id))

        async def send_typing(self, chat_id, metadata=None):
            return None

        async def get_chat_info(self, chat_id):
            return {"name": str(chat_id), "type": "dm"}

    return RecordingAdapter


def gateway_scenario(spec: dict, stub: StubLLM, home: Path) -> dict:
    os.environ["GATEWAY_ALLOW_ALL_USERS"] = "true"
    _break(spec.get("break", ()))
    _discover(spec)
    return asyncio.run(_drive_gateway(spec, stub))


async def _drive_gateway(spec: dict, stub: StubLLM) -> dict:
    from gateway.config import GatewayConfig, Platform
    from gateway.platforms.base import MessageEvent
    from gateway.run import GatewayRunner
    from gateway.session import SessionSource

    plugin = _ichor_plugin()
    clock = {"now": 1000.0}
    if plugin is not None:
        plugin.board.clock = lambda: clock["now"]
    adapter = _recording_adapter()(can_edit=spec.get("can_edit", True))
    config = GatewayConfig(platforms={Platform.TELEGRAM: adapter.config})
    runner = GatewayRunner(config)
    runner.adapters[Platform.TELEGRAM] = adapter
    adapter.gateway_runner = runner
    adapter.set_message_handler(runner._handle_message)
    await adapter.connect()

    outcomes = []
    for n, step in enumerate(spec["events"]):
        clock["now"] += step.get("wait", 1.0)
        if "reply" in step:
            stub.replies.append(step["reply"])
        calls_before, sent_before = len(stub.requests), len(adapter.sent)
        source = SessionSource(
            platform=Platform.TELEGRAM,
            chat_id=step.get("chat", "chat-1"),
            chat_type=step.get("chat_type", "dm"),
            user_id="user-1",
            user_name="ada",
        )
        event = MessageEvent(text=step["text"], source=source, message_id=f"in-{n}")
        if step.get("break_store"):
            _break_store()
        await adapter.handle_message(event)
        await _settle(adapter, want_sent=step.get("expect_sent", 0) + sent_before)
        _mend_store()
        outcomes.append(
            {
                "text": step["text"],
                "reached_model": len(stub.requests) > calls_before,
                "sent": adapter.sent[sent_before:],
            }
        )
    await adapter.disconnect()
    return {
        "events": outcomes,
        "sent": adapter.sent,
        "edits": adapter.edits,
        "pairs": _pairs(),
        "open_cards": len(plugin.board.open_cards()) if plugin else 0,
    }


async def _settle(adapter, want_sent: int, timeout: float = 30.0) -> None:
    """Wait until the gateway's background work for the last message is done (and ``want_sent`` sends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [t for t in adapter._background_tasks if not t.done()]
        if not busy:  # the turn is over: wait for ichor's background half of it, which may post a card
            await asyncio.to_thread(drain, max(0.0, deadline - time.monotonic()))
            if len(adapter.sent) >= want_sent:
                break
        await asyncio.sleep(0.02)
    for _ in range(10):  # let done-callbacks and the edit/send tasks they schedule run
        await asyncio.sleep(0.01)


# ----------------------------------------------------------------------- the slash command


def command_scenario(spec: dict, stub: StubLLM, home: Path) -> dict:
    from hermes_cli.plugins import get_plugin_command_handler, resolve_plugin_command_result

    _break(spec.get("break", ()))
    _discover(spec)
    if spec.get("seed"):
        from ichor.store import Store

        with Store.open(home) as store:
            for i in range(spec["seed"]):
                store.add_pair(seeded_pair(i, "s"))
    handler = get_plugin_command_handler("ichor")
    replies = [str(resolve_plugin_command_result(handler(args))) for args in spec["commands"]] if handler else []
    pairs = _pairs()
    from ichor.store import Store

    with Store.open(home) as store:
        settings = store.settings()
    return {"has_handler": handler is not None, "replies": replies, "settings": settings, "pairs": pairs}


SCENARIOS = {"loop": loop_scenario, "gateway": gateway_scenario, "command": command_scenario}
