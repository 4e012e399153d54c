"""What to change when an application stops: each fatal error's message names the setting that decides it.

Kafka Streams ends such messages with the setting ("...please set the default.deserialization.exception.
handler appropriately"), so that whoever meets a poison record reads what to change on the line that
says what happened, not in four chained tracebacks. The sentences here are added where the errors are
raised, for the configuration in force. Errors that come from the data or the surroundings (a record,
the broker, a topic, the configuration) say all there is to say in that line: their traceback, which
shows only streamlet's own frames, goes to the debug log (`streamlet.kafka.error_remedies` tells
them apart, as it needs the Kafka layer's errors; this module imports nothing). Errors from the
application's own code keep theirs: it points at the line to fix.
"""

from __future__ import annotations

DESERIALIZATION_REMEDY = (
    "deserialization.exception.handler is log_and_fail (Kafka Streams' LogAndFailExceptionHandler), "
    "which stops the application on such a record; to go on without it set it to log_and_continue "
    "(LogAndContinueExceptionHandler: log and skip the record, and send it to "
    "errors.dead.letter.queue.topic.name when that is set) or dead_letter (the same, the topic "
    "<application.id>-dlq by default), or fix the record's serde"
)

PROCESSING_REMEDY = (
    "processing.exception.handler is log_and_fail (Kafka Streams' LogAndFailProcessingExceptionHandler), "
    "which stops the application when processing a record raises; to go on without the record set it to "
    "log_and_continue (LogAndContinueProcessingExceptionHandler; it also sends the record to "
    "errors.dead.letter.queue.topic.name when that is set) or dead_letter (the same, <application.id>-dlq "
    "by default)"
)


def production_remedy(skip_failed: bool, transactional: bool) -> str:
    """What decides a record the producer could not deliver, for the configuration in force."""
    if not skip_failed:
        return ("production.exception.handler is fail (Kafka Streams' DefaultProductionExceptionHandler), "
                "which stops the application; set it to continue to log and drop records the broker refuses"
                + (" (under exactly_once_v2 only records too large to send)" if transactional else ""))
    return ("under exactly_once_v2 a batch the broker refuses fails its transaction whatever "
            "production.exception.handler says (continue drops only records too large to send)")


def missing_serde_remedy(which: str) -> str:
    """Where a node without a serde of its own gets one."""
    return (f"give it a {which} serde (Consumed, Produced, Grouped, Materialized, Joined, StreamJoined or "
            f"Repartitioned) or set default.{which}.serde")


def unreachable_remedy(bootstrap_servers: object, task_timeout_ms: object, started: bool) -> str:
    """Why a client that cannot reach its cluster gave up, and what decides how long it waits."""
    if not started:
        return f"check bootstrap.servers ({bootstrap_servers}) and that the brokers are up"
    return (f"the cluster stayed unreachable for longer than task.timeout.ms ({task_timeout_ms} ms): check "
            f"bootstrap.servers ({bootstrap_servers}) and the brokers, or raise task.timeout.ms to wait longer")

