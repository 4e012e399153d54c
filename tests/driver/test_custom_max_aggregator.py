"""The seed's TopologyTestDriver suite for `CustomMaxAggregator`, ported from Java.

A Processor-API topology keeps the max value per key in an in-memory store pre-populated with
a=21, and forwards the whole store on a 10 s stream-time punctuation and a 60 s wall-clock one.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import KeyValue, Record
from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.testing import TestInputTopic, TestOutputTopic, TopologyTestDriver
from streamlet.topology import Topology


class CustomMaxAggregator(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        context.schedule(timedelta(seconds=60), PunctuationType.WALL_CLOCK_TIME, self.flush_store)
        context.schedule(timedelta(seconds=10), PunctuationType.STREAM_TIME, self.flush_store)
        self.store = context.get_state_store("aggStore")

    def process(self, record: Record) -> None:
        old = self.store.get(record.key)  # type: ignore[attr-defined]
        if old is None or record.value > old:
            self.store.put(record.key, record.value)  # type: ignore[attr-defined]

    def flush_store(self, timestamp: int) -> None:
        with self.store.all() as it:  # type: ignore[attr-defined]
            for kv in it:
                self.context.forward(Record(kv.key, kv.value, timestamp))


@pytest.fixture
def driver() -> Iterator[TopologyTestDriver]:
    topology = Topology()
    topology.add_source("sourceProcessor", "input-topic")
    topology.add_processor("aggregator", CustomMaxAggregator, "sourceProcessor")
    topology.add_state_store(
        Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("aggStore"), Serdes.String(), Serdes.Long()
        ).with_logging_disabled(),  # lets the test pre-populate the store
        "aggregator",
    )
    topology.add_sink("sinkProcessor", "result-topic", "aggregator")
    config = {
        "application.id": "maxAggregation",
        "bootstrap.servers": "dummy:1234",
        "default.key.serde": Serdes.String,
        "default.value.serde": "org.apache.kafka.common.serialization.Serdes$LongSerde",
    }
    with TopologyTestDriver(topology, config) as d:
        d.get_key_value_store("aggStore").put("a", 21)
        yield d


@pytest.fixture
def input_topic(driver: TopologyTestDriver) -> TestInputTopic:
    return driver.create_input_topic("input-topic", Serdes.String(), Serdes.Long())


@pytest.fixture
def output_topic(driver: TopologyTestDriver) -> TestOutputTopic:
    return driver.create_output_topic("result-topic", Serdes.String(), Serdes.Long())


def test_should_flush_store_for_first_input(input_topic: TestInputTopic, output_topic: TestOutputTopic) -> None:
    input_topic.pipe_input("a", 1)
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty()


def test_should_not_update_store_for_smaller_value(
    driver: TopologyTestDriver, input_topic: TestInputTopic, output_topic: TestOutputTopic
) -> None:
    input_topic.pipe_input("a", 1)
    assert driver.get_key_value_store("aggStore").get("a") == 21
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty()


def test_should_update_store_for_larger_value(
    driver: TopologyTestDriver, input_topic: TestInputTopic, output_topic: TestOutputTopic
) -> None:
    input_topic.pipe_input("a", 42)
    assert driver.get_key_value_store("aggStore").get("a") == 42
    assert output_topic.read_key_value() == KeyValue("a", 42)
    assert output_topic.is_empty()


def test_should_update_store_for_new_key(
    driver: TopologyTestDriver, input_topic: TestInputTopic, output_topic: TestOutputTopic
) -> None:
    input_topic.pipe_input("b", 21)
    assert driver.get_key_value_store("aggStore").get("b") == 21
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.read_key_value() == KeyValue("b", 21)
    assert output_topic.is_empty()


def test_should_punctuate_if_event_time_advances(input_topic: TestInputTopic, output_topic: TestOutputTopic) -> None:
    record_time = datetime.now(UTC)
    input_topic.pipe_input("a", 1, record_time)
    assert output_topic.read_key_value() == KeyValue("a", 21)

    input_topic.pipe_input("a", 1, record_time)
    assert output_topic.is_empty()

    input_topic.pipe_input("a", 1, record_time + timedelta(seconds=10))
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty()


def test_should_punctuate_if_wall_clock_time_advances(
    driver: TopologyTestDriver, output_topic: TestOutputTopic
) -> None:
    driver.advance_wall_clock_time(timedelta(seconds=60))
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty()
