"""The live page in a real headless browser (Debian's chromium): a running WordCount's page shows its
topology, throughput > 0 and the lag of every input partition; a screenshot is taken of it.

Set STREAMLET_PAGE_SCREENSHOT=docs/live-page.png to keep the screenshot (the docs' picture comes from here).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from streamlet.http.client import ForwardingError, get_json
from tests.helpers.kafka import produce
from tests.http.served_apps import free_ports, served_wordcount

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.fail("chromium is not installed: run `make chromium` (Debian's chromium package)")


def _browse(browser: str, url: str, *extra: str) -> str:
    """Load `url` in headless chromium, let its scripts run (fetch status.json, fill the page), and
    return what chromium prints (the DOM with --dump-dom)."""
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--virtual-time-budget=6000", "--window-size=1400,1300", *extra, url],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode(errors="replace")


@contextlib.asynccontextmanager
async def _steady_input(bootstrap: str, topic: str) -> AsyncIterator[None]:
    """Input keeps arriving (bounded: 500 lines every 0.5 s, at most 3 minutes) so throughput stays above 0."""
    async def feed() -> None:
        deadline = time.monotonic() + 180
        n = 0
        while time.monotonic() < deadline:
            await produce(bootstrap, topic, [(None, f"line {n} word{i % 30} again".encode()) for i in range(500)])
            n += 1
            await asyncio.sleep(0.5)

    task = asyncio.create_task(feed())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_page_renders_topology_throughput_and_lag(kafka_broker: Any, tmp_path: Path) -> None:
    browser = _chromium()
    bootstrap = kafka_broker.bootstrap_servers
    (port,) = free_ports(1)
    served = await served_wordcount(bootstrap, tmp_path, "page", 3, ["--http", f"127.0.0.1:{port}"],
                                    {"commit.interval.ms": 500})
    app, inp, sfx = served.app, served.input_topic, served.application_id
    try:
        app.start()
        await app.wait_for_log("to RUNNING")
        async with _steady_input(bootstrap, inp):
            deadline = time.monotonic() + 90
            while True:  # until the app itself reports throughput (its first seconds of history)
                try:
                    _, data = await get_json("127.0.0.1", port, "/status.json")
                    if data["history"] and data["history"][-1][1] > 0 and len(data["lag"]) == 6:
                        break
                except ForwardingError:
                    pass
                assert time.monotonic() < deadline, app.log_text()[-2000:]
                await asyncio.sleep(0.5)
            dom = await asyncio.to_thread(_browse, browser, f"http://127.0.0.1:{port}/", "--dump-dom")
            shot = Path(os.environ.get("STREAMLET_PAGE_SCREENSHOT") or tmp_path / "live-page.png").resolve()
            await asyncio.to_thread(_browse, browser, f"http://127.0.0.1:{port}/", f"--screenshot={shot}")
    finally:
        if app.proc is not None and app.proc.poll() is None:
            app.stop()
    assert 'data-loaded="true"' in dom, dom[:2000]  # the script ran and filled the page from status.json
    throughput = re.search(r'id="throughput">([^<]*)<', dom)
    assert throughput is not None and float(throughput.group(1)) > 0, dom[:3000]
    state = re.search(r'id="state"[^>]*>([^<]*)<', dom)
    assert state is not None and state.group(1) == "RUNNING"
    lag_rows = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td><td>(\d+)</td></tr>", dom)
    assert sorted((t, int(p)) for t, p, _lag in lag_rows) == sorted(
        [(inp, p) for p in range(3)] + [(f"{sfx}-counts-store-repartition", p) for p in range(3)])
    # The topology, drawn by the app itself: every node of WordCount's two sub-topologies.
    for node in ("KSTREAM-SOURCE-0000000000", "KSTREAM-FLATMAPVALUES-0000000001", "counts-store-repartition-sink",
                 "KSTREAM-AGGREGATE-0000000003", "Sub-topology 1"):
        assert node in dom, node
    for link in ("metrics", "health/live", "health/ready"):
        assert f'href="{link}"' in dom
    assert shot.stat().st_size > 10_000  # a real picture, not an empty page
