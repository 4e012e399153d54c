"""What `streamlet run` says when a poison record stops it: one line naming the setting that decides it.

With the default `default.deserialization.exception.handler` (log_and_fail) a record the serde cannot
read stops the application, as in Kafka Streams. What the user reads is the summary: where the record
is, why it failed, and which setting (with its choices) would let the application go on. The chained
tracebacks (streamlet's own frames only) are in the debug log, not in the default output.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

CHOICES = ("deserialization.exception.handler is log_and_fail", "LogAndFailExceptionHandler",
           "log_and_continue", "LogAndContinueExceptionHandler", "dead_letter")


async def _run_until_it_stops(bootstrap: str, tmp_path: Path, name: str, extra_args: list[str]) -> tuple[int, str]:
    """A WordCount `streamlet run` whose input holds a good record, then bytes that are no UTF-8 string:
    its exit code and everything it printed."""
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"{name}-in-{sfx}", f"{name}-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    await produce(bootstrap, inp, [(b"k", b"hello world"), (b"k", b"\xff\xfe not text")])
    app = AppProcess("tests.integration.wordcount_app:topology",
                     {"bootstrap.servers": bootstrap, "application.id": f"{name}-{sfx}", "state.dir": tmp_path / name},
                     tmp_path / f"{name}.log", env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out},
                     extra_args=extra_args)
    app.start()
    assert app.proc is not None
    try:
        for _ in range(1200):
            if app.proc.poll() is not None:
                break
            await asyncio.sleep(0.1)
    finally:
        code = app.stop()
    return code, app.log_text()


async def test_a_poison_record_stops_streamlet_run_with_one_line_naming_the_setting(
        kafka_broker: Any, tmp_path: Path) -> None:
    code, output = await _run_until_it_stops(kafka_broker.bootstrap_servers, tmp_path, "poison-cli", [])
    assert code == 1, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith("streamlet: error: the application failed: DeserializationError: failed to deserialize "
                           "the record at topic "), output[-3000:]
    assert "partition 0 offset 1" in last
    for choice in CHOICES:
        assert choice in last, (choice, last)
    failed = [line for line in output.splitlines() if "streams client failed" in line]
    assert len(failed) == 1 and all(choice in failed[0] for choice in CHOICES), failed
    assert "Traceback" not in output, output[-3000:]  # the summary, not four chained tracebacks


async def test_at_debug_level_the_poison_records_traceback_is_still_there(kafka_broker: Any, tmp_path: Path) -> None:
    code, output = await _run_until_it_stops(kafka_broker.bootstrap_servers, tmp_path, "poison-debug",
                                             ["--log-level", "DEBUG"])
    assert code == 1, output[-3000:]
    assert "the traceback of that failure" in output
    after = output.split("the traceback of that failure", 1)[1]
    assert after.lstrip("\n").startswith("Traceback") and "UnicodeDecodeError" in after, after[:2000]
