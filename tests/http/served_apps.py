"""Shared by the HTTP, metrics and page tests: free loopback ports and a WordCount served over HTTP."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.kafka_helpers import AppProcess, create_topics


def free_ports(n: int) -> list[int]:
    """`n` loopback ports free right now."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class ServedWordCount:
    """A `streamlet run` WordCount (not started yet), its input topic and application id."""

    app: AppProcess
    input_topic: str
    application_id: str


async def served_wordcount(bootstrap: str, tmp_path: Path, prefix: str, partitions: int, extra_args: list[str],
                           settings: dict[str, Any]) -> ServedWordCount:
    """Create fresh input/output topics and describe a WordCount process run with `extra_args`."""
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"{prefix}-in-{sfx}", f"{prefix}-out-{sfx}", f"{prefix}-{sfx}"
    await create_topics(bootstrap, {inp: partitions, out: partitions})
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "s", **settings}
    app = AppProcess("tests.integration.wordcount_app:topology", settings,
                     tmp_path / "app.log", env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}, extra_args=extra_args)
    return ServedWordCount(app, inp, app_id)
