"""Which failed exactly-once commits replace the transactional producer instead of reusing it.

After OutOfOrderSequenceNumber (a broker restarted and lost the producer's last batches, say), an abort
leaves aiokafka's sequence numbers where they were, so a reused producer fails every later transaction the
same way; a new producer starts a new epoch. The error reaches the commit wrapped in `ProductionError`.
"""

from __future__ import annotations

import pytest
from aiokafka.errors import (
    InvalidProducerEpoch,
    KafkaConnectionError,
    NotLeaderForPartitionError,
    OutOfOrderSequenceNumber,
    UnknownProducerId,
)

from streamlet.kafka.record_sender import ProductionError
from streamlet.runtime.commit_protocol import breaks_producer_state


def _wrapped(cause: BaseException) -> ProductionError:
    try:
        raise ProductionError(f"failed to produce records: t-0: {type(cause).__name__}") from cause
    except ProductionError as exc:
        return exc


@pytest.mark.parametrize("cause", [OutOfOrderSequenceNumber(), UnknownProducerId(), InvalidProducerEpoch()])
def test_sequence_and_epoch_errors_renew_the_producer(cause: BaseException) -> None:
    assert breaks_producer_state(cause)
    assert breaks_producer_state(_wrapped(cause))
    assert breaks_producer_state(_wrapped(_wrapped(cause)))


@pytest.mark.parametrize("cause", [NotLeaderForPartitionError(), KafkaConnectionError(), ValueError("x")])
def test_other_errors_keep_the_producer(cause: BaseException) -> None:
    assert not breaks_producer_state(cause)
    assert not breaks_producer_state(_wrapped(cause))


def test_a_cycle_in_the_chain_ends() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    assert not breaks_producer_state(a)
