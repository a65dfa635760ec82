"""A private asyncio event loop on its own thread, for synchronous callers of asyncio clients.

nats-py is asyncio-only while the lab layer, the CLI and the pytest plugin are synchronous and
threaded. One :class:`LoopThread` per client owns the client's loop; any thread submits a
coroutine with :meth:`LoopThread.run` and waits for its result with a deadline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running forever on a daemon thread until :meth:`close`."""

    def __init__(self, name: str):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """Run ``coro`` on the loop; its result, or TimeoutError after ``timeout_s`` (the coroutine
        is cancelled then). Never call from the loop's own thread (it would wait on itself)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop")
        if self._closed:
            coro.close()
            raise RuntimeError("LoopThread.run after close")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout_s:g} s") from None

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the loop and its thread (after cancelling what still runs on it). Idempotent."""
        if self._closed:
            return
        self._closed = True

        async def _cancel_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(_cancel_rest(), self._loop).result(timeout=timeout_s)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=timeout_s)
        if not self._thread.is_alive():
            self._loop.close()
