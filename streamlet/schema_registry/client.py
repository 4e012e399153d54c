"""Confluent's serde settings, read once, and one registry client per registry per process.

Every serde that talks to the same registry (same URLs and credentials) shares one confluent-kafka
`SchemaRegistryClient`, so schemas and ids fetched or registered by one are cached for all: after the first
record of a subject no record costs a registry round trip. `mock://SCOPE` URLs share one in-process
registry per scope, as Java's `MockSchemaRegistry` does, until `drop_scope(SCOPE)`.

A registry call that fails for a reason that is no record's fault becomes a streamlet error no exception
handler sees (`registry_failure`): the registry unreachable (refused connection, timeout, HTTP 5xx, 408 or
429) is `SchemaRegistryUnavailableError`, which a task reading its input waits out and retries, and refused
credentials (HTTP 401/403) are `SchemaRegistryAuthError`, naming the setting to fix. The client itself does
not retry (`max.retries` 0): its retries sleep, which would stop the whole asyncio runtime, while a task's
retries wait without blocking anything. No message shows a password (`basic.auth.user.info` or a URL's).
"""

from __future__ import annotations

import logging
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry.common._httpx_compat import httpx  # httpx2, else httpx: what it uses
from confluent_kafka.schema_registry.error import SchemaRegistryError

from streamlet.errors import ConfigError, SchemaRegistryAuthError, SchemaRegistryUnavailableError
from streamlet.redaction import REDACTED, redact_url_credentials

SubjectNameStrategy = Callable[[Any, str | None], str | None]
"""confluent-kafka's form: (SerializationContext, record name) -> subject."""

_STRATEGIES: dict[str, SubjectNameStrategy] = {
    "topicnamestrategy": topic_subject_name_strategy,
    "recordnamestrategy": record_subject_name_strategy,
    "topicrecordnamestrategy": topic_record_subject_name_strategy,
}


def _flag(config: Mapping[str, Any], name: str, default: bool) -> bool:
    value = config.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"{name} must be true or false, got {value!r}")


def _strategy(config: Mapping[str, Any], name: str) -> SubjectNameStrategy:
    value = config.get(name)
    if value is None:
        return topic_subject_name_strategy
    if callable(value):
        return typing.cast(SubjectNameStrategy, value)
    short = str(value).strip().rsplit(".", 1)[-1].lower()
    if short not in _STRATEGIES:
        raise ConfigError(f"{name}={value!r} is not a subject name strategy: use TopicNameStrategy, "
                          "RecordNameStrategy or TopicRecordNameStrategy (or their io.confluent class names)")
    return _STRATEGIES[short]


@dataclass(frozen=True)
class RegistrySettings:
    """Confluent's settings for one serde, read from a config mapping (other keys are ignored)."""

    url: str
    auto_register: bool
    use_latest_version: bool
    normalize: bool
    user_info: str | None
    key_strategy: SubjectNameStrategy
    value_strategy: SubjectNameStrategy
    specific_reader: bool

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RegistrySettings:
        url = config.get("schema.registry.url")
        if not url:
            raise ConfigError("schema.registry.url is not set: the schema'd serdes need a registry's URL "
                              "(several comma-separated, or mock://SCOPE for tests)")
        return cls(
            url=",".join(part.strip() for part in str(url).split(",") if part.strip()),
            auto_register=_flag(config, "auto.register.schemas", True),
            use_latest_version=_flag(config, "use.latest.version", False),
            normalize=_flag(config, "normalize.schemas", False),
            user_info=_user_info(config),
            key_strategy=_strategy(config, "key.subject.name.strategy"),
            value_strategy=_strategy(config, "value.subject.name.strategy"),
            specific_reader=_flag(config, "specific.avro.reader", False),
        )

    def __repr__(self) -> str:  # never the password
        return f"RegistrySettings(url={self.shown_url!r}, user_info={'***' if self.user_info else None})"

    @property
    def shown_url(self) -> str:
        """The URL(s) fit for logs and errors: passwords in them replaced by `[hidden]`."""
        return redact_url_credentials(self.url)

    def scrub(self, text: str) -> str:
        """`text` fit for logs and errors: URL passwords and `basic.auth.user.info`'s password hidden."""
        text = redact_url_credentials(text)
        if self.user_info:
            password = self.user_info.split(":", 1)[1]
            if password:
                text = text.replace(password, REDACTED)
        return text


_RETRIABLE_STATUS = frozenset({408, 429})


def registry_failure(exc: BaseException, settings: RegistrySettings, doing: str) -> Exception | None:
    """The streamlet error for a failed registry call that is no record's fault, or None: the registry
    unreachable (`SchemaRegistryUnavailableError`, retried by the task) or refusing the credentials
    (`SchemaRegistryAuthError`, naming the setting). `doing` says what the call was for, in the message."""
    if isinstance(exc, httpx.TransportError) or (
            isinstance(exc, SchemaRegistryError)
            and (exc.http_status_code >= 500 or exc.http_status_code in _RETRIABLE_STATUS)):
        detail = (f"HTTP {exc.http_status_code}: {exc.error_message}" if isinstance(exc, SchemaRegistryError)
                  else f"{type(exc).__name__}: {exc}")
        return SchemaRegistryUnavailableError(settings.scrub(
            f"the schema registry at {settings.shown_url} cannot be reached while {doing} ({detail})"))
    if isinstance(exc, SchemaRegistryError) and exc.http_status_code in (401, 403):
        if settings.user_info is not None:
            setting = "basic.auth.user.info (with basic.auth.credentials.source=USER_INFO)"
        elif "@" in settings.url:
            setting = "the user:password in schema.registry.url (basic.auth.credentials.source=URL)"
        else:
            setting = "basic.auth.user.info: none is set"
        return SchemaRegistryAuthError(settings.scrub(
            f"the schema registry at {settings.shown_url} refused the credentials while {doing} "
            f"(HTTP {exc.http_status_code}{_reason(exc)}); check {setting}"))
    return None


def _reason(exc: SchemaRegistryError) -> str:
    """': ' and the registry's message, when its answer had one in Confluent's form (Apicurio's 401 has not)."""
    return f": {exc.error_message}" if exc.error_message else ""


def _user_info(config: Mapping[str, Any]) -> str | None:
    """`basic.auth.user.info` (USER_INFO, the default source), or None for credentials in the URL (URL)."""
    source = str(config.get("basic.auth.credentials.source")
                 or config.get("schema.registry.basic.auth.credentials.source") or "USER_INFO").strip().upper()
    info = config.get("basic.auth.user.info") or config.get("schema.registry.basic.auth.user.info")
    if source == "URL":
        return None
    if source != "USER_INFO":
        raise ConfigError(f"basic.auth.credentials.source={source!r} is not supported: use USER_INFO "
                          "(basic.auth.user.info=user:password) or URL (http://user:password@host:port)")
    if info is not None and ":" not in str(info):
        raise ConfigError("basic.auth.user.info must be user:password (its value is not shown)")
    return str(info) if info else None


class _HidePasswords(logging.Filter):
    """On the HTTP client's logger, which logs every request's URL at INFO: passwords in URLs hidden."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = redact_url_credentials(message)
        if hidden != message:
            record.msg, record.args = hidden, ()
        return True


_HTTP_LOG = logging.getLogger(httpx.__name__)
if not any(isinstance(f, _HidePasswords) for f in _HTTP_LOG.filters):
    _HTTP_LOG.addFilter(_HidePasswords())

_lock = threading.Lock()
_clients: dict[tuple[str, str | None], SchemaRegistryClient] = {}
_scopes: dict[str, MockSchemaRegistryClient] = {}
_MOCK = "mock://"


def registry_client(settings: RegistrySettings) -> SchemaRegistryClient:
    """The process's client for the registry `settings` name (a `mock://SCOPE` URL: that scope's registry)."""
    with _lock:
        if settings.url.startswith(_MOCK):
            scope = settings.url[len(_MOCK):]
            if scope not in _scopes:
                _scopes[scope] = MockSchemaRegistryClient({"url": settings.url})
            return _scopes[scope]
        key = (settings.url, settings.user_info)
        if key not in _clients:
            conf: dict[str, Any] = {"url": settings.url, "max.retries": 0}  # the task retries (module docstring)
            if settings.user_info is not None:
                conf["basic.auth.user.info"] = settings.user_info
            _clients[key] = SchemaRegistryClient(conf)
        return _clients[key]


def drop_scope(scope: str) -> None:
    """Forget the in-process registry of `mock://SCOPE` (Java's `MockSchemaRegistry.dropScope`)."""
    with _lock:
        _scopes.pop(scope, None)
