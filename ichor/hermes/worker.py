"""The plugin's background worker: the part of a turn heavier than its bookkeeping, off the turn's thread.

One thread, first in first out, so a session's pairs are stored (and their cards shown) in the order
of its turns. It is a one-thread ``ThreadPoolExecutor``: its thread is not a daemon, and at a normal
interpreter exit ``concurrent.futures`` runs what is still queued before joining it, so a one-shot
``hermes chat -q`` exits only after its pair is stored. A crash, a kill or ``os._exit`` loses the jobs
still queued. Each job runs in a copy of the submitting turn's context (the gateway chat a card goes to).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("hermes_plugins.ichor")

# Jobs waiting at once; past that the worker is far behind and new ones are dropped rather than queued.
MAX_WAITING = 64


class Worker:
    def __init__(self, name: str = "ichor-capture", max_waiting: int = MAX_WAITING):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._waiting = 0
        self.max_waiting = max_waiting

    def submit(self, job: Callable[[], None], dropped: str = "this turn is not captured") -> bool:
        """Queue ``job``; False (and one log line, ending with ``dropped``) when the worker is too far behind."""
        with self._lock:
            if self._waiting >= self.max_waiting:
                log.warning("ichor: %d jobs wait for the worker already, %s", self._waiting, dropped)
                return False
            self._waiting += 1
        try:
            self._pool.submit(contextvars.copy_context().run, self._run, job)
        except RuntimeError:  # the interpreter is shutting down
            self._started()
            raise
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until every job submitted so far has run; False if that takes longer than ``timeout`` s."""
        try:
            self._pool.submit(_nothing).result(timeout)
        except TimeoutError:
            return False
        return True

    def _run(self, job: Callable[[], None]) -> None:
        self._started()
        try:
            job()
        except Exception as exc:  # the job's own guard should have caught it: never let it end silently
            log.warning("ichor: background capture failed: %s: %s", type(exc).__name__, exc)

    def _started(self) -> None:
        with self._lock:
            self._waiting -= 1


def _nothing() -> None:
    pass
