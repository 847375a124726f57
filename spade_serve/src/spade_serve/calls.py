"""The server's environment calls: a fixed set of call threads with a bounded queue in
front (:class:`CallGate`), so that a flood of requests is answered BUSY at once instead of
queueing without bound while every blocking call (a worker's spawn, a sandboxed ``step``)
waits for a thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .errors import ServerBusy

T = TypeVar("T")


class CallGate:
    """A fixed set of call threads with a bounded queue in front.

    ``run`` counts the call in before submitting it; with ``threads + queue`` calls
    already admitted it raises :class:`ServerBusy` instead of queueing. Used from one
    event loop only, so the counter needs no lock.
    """

    def __init__(self, threads: int, queue: int) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="spade-serve-call")
        self.capacity = threads + queue
        self.pending = 0

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        self._admit()
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        finally:
            self.pending -= 1

    async def start(self, fn: Callable[..., T], *args: Any, orphaned: Callable[[T], None]) -> T:
        """``run(fn, *args)`` for a call that makes something to be freed (an instance in a
        worker): when the request is cancelled meanwhile (the client went away), the call
        still finishes on its thread and what it made is handed to ``orphaned`` instead of
        leaking."""
        self._admit()
        self.pending += 1
        future = asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(lambda done: _hand_over(done, orphaned))
            raise
        finally:
            self.pending -= 1

    def _admit(self) -> None:
        if self.pending >= self.capacity:
            raise ServerBusy(
                f"the server is at capacity ({self.pending} environment calls running or queued); retry shortly",
                pending=self.pending,
            )

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


def _hand_over(done: asyncio.Future[T] | Future[T], orphaned: Callable[[T], None]) -> None:
    if not done.cancelled() and done.exception() is None:
        orphaned(done.result())


__all__ = ["CallGate"]
