"""Kafka client settings -> aiokafka arguments (streamlet.kafka.client_settings), without a broker.

The SASL_SSL connection itself is tested against the real broker in
tests/integration/test_secured_cluster.py; here: prefixes, mapping, refusals, warnings and redaction.
"""

from __future__ import annotations

import logging
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.abc import AbstractTokenProvider

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.kafka import client_settings
from streamlet.kafka.client_settings import (
    ClientRole,
    client_kwargs,
    parse_jaas_config,
    redact,
    resolved_settings,
    secret_values,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSWORD = "s3cr3t-Pa55word"


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    client_settings._warned.clear()  # each warning is said once per process
    yield
    client_settings._warned.clear()


def kwargs(role: ClientRole = ClientRole.MAIN_CONSUMER, /, **settings: Any) -> dict[str, Any]:
    return client_kwargs(StreamsConfig({"application.id": "app", **settings}), role)


def sasl(mechanism: str = "SCRAM-SHA-512", module: str = SCRAM, **extra: Any) -> dict[str, Any]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="alice" password="{PASSWORD}";', **extra}


# -- prefixes ----------------------------------------------------------------------------------------------------
def test_prefixes_follow_kafka_streams_precedence() -> None:
    config = StreamsConfig({"application.id": "app", "fetch.max.wait.ms": 100, "consumer.fetch.max.wait.ms": 200,
                            "main.consumer.fetch.max.wait.ms": 300, "request.timeout.ms": 1000,
                            "admin.request.timeout.ms": 2000, "producer.linger.ms": 50})
    assert client_kwargs(config, ClientRole.MAIN_CONSUMER)["fetch_max_wait_ms"] == 300
    assert client_kwargs(config, ClientRole.RESTORE_CONSUMER)["fetch_max_wait_ms"] == 200
    restore_first = config.with_overrides(**{"restore.consumer.fetch.max.wait.ms": 400})
    assert client_kwargs(restore_first, ClientRole.RESTORE_CONSUMER)["fetch_max_wait_ms"] == 400
    assert client_kwargs(config, ClientRole.ADMIN)["request_timeout_ms"] == 2000
    assert client_kwargs(config, ClientRole.PRODUCER)["request_timeout_ms"] == 1000
    assert client_kwargs(config, ClientRole.PRODUCER)["linger_ms"] == 50
    assert "fetch_max_wait_ms" not in client_kwargs(config, ClientRole.PRODUCER)


def test_a_prefixed_security_setting_reaches_only_its_client() -> None:
    config = StreamsConfig({"application.id": "app", **{f"producer.{k}": v for k, v in sasl().items()}})
    assert client_kwargs(config, ClientRole.PRODUCER)["sasl_plain_password"] == PASSWORD
    assert client_kwargs(config, ClientRole.MAIN_CONSUMER)["security_protocol"] == "PLAINTEXT"
    assert "sasl_mechanism" not in client_kwargs(config, ClientRole.ADMIN)


def test_streamlet_defaults_and_their_overrides() -> None:
    producer = kwargs(ClientRole.PRODUCER)
    assert (producer["linger_ms"], producer["max_batch_size"]) == (5, 1024 * 1024)
    main = kwargs(**{"session.timeout.ms": 10000, "main.consumer.max.poll.records": 7})
    assert (main["session_timeout_ms"], main["max_poll_records"], main["auto_offset_reset"]) == (10000, 7, "earliest")
    assert "session_timeout_ms" not in kwargs(ClientRole.RESTORE_CONSUMER)
    assert kwargs(**{"client.id": "mine"})["client_id"] == "mine"
    assert kwargs(ClientRole.PRODUCER, **{"compression.type": "gzip"})["compression_type"] == "gzip"
    with pytest.raises(ConfigError, match="compression.type"):
        kwargs(ClientRole.PRODUCER, **{"compression.type": "brotli"})


# -- SASL --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mechanism", "module"), [("PLAIN", PLAIN), ("SCRAM-SHA-256", SCRAM),
                                                   ("SCRAM-SHA-512", SCRAM)])
def test_sasl_credentials_come_from_the_jaas_config(mechanism: str, module: str) -> None:
    result = kwargs(ClientRole.ADMIN, **sasl(mechanism, module))
    assert result["sasl_mechanism"] == mechanism
    assert (result["sasl_plain_username"], result["sasl_plain_password"]) == ("alice", PASSWORD)
    assert result["security_protocol"] == "SASL_PLAINTEXT"


def test_jaas_values_may_hold_quotes_semicolons_and_spaces() -> None:
    module, options = parse_jaas_config(f'{SCRAM} required\n  username="a b" password="x\\"y;z" ;')
    assert module == SCRAM
    assert options == {"username": "a b", "password": 'x"y;z'}


@pytest.mark.parametrize("settings", [
    sasl(module=PLAIN),  # the wrong login module for SCRAM
    sasl(**{"sasl.jaas.config": f"{SCRAM} required username=alice password"}),  # malformed
    sasl(**{"sasl.jaas.config": f'{SCRAM} required password="{PASSWORD}";'}),  # no username
    {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"},  # no jaas config at all
])
def test_a_bad_jaas_config_is_refused_without_quoting_the_password(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as caught:
        kwargs(**settings)
    assert PASSWORD not in str(caught.value)
    assert "sasl" in str(caught.value)


@pytest.mark.parametrize(("settings", "named"), [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI"),
    ({"security.protocol": "SASL_SSL"}, "GSSAPI"),  # Kafka's default mechanism
    ({"security.protocol": "KERBEROS"}, "security.protocol"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "JKS", "ssl.truststore.location": "/x.jks"}, "PEM"),
])
def test_what_cannot_be_honoured_safely_is_an_error(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        kwargs(**settings)


class _Provider(AbstractTokenProvider):
    async def token(self) -> str:
        return "class-token"


def _token() -> str:
    return "function-token"


async def _async_token() -> str:
    return "async-token"


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "expected"), [
    (_Provider(), "class-token"), (_Provider, "class-token"), (_token, "function-token"),
    (_async_token, "async-token"), (f"{__name__}:_token", "function-token"),
])
async def test_oauthbearer_takes_a_token_provider(provider: Any, expected: str) -> None:
    result = kwargs(**{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                       "sasl.oauthbearer.token.provider": provider})
    assert result["sasl_mechanism"] == "OAUTHBEARER"
    assert await result["sasl_oauth_token_provider"].token() == expected


def test_oauthbearer_without_a_provider_says_what_to_set() -> None:
    with pytest.raises(ConfigError, match="sasl.oauthbearer.token.provider"):
        kwargs(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"})
    with pytest.raises(ConfigError, match="cannot import"):
        kwargs(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                  "sasl.oauthbearer.token.provider": "no_such_module:provider"})


# -- TLS ---------------------------------------------------------------------------------------------------------
def _certificate(directory: Path, name: str, key_password: str | None = None) -> tuple[Path, Path]:
    key, cert = directory / f"{name}-key.pem", directory / f"{name}-cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-subj", f"/CN={name}",
                    "-keyout", str(key), "-out", str(cert),
                    *(["-passout", f"pass:{key_password}"] if key_password else ["-nodes"])],
                   check=True, capture_output=True)
    return cert, key


def test_ssl_trusts_the_pem_truststore_and_checks_host_names(tmp_path: Path) -> None:
    ca, _ = _certificate(tmp_path, "ca")
    context = kwargs(**{"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                        "ssl.truststore.location": str(ca)})["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "ca"),),)]
    inline = kwargs(**{"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                       "ssl.truststore.certificates": ca.read_text().replace("\n", " "),
                       "ssl.endpoint.identification.algorithm": ""})["ssl_context"]
    assert len(inline.get_ca_certs()) == 1 and not inline.check_hostname
    librdkafka_style = kwargs(**{"security.protocol": "SSL", "ssl.ca.location": str(ca)})["ssl_context"]
    assert len(librdkafka_style.get_ca_certs()) == 1


def test_mutual_tls_loads_the_client_certificate_and_key(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path, "client", key_password=PASSWORD)
    keystore = tmp_path / "keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    base = {"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.key.password": PASSWORD}
    for settings in ({"ssl.keystore.location": str(keystore)},
                     {"ssl.keystore.certificate.chain": cert.read_text(), "ssl.keystore.key": key.read_text()},
                     {"ssl.certificate.location": str(cert), "ssl.key.location": str(key)}):
        assert isinstance(kwargs(**base, **settings)["ssl_context"], ssl.SSLContext)
    with pytest.raises(ConfigError, match="client certificate") as caught:
        kwargs(**{**base, "ssl.key.password": "not-" + PASSWORD}, **{"ssl.keystore.location": str(keystore)})
    assert PASSWORD not in str(caught.value)


# -- reporting and redaction -------------------------------------------------------------------------------------
def test_settings_that_will_not_apply_are_each_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    settings = {"retries": 3, "consumer.group.id": "other", "producer.transactional.id": "t",
                "frobnicate.ms": 1, "producer.fetch.max.wait.ms": 5, "topology.optimization": "all",
                "global.consumer.fetch.max.wait.ms": 9, "restore.consumer.auto.offset.reset": "latest"}
    with caplog.at_level(logging.WARNING, logger="streamlet.kafka.client_settings"):
        for role in ClientRole:
            kwargs(role, **settings)
    text = caplog.text
    assert "retries is a Kafka client setting that streamlet's client (aiokafka) cannot apply" in text
    assert "consumer.group.id is overridden by streamlet" in text
    assert "producer.transactional.id is overridden by streamlet" in text
    assert "unknown setting frobnicate.ms" in text
    assert "producer.fetch.max.wait.ms does not apply to the producer" in text
    assert "topology.optimization is a Kafka Streams setting that streamlet does not implement" in text
    assert "global.consumer.fetch.max.wait.ms is ignored" in text
    assert "restore.consumer.auto.offset.reset is overridden" in text
    assert text.count("unknown setting frobnicate.ms") == 1  # once, not once per client
    assert "frobnicate.ms: neither a Kafka Streams setting streamlet knows nor a Kafka client setting; it is " \
        "ignored\n" in text  # nothing close to suggest


def test_a_misspelt_setting_is_warned_about_with_the_key_it_resembles(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamlet.kafka.client_settings"):
        for role in ClientRole:
            kwargs(role, **{"comit.interval.ms": 50, "producer.linger.msec": 5, "sesion.timeout.ms": 7000})
    assert "unknown setting comit.interval.ms" in caplog.text
    assert "(did you mean commit.interval.ms?)" in caplog.text
    assert "(did you mean producer.linger.ms?)" in caplog.text
    assert "(did you mean session.timeout.ms?)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="streamlet.kafka.client_settings"):
        kwargs(**{"session.timeout.ms": 10000, "transaction.timeout.ms": 5000})  # streamlet's own settings
    assert caplog.text == ""


def test_secrets_are_redacted_wherever_a_config_is_shown() -> None:
    jaas = f'{SCRAM} required username="alice" password="{PASSWORD}";'
    config = StreamsConfig({"application.id": "app", "sasl.jaas.config": jaas, "producer.ssl.key.password": "k3y",
                            "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----", "ssl.truststore.password": "tp",
                            "ssl.truststore.location": "/etc/ca.pem"})
    shown = repr(config) + str(redact(config))
    for secret in (PASSWORD, "k3y", "PRIVATE KEY", "tp'"):
        assert secret not in shown
    assert "/etc/ca.pem" in shown and "[hidden]" in shown
    assert sorted(secret_values(config)) == sorted([PASSWORD, "k3y", "-----BEGIN PRIVATE KEY-----", "tp"])
    assert resolved_settings(config, ClientRole.PRODUCER)["ssl.key.password"] == "k3y"


# -- client ids and static membership ----------------------------------------------------------------------------
PROCESS = "8a3b2c1d-0000-4000-8000-00000000abcd"


def test_client_ids_take_kafka_streams_forms_with_the_process_id() -> None:
    ids = client_settings.ClientIds.of({"application.id": "orders"}, PROCESS, thread=2)
    assert ids.of_role(ClientRole.MAIN_CONSUMER) == f"orders-{PROCESS}-StreamThread-2-consumer"
    assert ids.of_role(ClientRole.RESTORE_CONSUMER) == f"orders-{PROCESS}-StreamThread-2-restore-consumer"
    assert ids.of_role(ClientRole.PRODUCER) == f"orders-{PROCESS}-StreamThread-2-producer"
    assert ids.of_role(ClientRole.ADMIN) == f"orders-{PROCESS}-admin"
    assert ids.global_consumer == f"orders-{PROCESS}-GlobalStreamThread-global-consumer"


def test_a_client_id_setting_replaces_application_id_and_process_id() -> None:
    ids = client_settings.ClientIds.of({"application.id": "orders", "client.id": "billing"}, PROCESS)
    assert ids.of_role(ClientRole.MAIN_CONSUMER) == "billing-StreamThread-1-consumer"
    assert ids.of_role(ClientRole.ADMIN) == "billing-admin"
    # ... and reaches aiokafka as the client's client_id
    config = StreamsConfig({"application.id": "orders", "client.id": "billing", "bootstrap.servers": "b:9092"})
    assert client_kwargs(config, ClientRole.PRODUCER, client_id=ids.of_role(ClientRole.PRODUCER))["client_id"] == \
        "billing-StreamThread-1-producer"


def test_group_instance_id_gets_the_worker_number_and_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamlet.kafka.client_settings"):
        for role in ClientRole:
            kwargs(role, **{"group.instance.id": "pod-0"})
    assert "group.instance.id" not in caplog.text
    assert client_settings.group_instance_id({"application.id": "a", "group.instance.id": "pod-0"}, 3) == "pod-0-3"
    assert client_settings.group_instance_id({"application.id": "a", "main.consumer.group.instance.id": "p"}) == "p-1"
    assert client_settings.group_instance_id({"application.id": "a"}) is None
    with caplog.at_level(logging.WARNING, logger="streamlet.kafka.client_settings"):
        kwargs(ClientRole.PRODUCER, **{"producer.group.instance.id": "x"})
    assert "producer.group.instance.id does not apply to the producer" in caplog.text
