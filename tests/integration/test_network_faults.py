"""Issue #11: network faults between app and broker, through a real fault-injecting proxy (toxiproxy).

One broker for this module, with two proxied listeners: each app instance bootstraps through its own
proxy and then stays behind it (the broker advertises the proxy), while the chaos harness writes the
input and reads the output on the broker's direct listener. Under exactly_once_v2 every word's count
updates, read `read_committed`, must be exactly 1..n; under at_least_once no input may be lost. And
the app rides the fault out by itself: it waits, says what it waits for, and continues.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from streamlet.testing.local_broker import LocalKafkaBroker, free_ports
from tests.integration.chaos import ChaosResult, Disruption, run_chaos
from tests.integration.network_faults import added_latency, connection_resets, cut_one_of_two
from tests.integration.toxiproxy import Proxy, ToxiproxyServer, find_server

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

_MEMBER_ID = re.compile(r"Joined group '[^']*' \(generation \d+\) with member_id (\S+)")


class _Network:
    """The module's broker and the two proxies in front of it (one per app instance)."""

    def __init__(self, broker: LocalKafkaBroker, proxies: list[Proxy]) -> None:
        self.broker = broker
        self.proxies = proxies


@pytest.fixture(scope="module")
def network(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Network]:
    binary = find_server()
    logs = tmp_path_factory.mktemp("toxiproxy")
    proxy_ports = free_ports(2)
    with ToxiproxyServer(logs / "toxiproxy.log", binary) as server, \
            LocalKafkaBroker(proxied_ports=proxy_ports) as broker:
        proxies = [server.create_proxy(f"app{i}", port, f"127.0.0.1:{broker.proxied_upstreams[port]}")
                   for i, port in enumerate(proxy_ports)]
        yield _Network(broker, proxies)


@pytest.fixture
def net(network: _Network) -> Iterator[_Network]:
    """The shared network, healed before and after each test (no toxic or cut leaks into the next)."""
    network.proxies[0].server.reset()
    yield network
    network.proxies[0].server.reset()


async def _brokers_seen(bootstrap: str) -> set[str]:
    """The broker addresses a client that bootstraps at `bootstrap` is told to connect to."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        await consumer.topics()
        return {f"{b.host}:{b.port}" for b in consumer._client.cluster.brokers()}
    finally:
        await consumer.stop()


async def test_the_apps_traffic_goes_through_the_proxy(net: _Network) -> None:
    """The precondition of every test below: a client that bootstraps through a proxy is told to use
    the proxy, not the broker's own port, so a fault on the proxy reaches all of its connections."""
    for proxy in net.proxies:
        assert await _brokers_seen(proxy.address) == {proxy.address}
    assert await _brokers_seen(net.broker.bootstrap_servers) == {net.broker.bootstrap_servers}
    # And a toxic reaches the Kafka traffic: start-up and one metadata request take four round trips
    # (1.7 s here at 400 ms each), against some 50 ms without it.
    net.proxies[0].add_latency(200)
    began = time.monotonic()
    await _brokers_seen(net.proxies[0].address)
    assert time.monotonic() - began >= 1.2


async def _run_behind_proxy(net: _Network, tmp_path: Path, disrupt: Disruption, guarantee: str, words: int,
                            seed: int, produce_seconds: float = 20, instances: int = 2) -> ChaosResult:
    """`run_chaos` with the apps behind the first proxy and the harness on the direct listener."""
    return await run_chaos(net.broker.bootstrap_servers, tmp_path, words=words, guarantee=guarantee,
                           disrupt=disrupt, extra_settings={"bootstrap.servers": net.proxies[0].address},
                           produce_seconds=produce_seconds, seed=seed, instances=instances)


async def test_exactly_once_under_added_latency(net: _Network, tmp_path: Path) -> None:
    # 300 ± 150 ms each way on every connection of both instances, for more than half of the run.
    result = await _run_behind_proxy(net, tmp_path, added_latency(net.proxies, after=3, lasting=12, latency_ms=300,
                                                                  jitter_ms=150),
                                     "exactly_once_v2", words=40_000, seed=11)
    assert result.check.exact, result.check.summary()
    assert result.check.updates == 40_000


async def test_exactly_once_under_connection_resets(net: _Network, tmp_path: Path) -> None:
    result = await _run_behind_proxy(net, tmp_path, connection_resets(net.proxies[:1], resets=6),
                                     "exactly_once_v2", words=40_000, seed=12)
    assert result.disruptions == 6
    assert result.check.exact, result.check.summary()
    assert result.check.updates == 40_000
    assert all("lost the connection to the Kafka broker" in log for log in result.logs)


async def test_at_least_once_under_connection_resets_loses_nothing(net: _Network, tmp_path: Path) -> None:
    result = await _run_behind_proxy(net, tmp_path, connection_resets(net.proxies[:1], resets=6),
                                     "at_least_once", words=30_000, seed=13, produce_seconds=18)
    print(f"at_least_once under {result.disruptions} connection resets: "
          f"{'exactly once by luck' if result.check.exact else 'not exactly once'}: {result.check.summary()}")
    assert result.check.no_loss, result.check.summary()


async def test_exactly_once_when_one_instance_is_cut_off_longer_than_its_session(net: _Network,
                                                                                tmp_path: Path) -> None:
    # session.timeout.ms is 6 s in the chaos settings: a 12 s cut loses the group for the cut instance,
    # while the second instance, behind the other proxy, takes its tasks over.
    first, second = net.proxies
    result = await _run_behind_proxy(net, tmp_path, cut_one_of_two(first, second.address, after=3, cut_for=12),
                                     "exactly_once_v2", words=40_000, seed=14, produce_seconds=24, instances=1)
    assert result.check.exact, result.check.summary()
    assert result.check.updates == 40_000
    cut_log = result.logs[0]
    # It waited, said for what, and went on by itself: no crash (it ran until the harness stopped it,
    # never in the ERROR state) and no restart (one start-up only). A crash would not show in the
    # output, as the other instance would have taken over for good.
    assert "to ERROR" not in cut_log, cut_log[-4000:]
    assert cut_log.count("state transition from CREATED") == 1, cut_log[-4000:]
    assert "SIGTERM received: closing" in cut_log and "PENDING_SHUTDOWN to NOT_RUNNING" in cut_log, cut_log[-4000:]
    waited = cut_log.find("still waiting for the Kafka broker after")
    assert waited >= 0, cut_log[-4000:]
    back = cut_log.find("the Kafka broker answers again after", waited)
    assert back >= 0, cut_log[-4000:]
    # The cut outlasted the session: the group had dropped the instance, which came back as a new
    # member (how it learns that differs: a failed heartbeat, or a fenced commit first).
    before, after = (set(_MEMBER_ID.findall(part)) for part in (cut_log[:waited], cut_log[back:]))
    assert before and after and not before & after, (before, after)
    assert "to RUNNING" in cut_log[back:], cut_log[-4000:]
