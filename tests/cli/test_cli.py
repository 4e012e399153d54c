"""The `streamlet` command line: config sources, loading apps, `describe`, `run`, `broker ...`.

Broker commands run in a subprocess (`python -m streamlet`), as a user would, with their state in
a per-test directory (`STREAMLET_DEV_BROKER_DIR`) so that a developer's own dev broker is untouched.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streamlet.cli import UsageError, load_target, main, parse_properties, parse_settings, read_config_file
from streamlet.processor import Processor
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import local_broker
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from tests.helpers.dev_services import dev_service_env

REPO = Path(__file__).resolve().parents[2]


# -- a tiny Processor-API application, loaded by the CLI from this module --------------------------

class Uppercase(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(record.value.upper()))


def uppercase_topology() -> Topology:
    topology = Topology()
    topology.add_source("Source", os.environ.get("CLI_TEST_INPUT", "input"),
                        key_deserializer=Serdes.String().deserializer,
                        value_deserializer=Serdes.String().deserializer)
    topology.add_processor("Upper", Uppercase, "Source")
    topology.add_sink("Sink", os.environ.get("CLI_TEST_OUTPUT", "output"), "Upper",
                      key_serializer=Serdes.String().serializer, value_serializer=Serdes.String().serializer)
    return topology


def uppercase_app() -> tuple[Topology, dict[str, Any]]:
    """The (topology, config) form: the command line's settings override these."""
    return uppercase_topology(), {"application.id": "from-the-app", "commit.interval.ms": "50"}


NOT_A_TOPOLOGY = 42


# -- configuration sources ------------------------------------------------------------------------

def test_properties_syntax_follows_java() -> None:
    text = "\n".join([
        "# a comment",
        "! another comment",
        "application.id = word-count",
        "bootstrap.servers:127.0.0.1:9092",
        "state.dir /tmp/state",
        "   indented.key=  value with spaces  ",
        "long.value = first,\\",
        "    second",
        "escaped\\=key=a\\tb\\u0041",
        "empty.value=",
    ])
    assert parse_properties(text) == {
        "application.id": "word-count",
        "bootstrap.servers": "127.0.0.1:9092",
        "state.dir": "/tmp/state",
        "indented.key": "value with spaces  ",
        "long.value": "first,second",
        "escaped=key": "a\tbA",
        "empty.value": "",
    }


def test_config_files_json_and_properties(tmp_path: Path) -> None:
    props = tmp_path / "app.properties"
    props.write_text("application.id=a\ncommit.interval.ms=100\n")
    as_json = tmp_path / "app.json"
    as_json.write_text(json.dumps({"application.id": "b", "commit.interval.ms": 200}))
    assert read_config_file(props) == {"application.id": "a", "commit.interval.ms": "100"}
    assert read_config_file(as_json) == {"application.id": "b", "commit.interval.ms": 200}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(UsageError, match="JSON object"):
        read_config_file(bad)
    with pytest.raises(UsageError, match="cannot read"):
        read_config_file(tmp_path / "missing.properties")


def test_set_pairs_split_at_the_first_equals_sign() -> None:
    assert parse_settings(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(UsageError, match="key=value"):
        parse_settings(["no-equals-sign"])


# -- loading applications -------------------------------------------------------------------------

def test_load_target_accepts_a_topology_or_a_tuple_with_config() -> None:
    topology, config = load_target("tests.cli.test_cli:uppercase_topology")
    assert isinstance(topology, Topology) and set(topology.nodes) == {"Source", "Upper", "Sink"}
    assert config == {}
    topology, config = load_target("tests.cli.test_cli:uppercase_app")
    assert isinstance(topology, Topology)
    assert config == {"application.id": "from-the-app", "commit.interval.ms": "50"}


def test_load_target_reports_user_mistakes_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="no such module"):
        load_target("tests.no_such_module:topology")
    with pytest.raises(UsageError, match="no attribute 'missing'"):
        load_target("tests.cli.test_cli:missing")
    with pytest.raises(UsageError, match="not a Topology"):
        load_target("tests.cli.test_cli:NOT_A_TOPOLOGY")
    assert main(["describe", "tests.no_such_module:topology"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamlet: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.skipif(importlib.util.find_spec("streamlet.topology_description") is None,
                    reason="streamlet.topology_description (Topology.describe) is not written yet")
def test_describe_prints_kafka_streams_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "tests.cli.test_cli:uppercase_topology"]) == 0
    out = capsys.readouterr().out
    assert out == f"{uppercase_topology().describe()}\n"
    lines = [line.strip() for line in out.splitlines()]
    assert lines[:2] == ["Topologies:", "Sub-topology: 0"]
    for expected in ["Source: Source (topics: [input])", "--> Upper", "Processor: Upper (stores: [])",
                     "--> Sink", "<-- Source", "Sink: Sink (topic: output)", "<-- Upper"]:
        assert expected in lines, out


# -- streamlet run --------------------------------------------------------------------------------

async def _create_topics(bootstrap: str, *topics: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, 1, 1) for t in topics])
    finally:
        await admin.close()


async def _consumer_group_ids(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {group[0] for group in await admin.list_consumer_groups()}
    finally:
        await admin.close()


async def _read_values(bootstrap: str, topic: str, count: int, timeout: float,
                       app: subprocess.Popen[bytes]) -> list[bytes]:
    """Read `count` values, giving up early when the app process has died."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=None, enable_auto_commit=False)
    await consumer.start()
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout
        while len(values) < count and time.monotonic() < deadline and app.poll() is None:
            batch = await consumer.getmany(timeout_ms=250)
            values.extend(r.value for recs in batch.values() for r in recs)
    finally:
        await consumer.stop()
    return values


@pytest.mark.anyio
@pytest.mark.broker
async def test_run_processes_records_and_exits_zero_on_sigterm(kafka_broker: LocalKafkaBroker,
                                                              tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"cli-in-{suffix}", f"cli-out-{suffix}"
    await _create_topics(bootstrap, inp, out)
    log_path = tmp_path / "app.log"
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1",
               CLI_TEST_INPUT=inp, CLI_TEST_OUTPUT=out)
    # Layers: the app says application.id=from-the-app, the file overrides it and adds the
    # bootstrap servers (without them the app could not reach this broker), --set overrides the id.
    config_file = tmp_path / "app.properties"
    config_file.write_text(f"bootstrap.servers={bootstrap}\napplication.id=from-the-file\n")
    app_id = f"cli-run-{suffix}"
    command = [sys.executable, "-m", "streamlet", "run", "tests.cli.test_cli:uppercase_app",
               "--config", str(config_file), "--set", f"application.id={app_id}",
               "--set", f"state.dir={tmp_path / 'state'}"]
    with open(log_path, "wb") as log_file:
        app = subprocess.Popen(command, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
            await producer.start()
            try:
                for word in (b"hello", b"streams"):
                    await producer.send_and_wait(inp, value=word)
            finally:
                await producer.stop()
            values = await _read_values(bootstrap, out, 2, timeout=60, app=app)
            assert values == [b"HELLO", b"STREAMS"], log_path.read_text()[-3000:]
            assert app_id in await _consumer_group_ids(bootstrap)
            app.send_signal(signal.SIGTERM)
            code = app.wait(timeout=60)
        finally:
            if app.poll() is None:
                app.kill()
                app.wait()
    log_text = log_path.read_text()
    assert code == 0, log_text[-3000:]


def test_run_against_an_unreachable_broker_fails_in_one_line(tmp_path: Path) -> None:
    closed_port = local_broker.free_ports(1)[0]  # nothing listens there
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "streamlet", "run", "tests.cli.test_cli:uppercase_topology",
         "--set", "application.id=unreachable", "--set", f"bootstrap.servers=127.0.0.1:{closed_port}",
         "--set", f"state.dir={tmp_path}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    last = result.stderr.splitlines()[-1]
    assert last.startswith("streamlet: error: cannot reach Kafka"), result.stderr[-3000:]
    assert f"check bootstrap.servers (127.0.0.1:{closed_port})" in last, last  # the setting to check


# -- streamlet broker start|stop|status -----------------------------------------------------------

@pytest.fixture()
def dev_broker_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for broker commands with a private state dir; stops any broker left behind."""
    with dev_service_env(tmp_path / "dev-broker", "STREAMLET_DEV_BROKER_DIR", "the Kafka broker") as env:
        yield env


def streamlet(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamlet", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)


@pytest.mark.broker
def test_broker_start_status_stop(dev_broker_env: dict[str, str]) -> None:
    assert streamlet(dev_broker_env, "broker", "status").returncode == 3

    port = local_broker.free_ports(1)[0]
    started = streamlet(dev_broker_env, "broker", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == f"127.0.0.1:{port}"
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # the broker outlived the command that started it

    status = streamlet(dev_broker_env, "broker", "status")
    assert status.returncode == 0 and f"running at 127.0.0.1:{port}" in status.stdout

    again = streamlet(dev_broker_env, "broker", "start")
    assert again.returncode == 0 and again.stdout.strip() == f"127.0.0.1:{port}"
    assert "already running" in again.stderr

    pid = json.loads((Path(dev_broker_env["STREAMLET_DEV_BROKER_DIR"]) / "state.json").read_text())["pid"]
    stopped = streamlet(dev_broker_env, "broker", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not local_broker._pid_alive(pid)
    assert streamlet(dev_broker_env, "broker", "status").returncode == 3
    assert streamlet(dev_broker_env, "broker", "stop").stdout.strip() == "not running"


def test_broker_start_without_java_prints_one_sentence(dev_broker_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = dict(dev_broker_env, PATH=str(empty_bin))
    env.pop("JAVA_HOME", None)
    result = streamlet(env, "broker", "start")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("streamlet: error: Java was not found")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
