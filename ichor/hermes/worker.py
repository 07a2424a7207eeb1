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

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue ``job``; False (and one log line) when the worker is too far behind to take it."""
        with self._lock:
            if self._waiting >= self.max_waiting:
                log.warning("ichor: %d turns wait for capture already, this turn is not captured", self._waiting)
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


class Coalescing:
    """One daemon thread for work where only the latest request matters (the detector's refit reads the
    whole decision log): a job submitted while another runs replaces any job still waiting. A daemon, so
    leaving the process never waits for it: a refit cut short leaves the last model in place (it writes
    through a temporary file), and the next decision starts it again."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._waiting: Callable[[], None] | None = None
        self._running = False
        self._idle = threading.Event()
        self._idle.set()

    def submit(self, job: Callable[[], None]) -> bool:
        with self._lock:
            self._waiting = job
            if not self._running:
                self._running = True
                self._idle.clear()
                threading.Thread(target=self._run, name=self.name, daemon=True).start()
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until no job runs or waits; False if that takes longer than ``timeout`` s."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                job, self._waiting = self._waiting, None
                if job is None:
                    self._running = False
                    self._idle.set()
                    return
            try:
                job()
            except Exception as exc:  # the job's own guard should have caught it: never let it end silently
                log.warning("ichor: %s failed: %s: %s", self.name, type(exc).__name__, exc)
