"""Where a card can be shown: the chat a gateway message came from, the terminal, or nowhere.

Hermes 0.19 gives plugins no "post a message" call. What it does give is the inbound
``MessageEvent`` and the ``GatewayRunner`` in ``pre_gateway_dispatch``; from those we keep the chat's
platform adapter, the chat, and the event loop in a context variable. The gateway runs the agent
with a copy of that context (``_run_in_executor_with_context``), so the ``post_llm_call`` of the same
message sees it and can schedule ``adapter.send`` back onto the gateway's loop. The card is sent
once the message's own task has finished, so it lands after the answer it talks about.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("hermes_plugins.ichor")


@dataclass(frozen=True)
class Route:
    """The chat of the gateway message being handled, and how to reach it."""

    platform: str
    chat_id: str
    chat_type: str
    thread_id: str | None = None
    adapter: Any = None
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task | None = None
    metadata: dict | None = None

    @property
    def scope(self) -> str:
        """The key ``/ichor off`` pauses: one chat (one thread) on one platform."""
        base = f"{self.platform}:{self.chat_id}"
        return f"{base}:{self.thread_id}" if self.thread_id else base


current_route: ContextVar[Route | None] = ContextVar("ichor_route", default=None)


def platform_name(value) -> str:
    return str(getattr(value, "value", value) or "")


def route_from_event(event, gateway) -> Route:
    source = event.source
    adapter = None
    finder = getattr(gateway, "_adapter_for_source", None)
    if callable(finder):
        adapter = finder(source)
    if adapter is None:
        adapter = (getattr(gateway, "adapters", None) or {}).get(source.platform)
    metadata = None
    meta_for = getattr(gateway, "_thread_metadata_for_source", None)
    if callable(meta_for):
        metadata = meta_for(source)
    elif source.thread_id:
        metadata = {"thread_id": source.thread_id}
    try:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
    except RuntimeError:
        loop, task = None, None
    return Route(
        platform=platform_name(source.platform),
        chat_id=str(source.chat_id or ""),
        chat_type=str(source.chat_type or ""),
        thread_id=source.thread_id or None,
        adapter=adapter,
        loop=loop,
        task=task,
        metadata=metadata,
    )


def session_scope(platform: str) -> str | None:
    """The chat of the current turn: our route, else Hermes' gateway session variables, else the CLI."""
    route = current_route.get()
    if route is not None:
        return route.scope
    try:
        from gateway.session_context import get_session_env
    except Exception:
        get_session_env = None
    if get_session_env is not None:
        plat, chat = get_session_env("HERMES_SESSION_PLATFORM", ""), get_session_env("HERMES_SESSION_CHAT_ID", "")
        if plat and chat:
            thread = get_session_env("HERMES_SESSION_THREAD_ID", "")
            return f"{plat}:{chat}:{thread}" if thread else f"{plat}:{chat}"
    if platform in ("cli", "tui", ""):
        return "cli"
    return None


class ChatPost:
    """A message ichor posted in a gateway chat; it can be edited once the user has chosen."""

    def __init__(self, route: Route):
        self.route = route
        self.message_id: str | None = None

    def send(self, text: str, on_sent: Callable[[ChatPost], None] | None = None) -> None:
        """Send ``text`` to the chat after the current message's task is done. Safe from any thread."""
        loop = self.route.loop
        if loop is None:
            return  # can_post() said no: there is no gateway loop to send on

        async def deliver() -> None:
            try:
                result = await self.route.adapter.send(self.route.chat_id, text, metadata=self.route.metadata)
            except Exception as exc:
                log.warning("ichor: could not post the card to %s: %s", self.route.scope, exc)
                return
            if getattr(result, "success", True) is False:
                log.warning(
                    "ichor: the %s adapter refused the card: %s",
                    self.route.platform,
                    getattr(result, "error", "unknown error"),
                )
                return
            self.message_id = getattr(result, "message_id", None)
            if on_sent is not None:
                on_sent(self)

        def schedule() -> None:
            task = self.route.task
            if task is not None and not task.done():
                task.add_done_callback(lambda _t: loop.create_task(deliver()))
            else:
                loop.create_task(deliver())

        _call_on_loop(loop, schedule)

    def replace(self, text: str) -> None:
        """Edit the posted message to ``text``; send it as a new message where editing fails."""
        route, loop = self.route, self.route.loop
        if loop is None:
            return

        async def edit() -> None:
            try:
                if self.message_id:
                    result = await route.adapter.edit_message(route.chat_id, self.message_id, text)
                    if getattr(result, "success", False):
                        return
                await route.adapter.send(route.chat_id, text, metadata=route.metadata)
            except Exception as exc:
                log.warning("ichor: could not update the card in %s: %s", route.scope, exc)

        _call_on_loop(loop, lambda: loop.create_task(edit()))


def _call_on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn()
    else:
        loop.call_soon_threadsafe(fn)


def print_to_terminal(text: str) -> None:
    """The CLI has no chat to post in: the card goes to the terminal, after the answer."""
    print("\n" + text + "\n", file=sys.stdout, flush=True)


def can_post(route: Route | None) -> bool:
    return bool(
        route and route.adapter is not None and route.loop is not None and route.chat_id and not route.loop.is_closed()
    )
