"""Credentials a real registry checks: Apicurio 2.6.13 with authentication on, in front of a real Keycloak
(tests/helpers/keycloak.py) that checks each basic-auth user:password (a Keycloak client's id and secret).

A wrong password fails the application with an error that names `basic.auth.user.info` and the registry's
HTTP 401, no exception handler sees it, and the password is in no log line, no exception text and not in the
config's repr; the right password works end to end, on the real broker under exactly-once.
"""

from __future__ import annotations

import json
import logging
import typing
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import tests.schema_registry.test_faults_on_the_broker as faults
from streamlet.errors import SchemaRegistryAuthError
from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde
from streamlet.testing import local_registry
from streamlet.testing.local_registry import LocalSchemaRegistry
from tests.helpers.kafka import create_topics, produce, read_settled
from tests.helpers.keycloak import LocalKeycloak
from tests.helpers.payments import Balance, balances

pytestmark = [pytest.mark.anyio, pytest.mark.broker, pytest.mark.registry]

USER, PASSWORD, WRONG = "streamlet-app", "right-pw-s3cret", "wrong-pw-s3cret"
REALM, API_CLIENT = "streamlet", "registry-api"


def _answers(url: str) -> bool:  # any HTTP answer: with authentication on, GET /subjects is a 401
    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=2.0):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def checking_registry() -> Iterator[str]:
    """Apicurio checking basic-auth passwords through Keycloak: the URL of its Confluent API."""
    with LocalKeycloak() as keycloak:
        keycloak.create_realm(REALM, {API_CLIENT: None, USER: PASSWORD})
        environment = {"REGISTRY_AUTH_ENABLED": "true", "CLIENT_CREDENTIALS_BASIC_AUTH_ENABLED": "true",
                       "KEYCLOAK_URL": keycloak.url, "KEYCLOAK_REALM": REALM, "KEYCLOAK_API_CLIENT_ID": API_CLIENT}
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("REGISTRY_DATASOURCE_URL", raising=False)  # in memory
            for key, value in environment.items():
                patch.setenv(key, value)
            patch.setattr(local_registry, "_answers", _answers)
            with LocalSchemaRegistry(startup_timeout=600) as registry:
                yield registry.url


def _credentials(password: str) -> dict[str, str]:
    return {"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": f"{USER}:{password}"}


def _writer(url: str, topic: str) -> Any:
    """Another process's producer side: confluent-kafka's AvroSerializer with the right password."""
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{USER}:{PASSWORD}"})
    serializer = AvroSerializer(client, json.dumps(faults.PAYMENT_V1),
                                conf={"subject.name.strategy": topic_subject_name_strategy})
    context = SerializationContext(topic, MessageField.VALUE)
    return lambda value: serializer(value, context)


async def _run(kafka_broker: Any, url: str, tmp_path: Path, password: str
               ) -> tuple[KafkaStreams, str, list[tuple[str, float]]]:
    bootstrap, sfx = kafka_broker.bootstrap_servers, uuid.uuid4().hex[:8]
    inp, out = f"payments-{sfx}", f"balances-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    write = _writer(url, inp)
    payments = faults._payments(12, 0)
    await produce(bootstrap, inp, [(a.encode(), write({"account": a, "amount": x})) for a, x in payments])
    config = {**faults._config(kafka_broker, url, tmp_path, sfx), **_credentials(password)}
    streams = KafkaStreams(balances(inp, out), config)
    await streams.start()
    return streams, out, payments


async def test_a_wrong_password_fails_naming_the_setting_and_is_never_shown(
        kafka_broker: Any, checking_registry: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    streams, _out, _payments = await _run(kafka_broker, checking_registry, tmp_path, WRONG)
    try:
        with anyio.fail_after(120):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.1)
        assert streams.metrics["records-skipped"] == 0  # log_and_continue never saw it: no record's fault
    finally:
        await streams.close()
    error = f"{streams.error} {getattr(streams.error, '__notes__', '')}"
    assert "refused the credentials" in error and "HTTP 401" in error
    assert "check basic.auth.user.info (with basic.auth.credentials.source=USER_INFO)" in error

    writing = GenericAvroSerde(faults.PAYMENT_V1, config={"schema.registry.url": checking_registry,
                                                          **_credentials(WRONG)})
    with pytest.raises(SchemaRegistryAuthError) as refused:
        writing.serializer.serialize("t", {"account": "a", "amount": 1.0})
    assert "HTTP 401" in str(refused.value) and "basic.auth.user.info" in str(refused.value)

    shown = f"{error} {refused.value!r} {caplog.text} {streams.config!r}"
    assert WRONG not in shown and "s3cret" not in shown


async def test_the_right_password_works_end_to_end(kafka_broker: Any, checking_registry: str,
                                                   tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    streams, out, payments = await _run(kafka_broker, checking_registry, tmp_path, PASSWORD)
    try:
        reader = SpecificAvroSerde(Balance, config={"schema.registry.url": checking_registry,
                                                    **_credentials(PASSWORD)})
        got = await read_settled(kafka_broker.bootstrap_servers, out, len(payments), isolation_level="read_committed")
        decoded = [(key.decode() if key else "", typing.cast(Balance, reader.deserializer.deserialize(out, value)))
                   for key, value in got]
        assert decoded == faults._expected(payments)
        assert streams.state is State.RUNNING
    finally:
        await streams.close()
    assert "s3cret" not in caplog.text
