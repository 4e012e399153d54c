"""Kafka client settings: from a `StreamsConfig` to aiokafka keyword arguments, one client role at a time.

Kafka Streams users configure the clients inside an application with Kafka's own setting names
(`security.protocol`, `ssl.truststore.location`, `sasl.jaas.config`, `linger.ms`, ...) and aim a setting
at one client with a prefix. This module is the one place that translates those settings for aiokafka,
so that every client the runtime builds (main consumer, restore/standby consumer, producer, admin)
connects the same way, and so that a setting aiokafka cannot honour is reported instead of silently
dropped: a warning naming it, or a `ConfigError` where ignoring it would be unsafe (a security protocol,
SASL mechanism or key-store format that cannot be honoured would connect differently than asked).

Prefix precedence is Kafka Streams' own: `main.consumer.` > `consumer.` > unprefixed for the main
consumer, `restore.consumer.` > `consumer.` > unprefixed for the restore consumer (which streamlet
also uses for standbys), `producer.` > unprefixed, `admin.` > unprefixed.

Settings streamlet controls itself (the group id, auto-commit, isolation level, transactional id, ...)
are overridden with a warning, as Kafka Streams does. Secrets are never echoed: error messages name
the setting, not its value, and `redact()` masks secrets wherever a configuration is shown.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import inspect
import logging
import os
import re
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aiokafka import errors as kafka_errors
from aiokafka.abc import AbstractTokenProvider

from streamlet.config import (
    DEFAULTS,
    OUTER_JOIN_EMIT_INTERVAL_MS,
    WINDOWED_AGGREGATION_EMIT_INTERVAL_MS,
    StreamsConfig,
)
from streamlet.errors import ConfigError, StreamsError
from streamlet.offset_reset import AutoOffsetReset
from streamlet.redaction import is_secret_key
from streamlet.redaction import redact as redact  # documented as client_settings.redact
from streamlet.serdes import is_serde_setting

log = logging.getLogger(__name__)

TOKEN_PROVIDER_KEY = "sasl.oauthbearer.token.provider"
"""streamlet's OAUTHBEARER hook: an `aiokafka.abc.AbstractTokenProvider` (instance or class), a callable
returning the token (or an awaitable of it), or a `module:attr` string naming one of those."""


class KafkaAuthenticationError(StreamsError):
    """The cluster refused this client's credentials (SASL) or the TLS handshake failed."""


class KafkaAuthorizationError(StreamsError):
    """The cluster authenticated this client but refuses an operation: names the resource and permission."""


class ClientRole(Enum):
    """The clients streamlet builds, each with the prefixes that reach it (most specific first)."""

    MAIN_CONSUMER = ("main.consumer.", "consumer.")
    RESTORE_CONSUMER = ("restore.consumer.", "consumer.")  # also standbys and changelog reading
    PRODUCER = ("producer.",)
    ADMIN = ("admin.",)

    @property
    def prefixes(self) -> tuple[str, ...]:
        return self.value

    @property
    def is_consumer(self) -> bool:
        return self in (ClientRole.MAIN_CONSUMER, ClientRole.RESTORE_CONSUMER)


@dataclass(frozen=True)
class ClientIds:
    """The `client.id` of each Kafka client of one group member, formed as Kafka Streams forms them, so
    that Kafka's group tools (`kafka-consumer-groups`, `kafka-streams-groups`) tell instances and their
    workers apart:

    - `client_id`: the setting `client.id` when set, else `<application.id>-<process id>` (the process id
      is the instance's id, kept in its state directory);
    - `thread_id`: `<client_id>-StreamThread-<n>`, n the worker's number from 1 (`streamlet run --workers`);
    - the main consumer `<thread_id>-consumer`, the restore consumer (restoration and standbys)
      `<thread_id>-restore-consumer`, the producer `<thread_id>-producer`, the admin client
      `<client_id>-admin` and the global tables' consumer `<client_id>-GlobalStreamThread-global-consumer`.
    """

    client_id: str
    thread: int = 1

    @classmethod
    def of(cls, config: StreamsConfig | Mapping[str, Any], process_id: str, thread: int = 1) -> ClientIds:
        """The client ids of worker `thread` of the instance `process_id`."""
        config = StreamsConfig.of(config)
        given = str(config.get("client.id") or "")
        return cls(given or f"{config.application_id}-{process_id}", thread)

    @property
    def thread_id(self) -> str:
        return f"{self.client_id}-StreamThread-{self.thread}"

    @property
    def global_consumer(self) -> str:
        return f"{self.client_id}-GlobalStreamThread-global-consumer"

    def of_role(self, role: ClientRole) -> str:
        """The client id of the client playing `role`."""
        if role is ClientRole.ADMIN:
            return f"{self.client_id}-admin"
        suffix = {ClientRole.MAIN_CONSUMER: "consumer", ClientRole.RESTORE_CONSUMER: "restore-consumer",
                  ClientRole.PRODUCER: "producer"}[role]
        return f"{self.thread_id}-{suffix}"


def group_instance_id(config: StreamsConfig | Mapping[str, Any], thread: int = 1) -> str | None:
    """The main consumer's `group.instance.id` (static membership) for worker `thread`: the setting with
    `-<thread>` appended, as Kafka Streams appends its stream thread's number; None when unset."""
    given = resolved_settings(config, ClientRole.MAIN_CONSUMER).get("group.instance.id")
    return f"{given}-{thread}" if given else None


_ALL_PREFIXES = ("main.consumer.", "restore.consumer.", "global.consumer.", "consumer.", "producer.", "admin.")

# -- the settings streamlet knows ------------------------------------------------------------------------------

_COMMON: dict[str, str] = {  # Kafka name -> aiokafka keyword (integers), every client
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
}
_CONSUMER_INTS: dict[str, str] = {
    "fetch.max.wait.ms": "fetch_max_wait_ms",
    "fetch.max.bytes": "fetch_max_bytes",
    "fetch.min.bytes": "fetch_min_bytes",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "max.poll.interval.ms": "max_poll_interval_ms",
}
_MAIN_CONSUMER_INTS: dict[str, str] = {  # keys with streamlet defaults, used by the group member only
    "session.timeout.ms": "session_timeout_ms",
    "heartbeat.interval.ms": "heartbeat_interval_ms",
    "max.poll.records": "max_poll_records",
}
_PRODUCER_INTS: dict[str, str] = {
    "linger.ms": "linger_ms",
    "batch.size": "max_batch_size",
    "max.request.size": "max_request_size",
}
_PRODUCER_DEFAULTS: dict[str, Any] = {"linger_ms": 5, "max_batch_size": 1024 * 1024,
                                      "max_request_size": 4 * 1024 * 1024}
_COMPRESSION = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

_SSL_KEYS = frozenset({
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.password",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.keystore.password", "ssl.key.password", "ssl.endpoint.identification.algorithm",
    "ssl.enabled.protocols", "ssl.protocol",
    # librdkafka's names (confluent-kafka-python users know them): PEM files
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
})
_SASL_KEYS = frozenset({"sasl.mechanism", "sasl.jaas.config", TOKEN_PROVIDER_KEY})

_HANDLED = frozenset({"bootstrap.servers", "client.id", "security.protocol", "auto.offset.reset",
                      "compression.type", "check.crcs", "client.rack", "group.instance.id", *_COMMON, *_CONSUMER_INTS,
                      *_MAIN_CONSUMER_INTS, *_PRODUCER_INTS, *_SSL_KEYS, *_SASL_KEYS})

# Kafka client settings aiokafka has no equivalent for: accepted, and reported as not applied.
_UNSUPPORTED = frozenset({
    "retries", "delivery.timeout.ms", "max.in.flight.requests.per.connection", "buffer.memory",
    "max.block.ms", "send.buffer.bytes", "receive.buffer.bytes", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
    "client.dns.lookup", "default.api.timeout.ms", "interceptor.classes", "metric.reporters",
    "metrics.num.samples", "metrics.sample.window.ms", "auto.include.jmx.reporter",
    "enable.metrics.push", "allow.auto.create.topics", "exclude.internal.topics", "partitioner.class",
    "partitioner.ignore.keys", "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
    "group.remote.assignor", "internal.leave.group.on.close",
    "metadata.max.idle.ms", "retry.backoff.max.ms", "security.providers",
    "ssl.cipher.suites", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "ssl.provider",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.client.callback.handler.class", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms", "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.retry.backoff.max.ms", "sasl.login.retry.backoff.ms", "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
})
# Settings streamlet decides per client (Kafka Streams overrides the same ones): a user value is ignored.
_CONTROLLED = {
    "acks": "its producer is idempotent, which needs acks=all",
    "group.id": "the application.id is the group id",
    "enable.auto.commit": "streamlet commits offsets itself",
    "auto.commit.interval.ms": "streamlet commits offsets itself",
    "isolation.level": "it follows processing.guarantee",
    "partition.assignment.strategy": "streamlet's own assignor is required",
    "transactional.id": "it is derived from the application.id under exactly_once_v2",
    "enable.idempotence": "streamlet's producer is always idempotent",
    "transaction.timeout.ms": "use the unprefixed transaction.timeout.ms setting",
}
# Kafka Streams settings streamlet does not implement: kept (no error), but said to have no effect.
_STREAMS_NOT_IMPLEMENTED = frozenset({
    "topology.optimization", "rocksdb.config.setter", "state.cleanup.delay.ms",
    "acceptable.recovery.lag", "max.warmup.replicas", "probing.rebalance.interval.ms",
    "cache.max.bytes.buffering", "upgrade.from",
    "built.in.metrics.version", "default.client.supplier", "window.size.ms", "windowed.inner.class.serde",
    "rack.aware.assignment.strategy", "rack.aware.assignment.tags", "rack.aware.assignment.traffic_cost",
    "rack.aware.assignment.non_overlap_cost", "client.tag", "window.store.change.log.additional.retention.ms",
    "default.windowed.key.serde.inner", "default.windowed.value.serde.inner", "log.summary.interval.ms",
})

# -- redaction (the rules live in streamlet.redaction, beside the configuration they mask) ------------------------
def secret_values(config: Mapping[str, Any]) -> list[str]:
    """Every secret string in `config` (passwords inside JAAS configs included): what must not leak."""
    found: list[str] = []
    for key, value in config.items():
        if not is_secret_key(str(key)) or not isinstance(value, str) or not value:
            continue
        if str(key).endswith("sasl.jaas.config"):
            found += [v for k, v in _jaas_options(value).items() if is_secret_key(k) and v]
        else:
            found.append(value)
    return found


# -- resolution --------------------------------------------------------------------------------------------------
def resolved_settings(config: StreamsConfig | Mapping[str, Any], role: ClientRole) -> dict[str, Any]:
    """The settings that reach `role`: unprefixed client settings, overridden by the role's prefixes
    (the most specific wins). Keys of other roles' prefixes are left out."""
    config = StreamsConfig.of(config)
    values: dict[str, Any] = {}
    for key, value in config.items():
        if not key.startswith(_ALL_PREFIXES):
            values[key] = value
    for prefix in reversed(role.prefixes):
        for key, value in config.items():
            if key.startswith(prefix):
                values[key[len(prefix):]] = value
    return values


def client_kwargs(config: StreamsConfig | Mapping[str, Any], role: ClientRole,
                  *, client_id: str | None = None) -> dict[str, Any]:
    """aiokafka keyword arguments for one client: connection, security and the tunable settings.

    Settings streamlet controls (group id, isolation level, transactional id, ...) are left for the
    caller to add; a user value of one of them is reported once and ignored.
    """
    config = StreamsConfig.of(config)
    settings = resolved_settings(config, role)
    _report_unusable(config, role)
    app_id = config.get("application.id")  # none for a tool that is no application (`streamlet topics create`)
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings["bootstrap.servers"],
        "client_id": client_id or settings.get("client.id") or (f"{app_id}-streamlet" if app_id else "streamlet"),
    }
    ints = dict(_COMMON)
    if role.is_consumer:
        ints.update(_CONSUMER_INTS)
    if role is ClientRole.MAIN_CONSUMER:
        ints.update(_MAIN_CONSUMER_INTS)
    if role is ClientRole.PRODUCER:
        kwargs.update(_PRODUCER_DEFAULTS)
        ints.update(_PRODUCER_INTS)
    for key, name in ints.items():
        if settings.get(key) is not None:
            kwargs[name] = _as_int(key, settings[key])
    if role is ClientRole.MAIN_CONSUMER:
        # Starting positions are sought explicitly (runtime/positions.py); this is the fallback of an
        # out-of-range fetch. aiokafka knows no by_duration: such a partition restarts at its beginning.
        policy = AutoOffsetReset.parse(settings.get("auto.offset.reset") or "earliest")
        kwargs["auto_offset_reset"] = "earliest" if policy.kind == "by_duration" else policy.kind
    if role.is_consumer:
        if settings.get("check.crcs") is not None:
            kwargs["check_crcs"] = _as_bool("check.crcs", settings["check.crcs"])
        if settings.get("client.rack"):
            kwargs["client_rack"] = str(settings["client.rack"])
    if role is ClientRole.PRODUCER and settings.get("compression.type") is not None:
        codec = str(settings["compression.type"]).lower()
        if codec not in _COMPRESSION:
            raise ConfigError(f"compression.type must be one of {', '.join(_COMPRESSION)}, got {codec!r}")
        kwargs["compression_type"] = _COMPRESSION[codec]
    kwargs.update(security_kwargs(settings))
    return kwargs


# -- security ----------------------------------------------------------------------------------------------------
def security_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`security_protocol`, `ssl_context` and the SASL arguments for settings already resolved for one
    client (`resolved_settings`)."""
    protocol = str(settings.get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in _SECURITY_PROTOCOLS:
        raise ConfigError(f"security.protocol must be one of {', '.join(_SECURITY_PROTOCOLS)}, got {protocol!r}")
    kwargs: dict[str, Any] = {"security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        kwargs["ssl_context"] = _ssl_context(settings)
    elif any(settings.get(k) for k in ("ssl.truststore.location", "ssl.keystore.location", "ssl.ca.location")):
        _warn_once(f"ssl.* settings are ignored: security.protocol is {protocol} (use SSL or SASL_SSL for TLS)")
    if protocol.startswith("SASL_"):
        kwargs.update(_sasl_kwargs(settings))
    elif settings.get("sasl.mechanism") or settings.get("sasl.jaas.config"):
        _warn_once(f"sasl.* settings are ignored: security.protocol is {protocol} (use SASL_SSL or SASL_PLAINTEXT)")
    return kwargs


def _ssl_context(settings: Mapping[str, Any]) -> ssl.SSLContext:
    """A TLS context from PEM material, as Java's `ssl.truststore.*` / `ssl.keystore.*` with type PEM
    describe it (files or inline values), or librdkafka's `ssl.ca.location` / `ssl.certificate.location` /
    `ssl.key.location`. JKS and PKCS12 stores cannot be read here: convert them to PEM."""
    for store in ("truststore", "keystore"):
        kind = str(settings.get(f"ssl.{store}.type") or "").upper()
        given = settings.get(f"ssl.{store}.location")
        if kind not in ("", "PEM") or (given and not kind and not _is_pem_file(str(given))):
            raise ConfigError(
                f"ssl.{store}.type {kind or 'JKS (the default)'} is not supported: streamlet reads PEM only. "
                f"Convert the {store} to PEM (keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes) "
                f"and set ssl.{store}.type=PEM")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    cafile = settings.get("ssl.truststore.location") or settings.get("ssl.ca.location")
    cadata = settings.get("ssl.truststore.certificates")
    try:
        if cafile or cadata:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile or None,
                                                 cadata=_pem_text(cadata) if cadata else None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the trusted certificates of ssl.truststore ({_reason(exc)})") from None
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None and str(algorithm).strip() == "":
        context.check_hostname = False  # Java's empty value: no host name check (the chain is still verified)
    elif algorithm is not None and str(algorithm).lower() != "https":
        raise ConfigError(f"ssl.endpoint.identification.algorithm must be https or empty, got {algorithm!r}")
    protocols = settings.get("ssl.enabled.protocols")
    if protocols:
        versions = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}
        names = [p.strip().upper() for p in str(protocols).split(",") if p.strip()]
        if not names or any(name not in versions for name in names):
            raise ConfigError(f"ssl.enabled.protocols may list TLSv1.2 and TLSv1.3, got {protocols!r}")
        context.minimum_version = min(versions[name] for name in names)
        context.maximum_version = max(versions[name] for name in names)
    _load_client_certificate(context, settings)
    return context


def _load_client_certificate(context: ssl.SSLContext, settings: Mapping[str, Any]) -> None:
    """Mutual TLS: the client's certificate chain and key, from one PEM key store file, separate files,
    or inline PEM values (written to a private temporary file for the moment `ssl` needs a path)."""
    keystore = settings.get("ssl.keystore.location")
    certfile = settings.get("ssl.certificate.location")
    keyfile = settings.get("ssl.key.location")
    chain, key = settings.get("ssl.keystore.certificate.chain"), settings.get("ssl.keystore.key")
    password = settings.get("ssl.key.password")
    if settings.get("ssl.truststore.password"):
        _warn_once("ssl.truststore.password is not used: a PEM trust store has no password")
    if settings.get("ssl.keystore.password") and not password:
        _warn_once("ssl.keystore.password is not used for a PEM key store; an encrypted key needs ssl.key.password")
    if not (keystore or certfile or chain):
        if key or keyfile:
            raise ConfigError("a client key is set but no client certificate "
                              "(ssl.keystore.certificate.chain or ssl.certificate.location)")
        return
    try:
        if chain:
            if not key:
                raise ConfigError("ssl.keystore.certificate.chain is set without ssl.keystore.key")
            descriptor, path = tempfile.mkstemp(prefix="streamlet-client-", suffix=".pem")
            try:
                with os.fdopen(descriptor, "w") as handle:  # mkstemp: mode 0600, owner only
                    handle.write(_pem_text(key) + "\n" + _pem_text(chain) + "\n")
                context.load_cert_chain(path, password=password or None)
            finally:
                os.unlink(path)
        else:
            context.load_cert_chain(str(keystore or certfile), keyfile=str(keyfile) if keyfile else None,
                                    password=password or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the client certificate and key of ssl.keystore ({_reason(exc)})") from None


def _pem_text(value: Any) -> str:
    """Java's inline PEM values may come as one line (newlines replaced by spaces in .properties)."""
    text = str(value).strip()
    if "\n" in text:
        return text
    blocks = re.findall(r"(-----BEGIN [A-Z ]+-----)(.*?)(-----END [A-Z ]+-----)", text)
    return "\n".join(f"{begin}\n" + "\n".join(body.split()) + f"\n{end}" for begin, body, end in blocks) or text


def _is_pem_file(path: str) -> bool:
    """Java's default store type is JKS; a PEM file given without `ssl.*.type=PEM` is still read as PEM."""
    try:
        with open(path, "rb") as handle:
            return b"-----BEGIN" in handle.read(64 * 1024)
    except OSError:
        return True  # let the loader report the unreadable file


def _reason(exc: OSError) -> str:
    """The kind of failure without a secret: an OSError's text names a file, an SSLError its reason."""
    if isinstance(exc, ssl.SSLError):
        return f"SSL error: {exc.reason or 'invalid PEM data or wrong key password'}"
    return f"{type(exc).__name__}: {exc.strerror or 'unreadable'}{f' ({exc.filename})' if exc.filename else ''}"


_JAAS = re.compile(
    r"""^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<options>.*?)\s*;?\s*$""",
    re.DOTALL)
_JAAS_OPTION = re.compile(r"""([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)""")
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


def _jaas_options(text: str) -> dict[str, str]:
    """The options of a one-module JAAS entry (`Module required key="value" ...;`); {} if malformed."""
    match = _JAAS.match(text)
    if match is None:
        return {}
    options = {}
    for key, raw in _JAAS_OPTION.findall(match["options"]):
        options[key] = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
    return options


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """(login module class, options) of `sasl.jaas.config` as Java users write it. The error for a
    malformed value never quotes it (it holds a password)."""
    match = _JAAS.match(str(text))
    if match is None:
        raise ConfigError("sasl.jaas.config is malformed: expected one entry like "
                          "'org.apache.kafka.common.security.scram.ScramLoginModule required "
                          "username=\"...\" password=\"...\";' (value not shown)")
    return match["module"], _jaas_options(text)


def _sasl_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    mechanism = str(settings.get("sasl.mechanism") or "GSSAPI").upper()  # Java's default is GSSAPI
    if mechanism not in _SASL_MECHANISMS:
        raise ConfigError(f"sasl.mechanism {mechanism} is not supported by streamlet (supported: "
                          f"{', '.join(_SASL_MECHANISMS)}); "
                          + ("set sasl.mechanism, Kafka's default is GSSAPI (Kerberos)"
                             if not settings.get("sasl.mechanism") else "use one of those"))
    kwargs: dict[str, Any] = {"sasl_mechanism": mechanism}
    jaas = settings.get("sasl.jaas.config")
    if mechanism == "OAUTHBEARER":
        kwargs["sasl_oauth_token_provider"] = token_provider(settings.get(TOKEN_PROVIDER_KEY))
        if jaas:
            module, _ = parse_jaas_config(str(jaas))
            if module != _LOGIN_MODULES[mechanism]:
                raise ConfigError(f"sasl.jaas.config names {module}, which does not go with OAUTHBEARER")
        return kwargs
    if not jaas:
        raise ConfigError(f"sasl.mechanism {mechanism} needs sasl.jaas.config with a username and password")
    module, options = parse_jaas_config(str(jaas))
    if module != _LOGIN_MODULES[mechanism]:
        raise ConfigError(f"sasl.jaas.config names {module}, but sasl.mechanism {mechanism} needs "
                          f"{_LOGIN_MODULES[mechanism]}")
    if not options.get("username") or "password" not in options:
        raise ConfigError(f"sasl.jaas.config for {mechanism} must set username and password")
    kwargs["sasl_plain_username"] = options["username"]
    kwargs["sasl_plain_password"] = options["password"]
    if settings.get(TOKEN_PROVIDER_KEY):
        _warn_once(f"{TOKEN_PROVIDER_KEY} is ignored: sasl.mechanism is {mechanism}, not OAUTHBEARER")
    return kwargs


class _CallableTokenProvider(AbstractTokenProvider):
    """Adapts a plain function (sync or async) returning the bearer token to aiokafka's interface."""

    def __init__(self, function: Callable[[], str | Awaitable[str]]) -> None:
        self._function = function

    async def token(self) -> str:
        value = self._function()
        if inspect.isawaitable(value):
            value = await value
        return str(value)

    def __repr__(self) -> str:
        return f"<token provider {getattr(self._function, '__qualname__', 'callable')}>"


def token_provider(value: Any) -> AbstractTokenProvider:
    """The OAUTHBEARER token provider from `sasl.oauthbearer.token.provider` (see TOKEN_PROVIDER_KEY)."""
    if value is None or value == "":
        raise ConfigError(f"sasl.mechanism OAUTHBEARER needs {TOKEN_PROVIDER_KEY}: an aiokafka "
                          "AbstractTokenProvider, a function returning the token, or a 'module:attr' naming one "
                          "(Java's login callback handlers cannot run in Python)")
    if isinstance(value, str):
        module_name, _, attr = value.partition(":")
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"{TOKEN_PROVIDER_KEY}: cannot import {value!r} ({type(exc).__name__})") from None
    if isinstance(value, AbstractTokenProvider):
        return value
    if isinstance(value, type) and issubclass(value, AbstractTokenProvider):
        return value()
    if callable(value):
        return _CallableTokenProvider(value)
    raise ConfigError(f"{TOKEN_PROVIDER_KEY} must be an AbstractTokenProvider, a callable or 'module:attr', "
                      f"got a {type(value).__name__}")


# -- connecting -------------------------------------------------------------------------------------------------
_AUTH_ERRORS = (kafka_errors.SaslAuthenticationFailed, kafka_errors.AuthenticationFailedError,
                kafka_errors.UnsupportedSaslMechanismError, kafka_errors.IllegalSaslStateError,
                kafka_errors.AuthenticationMethodNotSupported)
_CONNECTION_KEYS = ("client_id", "request_timeout_ms", "ssl_context", "security_protocol", "sasl_mechanism",
                    "sasl_plain_username", "sasl_plain_password", "sasl_oauth_token_provider")


async def start_client(client: Any, kwargs: Mapping[str, Any]) -> None:
    """`await client.start()`, explaining a failed bootstrap: aiokafka reports only "Unable to bootstrap"
    (the reason goes to its log), so one direct connection finds out whether the credentials or the
    TLS handshake were refused, and says so with `KafkaAuthenticationError`."""
    try:
        await client.start()
    except kafka_errors.KafkaConnectionError:
        reason = await diagnose_connection(kwargs)
        if reason is not None:
            raise reason from None
        raise


async def stop_client(client: Any) -> None:
    """`await client.stop()` for an aiokafka consumer or producer, without letting one of its own
    background tasks' cancellations out.

    aiokafka's stop() cancels its background tasks and awaits them; one that ends cancelled instead of
    returning (a heartbeat cancelled while it sends LeaveGroup to a broker that is away, a fetch task
    cancelled before it first ran) re-raises CancelledError in the caller. Seen in the 60 s outage test:
    that CancelledError ended the group member's clean-up, the member's task ended "cancelled", and
    anyio took it for an ordinary end of the member. Such a cancellation is the client's, not the
    caller's (`Task.cancelling()` is 0): the client's connections are closed and stop() returns. A
    cancellation of the caller itself still propagates."""
    import asyncio

    try:
        await client.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        log.info("stopping %s: one of its background tasks ended cancelled; closing its connections",
                 type(client).__name__)
        connections = getattr(client, "_client", None) or getattr(client, "client", None)
        if connections is not None:
            await connections.close()


async def diagnose_connection(kwargs: Mapping[str, Any], timeout_s: float = 30.0) -> StreamsError | None:
    """Connect once to each bootstrap server as the client would; the authentication or TLS failure
    found, else None (the broker is unreachable or the failure is elsewhere). Never quotes a secret."""
    from aiokafka.conn import create_conn

    servers = kwargs.get("bootstrap_servers") or ""
    hosts = servers.split(",") if isinstance(servers, str) else list(servers)
    options = {key: kwargs[key] for key in _CONNECTION_KEYS if key in kwargs}
    user, mechanism = kwargs.get("sasl_plain_username"), kwargs.get("sasl_mechanism")
    for address in (h.strip() for h in hosts if h.strip()):
        host, _, port = address.rpartition(":")
        try:
            conn = await asyncio.wait_for(create_conn(host or address, int(port or 9092), **options), timeout_s)
        except _AUTH_ERRORS as exc:
            who = f"user {user!r}" if user else "this client"
            return KafkaAuthenticationError(
                f"authentication failed at {address} for {who} with SASL mechanism {mechanism}: {exc} "
                "(check the username and password in sasl.jaas.config, and sasl.mechanism)")
        except ssl.SSLCertVerificationError as exc:
            return KafkaAuthenticationError(
                f"TLS handshake with {address} failed: the broker's certificate is not trusted "
                f"({exc.verify_message}); check ssl.truststore.location / ssl.endpoint.identification.algorithm")
        except ssl.SSLError as exc:
            return KafkaAuthenticationError(f"TLS handshake with {address} failed ({exc.reason}); is "
                                            "security.protocol right for that listener?")
        except (TimeoutError, OSError, ValueError, kafka_errors.KafkaError):
            continue
        conn.close()
    return None


# -- reporting ---------------------------------------------------------------------------------------------------
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Each client resolves the same settings: say each thing once per process, not once per client."""
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def _report_unusable(config: StreamsConfig, role: ClientRole) -> None:
    """Warn, once per process, about every setting aimed at `role` that will not be applied."""
    for key in sorted(config):
        prefix = next((p for p in _ALL_PREFIXES if key.startswith(p)), "")
        base = key[len(prefix):]
        if prefix == "global.consumer.":
            _warn_once(f"{key} is ignored: streamlet has no separate global consumer")
        elif prefix and prefix not in role.prefixes:
            continue  # another client's setting: reported when that client is built
        elif not prefix and base in DEFAULTS:
            continue  # a Kafka Streams setting (some also reach the clients, e.g. session.timeout.ms)
        elif not prefix and base in (OUTER_JOIN_EMIT_INTERVAL_MS, WINDOWED_AGGREGATION_EMIT_INTERVAL_MS):
            continue  # Kafka Streams' internal emit intervals, which the DSL's processors read
        elif not prefix and is_serde_setting(base):
            continue  # for the schema'd serdes (schema.registry.url, ...), which the tasks configure with it
        elif base in _CONTROLLED or (role, base) in _ROLE_CONTROLLED:
            reason = _CONTROLLED.get(base) or _ROLE_CONTROLLED[(role, base)]
            _warn_once(f"{key} is overridden by streamlet ({reason})")
        elif base in _UNSUPPORTED:
            _warn_once(f"{key} is a Kafka client setting that streamlet's client (aiokafka) cannot apply; "
                       "it is ignored")
        elif not prefix and base in _STREAMS_NOT_IMPLEMENTED:
            _warn_once(f"{key} is a Kafka Streams setting that streamlet does not implement; it has no effect")
        elif prefix and base in _HANDLED and not _applies(role, base):
            _warn_once(f"{key} does not apply to the {role.name.lower().replace('_', ' ')}; it is ignored")
        elif base not in _HANDLED:
            _warn_once(f"unknown setting {key}: neither a Kafka Streams setting streamlet knows nor a Kafka "
                       f"client setting; it is ignored{_did_you_mean(prefix, base)}")


def _did_you_mean(prefix: str, base: str) -> str:
    """A known key close to a misspelt one (`comit.interval.ms` -> `commit.interval.ms`), or nothing."""
    known = [*DEFAULTS, *_HANDLED, *_UNSUPPORTED, *_STREAMS_NOT_IMPLEMENTED, *_CONTROLLED]
    close = difflib.get_close_matches(base, known, n=1, cutoff=0.8)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


_ROLE_CONTROLLED = {
    (ClientRole.RESTORE_CONSUMER, "auto.offset.reset"): "restoration reads changelogs from their start",
    (ClientRole.RESTORE_CONSUMER, "max.poll.records"): "restoration reads in its own slices",
}


def _applies(role: ClientRole, key: str) -> bool:
    """Whether a setting streamlet handles has a meaning for this client."""
    if key in _COMMON or key in _SSL_KEYS or key in _SASL_KEYS or key in ("bootstrap.servers", "client.id",
                                                                          "security.protocol"):
        return True
    if role.is_consumer and (key in _CONSUMER_INTS or key in ("check.crcs", "client.rack")):
        return True
    if role is ClientRole.MAIN_CONSUMER and (key in _MAIN_CONSUMER_INTS or key in ("auto.offset.reset",
                                                                                   "group.instance.id")):
        return True
    return role is ClientRole.PRODUCER and (key in _PRODUCER_INTS or key == "compression.type")


def _as_int(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"{key} must be true or false, got {value!r}")
