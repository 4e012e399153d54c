"""WordCount moved between Kafka Streams (Java) and streamlet: its input lines and expected counts, its topics,
the Java instance's settings and the committed counts read back. Shared by the offline-move and start-up
check tests."""

from __future__ import annotations

import os
import random
import struct
from collections import Counter
from pathlib import Path
from typing import Any

from examples.wordcount import split_words
from tests.helpers.kafka import create_topics, read_until

WORDS = ["kafka", "streams", "python", "java", "state", "store", "topic", "partition", "task", "commit",
         "window", "join", "table", "stream", "offset", "leader", "group", "member"]
JAVA_SESSION_TIMEOUT_MS = os.environ.get("INTEROP_JAVA_SESSION_TIMEOUT_MS", "20000")
"""The Java apps' session.timeout.ms; "default" leaves Kafka Streams' own (45 s) for a manual run."""


def make_lines(n: int, rng: random.Random) -> list[str]:
    """`n` lines of 1 to 6 of `WORDS`."""
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def counts(lines: list[str]) -> dict[str, int]:
    """Each word's count in `lines`: the final counts WordCount must reach."""
    return dict(Counter(w for ln in lines for w in split_words(ln)))


def latest_counts(records: list[Any]) -> dict[str, int]:
    """Each word's last count in the output records (Long values)."""
    latest: dict[str, int] = {}
    for r in records:
        latest[r.key.decode()] = struct.unpack(">q", r.value)[0]
    return latest


async def read_committed_until(bootstrap: str, topic: str, expected: dict[str, int]) -> list[Any]:
    """The committed output of `topic`, read until the latest counts are `expected` (three minutes at most)."""
    return await read_until(bootstrap, topic, lambda rs: latest_counts(rs) == expected, timeout=180,
                            isolation_level="read_committed")


def java_settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    """The Kafka Streams instance's settings (its session timeout `JAVA_SESSION_TIMEOUT_MS`)."""
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
                "replication.factor": 1}
    if JAVA_SESSION_TIMEOUT_MS != "default":
        settings["session.timeout.ms"] = JAVA_SESSION_TIMEOUT_MS
    return settings


async def wordcount_topics(bootstrap: str, suffix: str) -> dict[str, str]:
    """The input and output topics (two partitions each) of one run, created."""
    topics = {"input": f"interop-lines-{suffix}", "output": f"interop-counts-{suffix}"}
    await create_topics(bootstrap, {topics["input"]: 2, topics["output"]: 2})
    return topics
