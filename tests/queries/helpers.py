"""Shared by the interactive-query tests: input with known counts, and waiting for a condition."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaProducer

from streamlet.http.client import ForwardingError
from tests.queries.query_app import WINDOW_MS

BASE_TS = 1_700_000_000_000 // WINDOW_MS * WINDOW_MS  # the start of a window, so window starts are known


def expected_counts(n_keys: int, seed: int = 0) -> Counter[str]:
    """Key i occurs (i * 7 + seed) % 5 + 1 times: varied, known counts."""
    return Counter({f"key-{i:03d}": (i * 7 + seed) % 5 + 1 for i in range(n_keys)})


async def produce_counts(bootstrap: str, topic: str, counts: Counter[str], window: int = 0) -> None:
    """Each key `counts[key]` times, all timestamped inside the window `window` after BASE_TS."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        futures = [await producer.send(topic, key=key.encode(), value=b"x",
                                       timestamp_ms=BASE_TS + window * WINDOW_MS + n)
                   for key, times in sorted(counts.items()) for n in range(times)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def eventually(check: Callable[[], Any], timeout: float = 90.0) -> Any:
    """Retry `check` until it returns a truthy value without raising; the last error if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
            error: BaseException = AssertionError(f"condition still false: {result!r}")
        except (AssertionError, Exception) as exc:
            error = exc
        if time.monotonic() > deadline:
            raise error
        await asyncio.sleep(0.2)


async def eventually_async(check: Callable[[], Awaitable[bool]], timeout: float = 90.0) -> None:
    """Retry the coroutine `check` until it returns True; on the deadline, its last failure (an assertion,
    or an instance that does not answer yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if await check():
                return
            last: BaseException = AssertionError("condition still false")
        except (AssertionError, ForwardingError) as exc:  # not up yet, or not caught up yet
            last = exc
        if time.monotonic() > deadline:
            raise last
        await asyncio.sleep(0.3)
