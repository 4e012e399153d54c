"""Network faults between the app and the broker, as `chaos.Disruption`s driven through toxiproxy.

The apps reach the broker only through proxies (the broker advertises the proxies' ports: see
`LocalKafkaBroker(proxied_ports=...)`), while the chaos harness (topics, input, output reader) uses the
broker's direct listener, so a fault hits the apps and never the measurement.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from tests.helpers.app_process import AppProcess
from tests.integration.chaos import Disruption
from tests.integration.toxiproxy import Proxy


def _clock() -> Callable[[], str]:
    began = time.monotonic()
    return lambda: f"{time.monotonic() - began:.1f}s"


def added_latency(proxies: Sequence[Proxy], after: float, lasting: float, latency_ms: int,
                  jitter_ms: int) -> Disruption:
    """`latency_ms` ± `jitter_ms` added in both directions on every proxy, from `after` for `lasting`
    seconds: every request of the apps (fetch, produce, heartbeat, transaction markers) is slow."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        now = _clock()
        await asyncio.sleep(after)
        for proxy in proxies:
            proxy.add_latency(latency_ms, jitter_ms)
        log(f"[net] +{latency_ms}±{jitter_ms} ms each way at {now()}")
        await asyncio.sleep(lasting)
        for proxy in proxies:
            proxy.remove_latency()
        log(f"[net] latency removed at {now()}")
        return 1

    return disrupt


def connection_resets(proxies: Sequence[Proxy], resets: int, lasting: float = 0.5) -> Disruption:
    """`resets` times, at random moments over the production window, every connection through the
    proxies is torn down, and new ones too for `lasting` seconds: alternately by a `reset_peer` toxic
    (TCP RST, on the upstream or downstream side) and by disabling the proxy (closed connections,
    refused reconnects)."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        now = _clock()
        slot = seconds / resets
        for k in range(resets):
            await asyncio.sleep(slot * rng.uniform(0.3, 0.9))
            how = ("reset_peer upstream", "disable", "reset_peer downstream")[k % 3]
            for proxy in proxies:
                if how == "disable":
                    proxy.set_enabled(False)
                else:
                    proxy.add_toxic("reset", "reset_peer", how.split()[1], timeout=0)
            log(f"[net] reset #{k + 1} ({how}) at {now()}")
            await asyncio.sleep(lasting)
            for proxy in proxies:
                if how == "disable":
                    proxy.set_enabled(True)
                else:
                    proxy.remove_toxic("reset")
        return resets

    return disrupt


def cut_one_of_two(victim: Proxy, other_bootstrap: str, after: float, cut_for: float) -> Disruption:
    """Start a second instance behind its own proxy (`other_bootstrap`), then cut the first instance's
    proxy (`victim`) for `cut_for` seconds, longer than the session timeout: the group throws the cut
    instance out and the second one takes all tasks over; when the network is back, the cut instance
    must notice by itself that it lost its tasks, rejoin and carry on, without a restart."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        now = _clock()
        second = apps[0].clone(len(apps))
        second.settings["bootstrap.servers"] = other_bootstrap
        apps.append(second)
        await second.start().wait_for_log("started on", timeout=120)
        log(f"[net] second instance has tasks at {now()}")
        await asyncio.sleep(after)
        victim.set_enabled(False)
        log(f"[net] cut {apps[0].log_path.name} from the broker at {now()} for {cut_for:.0f}s")
        await asyncio.sleep(cut_for)
        victim.set_enabled(True)
        log(f"[net] {apps[0].log_path.name} reconnected at {now()}")
        return 1

    return disrupt
