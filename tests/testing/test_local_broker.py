"""The local broker is a real Kafka: records round-trip, transactions commit and abort, data survives
a restart, and a machine without Java or Maven gets one clear sentence instead of a stack trace."""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streamlet.errors import BrokerUnavailableError
from streamlet.testing import local_broker
from streamlet.testing.local_broker import LocalKafkaBroker, ensure_kafka_jars, failure_hint
from tests.helpers.kafka import read_settled

pytestmark = pytest.mark.broker


def fresh_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


@pytest.mark.anyio
async def test_produce_and_consume_a_record(kafka_broker: LocalKafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    assert bootstrap == f"127.0.0.1:{kafka_broker.port}"
    topic = fresh_topic("roundtrip")
    await create_topic(bootstrap, topic)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(topic, key=b"k", value=b"hello kafka")
    finally:
        await producer.stop()
    assert await read_settled(bootstrap, topic, expected=1) == [(b"k", b"hello kafka")]


@pytest.mark.anyio
async def test_transactions_commit_and_abort(kafka_broker: LocalKafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = fresh_topic("txn")
    await create_topic(bootstrap, topic)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=fresh_topic("txn-id"))
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send(topic, value=b"committed")
        await producer.begin_transaction()
        await producer.send(topic, value=b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send(topic, value=b"after-abort")
    finally:
        await producer.stop()
    committed = await read_settled(bootstrap, topic, expected=2, isolation_level="read_committed")
    assert [value for _, value in committed] == [b"committed", b"after-abort"]
    # The aborted record is in the log all the same: read_uncommitted sees it.
    everything = await read_settled(bootstrap, topic, expected=3)
    assert [value for _, value in everything] == [b"committed", b"aborted", b"after-abort"]


@pytest.mark.anyio
async def test_restart_keeps_port_and_data(tmp_path: Path) -> None:
    data_dir = tmp_path / "broker"
    with LocalKafkaBroker(data_dir=data_dir) as broker:
        bootstrap = broker.bootstrap_servers
        topic = fresh_topic("restart")
        await create_topic(bootstrap, topic)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            await producer.send_and_wait(topic, value=b"before restart")
        finally:
            await producer.stop()
        first_pid = broker.pid

        broker.restart()

        assert broker.is_running()
        assert broker.pid != first_pid
        assert broker.bootstrap_servers == bootstrap
        assert await read_settled(bootstrap, topic, expected=1) == [(None, b"before restart")]
    assert not broker.is_running()
    assert (data_dir / "kafka-logs" / "meta.properties").is_file(), "a given data dir is kept"


def test_temporary_data_dir_is_removed_on_stop() -> None:
    broker = LocalKafkaBroker().start()
    try:
        data_dir = broker.data_dir
        assert data_dir is not None and (data_dir / "kafka-logs" / "meta.properties").is_file()
        assert broker.log_file.is_file()
        pid = broker.pid
    finally:
        broker.stop()
    assert pid is not None
    assert not data_dir.exists()
    assert not local_broker._pid_alive(pid)
    assert not broker.is_running()


def test_busy_port_is_reported_before_starting_java() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(BrokerUnavailableError, match=f"port {port} .* already in use"):
            LocalKafkaBroker(port=port).start()


def test_missing_java_is_one_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(BrokerUnavailableError) as caught:
        LocalKafkaBroker().start()
    message = str(caught.value)
    assert "Java" in message and "\n" not in message and message.endswith(".")


def test_missing_maven_is_one_sentence_when_jars_must_be_fetched(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    java = shutil.which("java")
    assert java is not None, "the broker tests need Java on PATH"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(BrokerUnavailableError) as caught:
        ensure_kafka_jars(tmp_path / "empty-cache")
    message = str(caught.value)
    assert "Maven" in message and "\n" not in message


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STREAMLET_CACHE_DIR", str(tmp_path / "c"))
    assert local_broker.cache_dir() == (tmp_path / "c").resolve()
    monkeypatch.delenv("STREAMLET_CACHE_DIR")
    repo = Path(local_broker.__file__).resolve().parents[2]
    assert local_broker.cache_dir() == repo / ".cache"  # tests run from the source checkout


def test_concurrent_fetches_share_one_download(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Two fetchers racing on an empty cache: one downloads, the other waits and reuses its jars."""
    cache = tmp_path / "cache"
    results: list[Path] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            results.append(ensure_kafka_jars(cache))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 2 and results[0] == results[1]
    jars = {p.name for p in results[0].iterdir()}
    version = local_broker.default_kafka_version()
    binding = "slf4j-reload4j-1.7.36.jar" if version.startswith("3.") else "log4j-slf4j-impl-2.25.5.jar"
    assert f"kafka_2.13-{version}.jar" in jars and binding in jars
    leftovers = [p.name for p in cache.iterdir() if ".partial-" in p.name]
    assert leftovers == []
    assert capfd.readouterr().err.count("fetching Apache Kafka") == 1


def test_an_unsupported_kafka_version_is_refused_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BrokerUnavailableError, match="4.4.0, 3.9.1"):
        LocalKafkaBroker(version="4.3.0")
    monkeypatch.setenv(local_broker.VERSION_ENV, "2.8.0")
    with pytest.raises(BrokerUnavailableError, match="STREAMLET_KAFKA_VERSION"):
        LocalKafkaBroker()
    monkeypatch.setenv(local_broker.VERSION_ENV, "3.9.1")
    assert LocalKafkaBroker().version == "3.9.1"
    monkeypatch.delenv(local_broker.VERSION_ENV)
    assert LocalKafkaBroker().version == local_broker.KAFKA_VERSIONS[0] == "4.4.0"


@pytest.mark.parametrize("version", local_broker.KAFKA_VERSIONS)
def test_each_supported_version_starts_and_serves_a_transaction(version: str) -> None:
    """Both lines start from their own jars and log config, and take a transactional write."""
    async def round_trip(bootstrap: str) -> list[bytes | None]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="probe", enable_idempotence=True)
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("t", b"v")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("t", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        await consumer.start()
        try:
            values: list[bytes | None] = []
            deadline = asyncio.get_running_loop().time() + 60
            while not values and asyncio.get_running_loop().time() < deadline:
                batch = await consumer.getmany(timeout_ms=1_000)
                values += [record.value for records in batch.values() for record in records]
            return values
        finally:
            await consumer.stop()

    with LocalKafkaBroker(version=version) as broker:
        assert broker.log_file.is_file() and "Kafka Server started" in broker.log_file.read_text()
        assert asyncio.run(round_trip(broker.bootstrap_servers)) == [b"v"]


def test_a_failed_start_is_explained_by_its_first_error_not_the_shutdown_after_it() -> None:
    log = ["[t0] INFO starting (kafka.server.KafkaRaftServer)",
           "[t1] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)",
           "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:9092: in use",
           "[t2] ERROR [QuorumController id=1] shutdown failed",
           "[t3] INFO writeNoOpRecord: unable to start processing because of RejectedExecutionException"]
    assert failure_hint(log) == ": [t1] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)"
    assert failure_hint(log[:1] + log[4:]) == f": {log[4]}"
    assert failure_hint(log[:1]) == ""
