"""Which fatal errors say all there is to say in their message: the Kafka layer's half of the error remedies.

The sentences that name the setting to change live with the errors (`streamlet.error_remedies`); deciding
whether a failure's traceback is noise needs the errors the Kafka layer raises (a record the producer
refused, a missing or mismatched internal topic) and aiokafka's, so it lives here, where the runtime asks
for it when it reports the failure that stopped an application.
"""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

from streamlet.errors import (
    ApplicationShutdownError,
    ConfigError,
    DeserializationError,
    GroupHeldByOtherProtocolError,
    StateDirectoryError,
)
from streamlet.kafka.internal_topic_check import InternalTopicsMismatchError
from streamlet.kafka.record_sender import ProductionError
from streamlet.kafka.topic_manager import MissingTopicsError


def noise_traceback(error: BaseException) -> bool:
    """True for an error whose message (and notes) say all there is to say: a record that cannot be
    read or written, a missing topic, a bad setting, an unreachable cluster. Its traceback belongs in
    the debug log. False for anything raised by the application's code or unexpected in streamlet."""
    return isinstance(error, DeserializationError | ProductionError | MissingTopicsError | ConfigError
                      | StateDirectoryError | ApplicationShutdownError | InternalTopicsMismatchError
                      | GroupHeldByOtherProtocolError | KafkaConnectionError | KafkaTimeoutError)
