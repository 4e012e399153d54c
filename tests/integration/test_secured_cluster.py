"""Secured clusters: WordCount under exactly_once_v2 over SASL_SSL with exactly Kafka Streams' documented
ACLs; one missing ACL and a wrong password fail clearly; no secret reaches the logs of these runs.

One broker for the module (`LocalKafkaBroker(sasl_users=..., acls=True)`): the harness creates topics,
ACLs and input through the PLAINTEXT listener (a super-user), the application connects as `alice`
over SASL_SSL with the settings `client_settings("alice")` gives, from a config file.
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
import struct
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import split_words
from streamlet.kafka.client_settings import secret_values
from streamlet.testing.broker_acls import create_acls, streams_application_acls
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

TARGET = "tests.integration.wordcount_app:topology"
ALICE_PASSWORD = f"alice-{secrets.token_hex(8)}"
WRONG_PASSWORD = f"wrong-{secrets.token_hex(8)}"
WORDS = ["kafka", "streams", "python", "secure", "sasl", "scram", "acl", "tls"]

_RUN_LOGS: dict[str, Path] = {}  # scenario -> the `streamlet run` log of that scenario


@pytest.fixture(scope="module")
def secured_broker() -> Iterator[LocalKafkaBroker]:
    with LocalKafkaBroker(sasl_users={"alice": ALICE_PASSWORD}, acls=True) as broker:
        yield broker


def _app(broker: LocalKafkaBroker, tmp_path: Path, app_id: str, inp: str, out: str,
         settings: dict[str, Any]) -> AppProcess:
    """`streamlet run` WordCount with its secrets in a config file (not on the command line)."""
    config = {**settings, "application.id": app_id, "processing.guarantee": "exactly_once_v2",
              "state.dir": str(tmp_path / "state"), "commit.interval.ms": 200}
    config_file = tmp_path / "app.json"
    config_file.write_text(json.dumps(config))
    config_file.chmod(0o600)
    return AppProcess(TARGET, {}, tmp_path / "app.log", env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out},
                      extra_args=["--config", str(config_file), "--log-level", "DEBUG"])


async def _topics(broker: LocalKafkaBroker) -> tuple[str, str, str]:
    suffix = uuid.uuid4().hex[:8]
    app_id, inp, out = f"secure-wc-{suffix}", f"secure-in-{suffix}", f"secure-out-{suffix}"
    await create_topics(broker.bootstrap_servers, {inp: 2, out: 2})
    return app_id, inp, out


async def _wait_exit(app: AppProcess, timeout: float) -> int:
    assert app.proc is not None
    deadline = time.monotonic() + timeout
    while app.proc.poll() is None:
        if time.monotonic() > deadline:
            app.stop()
            raise AssertionError(f"the app did not fail within {timeout}s:\n{app.log_text()[-3000:]}")
        await asyncio.sleep(0.2)
    app.stop()
    return app.proc.returncode


async def test_wordcount_exactly_once_over_sasl_ssl_with_the_documented_acls(
        secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    app_id, inp, out = await _topics(secured_broker)
    await create_acls(secured_broker.bootstrap_servers,
                      streams_application_acls("User:alice", app_id, [inp], [out], exactly_once=True))
    rng = random.Random(11)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5))) for _ in range(300)]
    expected = Counter(w for line in lines for w in split_words(line))
    await produce(secured_broker.bootstrap_servers, inp,
                  [(str(i).encode(), line.encode()) for i, line in enumerate(lines)])

    app = _app(secured_broker, tmp_path, app_id, inp, out, secured_broker.client_settings("alice")).start()
    _RUN_LOGS["exactly-once run"] = app.log_path
    try:
        def complete(records: list[Any]) -> bool:
            latest = {r.key.decode(): struct.unpack(">q", r.value)[0] for r in records}
            return latest == dict(expected)

        await read_until(secured_broker.bootstrap_servers, out, complete, timeout=60,
                         isolation_level="read_committed")
    finally:
        code = app.stop()
    assert code == 0, app.log_text()[-3000:]
    # Only the SASL_SSL port was given, and alice is only allowed what the ACLs grant: the run above used both.
    assert "authentication failed" not in app.log_text().lower()


async def test_a_missing_acl_fails_naming_the_resource_and_the_permission(
        secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    app_id, inp, out = await _topics(secured_broker)
    acls = streams_application_acls("User:alice", app_id, [inp], [out], exactly_once=True)
    without_read = [acl for acl in acls if not (acl.resource_name == inp and acl.operation == "READ")]
    assert len(without_read) == len(acls) - 1
    await create_acls(secured_broker.bootstrap_servers, without_read)

    app = _app(secured_broker, tmp_path, app_id, inp, out, secured_broker.client_settings("alice")).start()
    _RUN_LOGS["missing ACL"] = app.log_path
    code = await _wait_exit(app, 60)
    log = app.log_text()
    assert code == 1, log[-3000:]
    error = next(line for line in log.splitlines() if line.startswith("streamlet: error:"))
    assert f"topic {inp!r} needs READ" in error, error
    assert "TOPIC_AUTHORIZATION_FAILED" in error


async def test_a_missing_transactional_id_acl_fails_instead_of_rejoining_forever(
        secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    """Without the TransactionalId ACL the exactly-once producer cannot start. That is no transient
    fault: the app must stop with a message naming the transactional id, not rejoin the group again
    and again (it did, about 1,500 rebalances in 40 s, leaking a producer each time)."""
    app_id, inp, out = await _topics(secured_broker)
    acls = streams_application_acls("User:alice", app_id, [inp], [out], exactly_once=True)
    await create_acls(secured_broker.bootstrap_servers, [a for a in acls if a.resource_type != "TRANSACTIONAL_ID"])

    app = _app(secured_broker, tmp_path, app_id, inp, out, secured_broker.client_settings("alice")).start()
    code = await _wait_exit(app, 60)
    log = app.log_text()
    assert code == 1, log[-3000:]
    error = next(line for line in log.splitlines() if line.startswith("streamlet: error:"))
    assert "TRANSACTIONAL_ID" in error and repr(app_id) in error, error
    assert log.count("Joined group") <= 3, "it must not keep rejoining"


async def test_a_wrong_password_fails_within_a_minute_saying_authentication_failed(
        secured_broker: LocalKafkaBroker, tmp_path: Path) -> None:
    app_id, inp, out = await _topics(secured_broker)
    settings = secured_broker.client_settings("alice", password=WRONG_PASSWORD)
    began = time.monotonic()
    app = _app(secured_broker, tmp_path, app_id, inp, out, settings).start()
    _RUN_LOGS["wrong password"] = app.log_path
    code = await _wait_exit(app, 60)
    log = app.log_text()
    assert code == 1, log[-3000:]
    assert time.monotonic() - began < 60
    error = next(line for line in log.splitlines() if line.startswith("streamlet: error:"))
    assert "authentication failed" in error and "'alice'" in error and "SCRAM-SHA-512" in error, error


async def test_no_password_or_key_material_in_the_logs_of_these_runs(secured_broker: LocalKafkaBroker) -> None:
    if len(_RUN_LOGS) < 3:
        pytest.skip("reads the logs of the other tests of this module: run the whole module")
    admin_settings = secured_broker.client_settings(secured_broker.admin_user)
    forbidden = [ALICE_PASSWORD, WRONG_PASSWORD, *secret_values(admin_settings), "PRIVATE KEY"]
    key_file = secured_broker.ca_file.with_name("broker-key.pem")
    forbidden += [line for line in key_file.read_text().splitlines() if line and not line.startswith("-----")]
    assert ALICE_PASSWORD in secured_broker.client_settings("alice")["sasl.jaas.config"]  # the needles are real
    for scenario, path in _RUN_LOGS.items():
        text = path.read_text(errors="replace")
        assert len(text) > 200, f"{scenario}: the log is (nearly) empty"
        leaked = [secret[:6] + "..." for secret in forbidden if secret in text]
        assert not leaked, f"{scenario}: secrets in {path}: {leaked}"
