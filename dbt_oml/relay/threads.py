"""Blocking work off the relay's event loop, in a daemon thread."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")


async def off_loop(work: Callable[[], T]) -> T:
    """Run blocking work in a daemon thread, so the event loop keeps serving NATS.

    Not `asyncio.to_thread`: its executor's threads are joined at interpreter exit, so an OM call
    stuck in its retry budget would hold a SIGTERM'ed relay past ack_wait.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(cast(T, value))

    def run() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = work()
        except Exception as e:  # noqa: BLE001 - handed to the awaiting coroutine
            error = e
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="dbt-oml-relay-delivery", daemon=True).start()
    return await done
