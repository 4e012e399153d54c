"""Stateful operators moved between Kafka Streams 4.4.0 and streamlet, offline, in both directions.

The `operators` application (tests/interop/apps.py, twin of Apps.java) holds an emit-final tumbling-
window count, a session-window count, a stream-stream inner join and a foreign-key table join. Three
runs over the same two halves of input (see `operator_runs`): Kafka Streams alone, uninterrupted (the
reference); Kafka Streams then streamlet; streamlet then Kafka Streams, each under exactly_once_v2
with no record cache and no pause at the move. Each moved run must produce what the reference
produced, and leave every store's changelog equal to the reference's, key by key.

What the comparison can be strict about: the session count reads one topic, so each source key's
output is deterministic and compared record by record, in order (`per_source_key`: how two tasks'
records interleave in an output partition is not deterministic); the windowed count with
`__emit.interval.ms.kstreams.windowed.aggregation__` = 0 too. The join reads two topics, whose
interleaving depends on fetches, so its results are compared as a multiset (each pair exactly once).
The foreign-key join's intermediate results depend on the timing of its internal topics, so its
final table is compared (the latest result per key), as is its result store.

Emit-final after a move: Kafka Streams keeps the close time of the last emitted window in its commit
metadata (TopicPartitionMetadata's ProcessorMetadata, under the store's name); the instance that takes
over reads it back, so it does not emit those windows again. streamlet writes and reads the same
metadata (streamlet/kafka/commit_metadata.py), which the emit-final case checks in both directions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.interop.kafka_streams_app import java_available
from tests.interop.operator_runs import (
    STORES,
    RunResult,
    Runs,
    as_text,
    changelog_view,
    latest,
    make_input,
    per_source_key,
    run,
)

pytestmark = [
    pytest.mark.anyio, pytest.mark.broker,
    pytest.mark.skipif(not java_available(), reason="needs Java 17 and Maven"),
]

JAVA_SESSION_TIMEOUT_MS = 20000
DIRECTIONS = ["java-then-streamlet", "streamlet-then-java"]


@pytest.fixture(scope="module")
def runs(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The reference (Kafka Streams alone) and the two moves, over the same two halves of input."""
    bootstrap, tmp = kafka_broker.bootstrap_servers, tmp_path_factory.mktemp("operators")
    halves = make_input()

    def maker(first: str, second: str) -> Callable[[], Awaitable[RunResult]]:
        return lambda: run(bootstrap, tmp, first, second, *halves, java_session_timeout_ms=JAVA_SESSION_TIMEOUT_MS)

    return Runs(tmp, {"reference": maker("java", "java"), "java-then-streamlet": maker("java", "streamlet"),
                      "streamlet-then-java": maker("streamlet", "java")})


async def both(runs: Runs, direction: str) -> tuple[RunResult, RunResult]:
    return await runs.get("reference"), await runs.get(direction)


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_session_window_count(runs: Runs, direction: str) -> None:
    reference, moved = await both(runs, direction)
    assert reference.outputs["sess-out"], "the reference produced no sessions"
    assert per_source_key(moved.outputs["sess-out"]) == per_source_key(reference.outputs["sess-out"])
    assert changelog_view("session-counts", moved.changelogs["session-counts"]) == \
        changelog_view("session-counts", reference.changelogs["session-counts"])


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_stream_stream_join(runs: Runs, direction: str) -> None:
    reference, moved = await both(runs, direction)
    assert reference.outputs["join-out"], "the reference joined nothing"
    assert Counter(as_text(moved.outputs["join-out"])) == Counter(as_text(reference.outputs["join-out"]))
    for store in ("clicks-views-this-join-store", "clicks-views-other-join-store"):
        assert changelog_view(store, moved.changelogs[store]) == changelog_view(store, reference.changelogs[store])


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_foreign_key_join(runs: Runs, direction: str) -> None:
    reference, moved = await both(runs, direction)
    final = latest(reference.outputs["fk-out"], with_timestamp=False)
    assert len(final) >= 50, final  # every order but the deleted one and those of the deleted product
    assert latest(moved.outputs["fk-out"], with_timestamp=False) == final
    for store in ("orders-store", "products-store", "order-product-store", "order-product-subscription-store"):
        assert changelog_view(store, moved.changelogs[store]) == changelog_view(store, reference.changelogs[store]), \
            store


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_windowed_count_emitted_on_window_close(runs: Runs, direction: str) -> None:
    reference, moved = await both(runs, direction)
    assert reference.outputs["win-out"], "the reference closed no window"
    assert per_source_key(moved.outputs["win-out"]) == per_source_key(reference.outputs["win-out"])


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_windowed_count_store_moves(runs: Runs, direction: str) -> None:
    """The emit-final aggregation's store itself moves (its output is the case above)."""
    reference, moved = await both(runs, direction)
    assert changelog_view("window-counts", moved.changelogs["window-counts"]) == \
        changelog_view("window-counts", reference.changelogs["window-counts"])


@pytest.mark.parametrize("direction", DIRECTIONS)
async def test_every_store_has_a_changelog_and_the_move_was_waited_out(runs: Runs, direction: str) -> None:
    reference, moved = await both(runs, direction)
    for store in STORES:
        assert reference.changelogs[store], f"{store}: the reference wrote no changelog"
    streamlet_log = next(text for name, text in moved.logs.items() if name.startswith("streamlet"))
    if direction == "java-then-streamlet":  # Kafka Streams' member outlived its close: streamlet waited
        assert "still holds members of another protocol" in streamlet_log
        assert "joined group" in streamlet_log
