"""Schema'd serdes in many processes, against the real registry: writers in several processes (here each
with a registry client of its own, as a process has) writing the first record of a new subject at the same
moment all get the schema's id, although Apicurio answers all but one first registration with a conflict."""

from __future__ import annotations

import json
import struct
import threading
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from streamlet.schema_registry.shipping import ConcurrentAvroSerializer

pytestmark = pytest.mark.registry

SCHEMA = json.dumps({"type": "record", "name": "Tick", "namespace": "race",
                     "fields": [{"name": "at", "type": "long"}]})
WRITERS = 6


def _race(url: str, topic: str) -> tuple[list[bytes | None], list[BaseException]]:
    """WRITERS serializers, each with its own client, write one record to `topic` at the same moment."""
    start = threading.Barrier(WRITERS)
    written: list[bytes | None] = []
    failures: list[BaseException] = []

    def write() -> None:
        serializer = ConcurrentAvroSerializer(SchemaRegistryClient({"url": url}), SCHEMA)
        start.wait()
        try:
            written.append(serializer({"at": 1}, SerializationContext(topic, MessageField.VALUE)))
        except BaseException as exc:  # the test's assertion shows it
            failures.append(exc)

    threads = [threading.Thread(target=write) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return written, failures


def test_writers_registering_one_subject_at_once_all_get_its_id(schema_registry: str) -> None:
    for _round in range(5):
        topic = f"race-{uuid.uuid4().hex[:10]}"
        written, failures = _race(schema_registry, topic)
        assert failures == []
        registered = SchemaRegistryClient({"url": schema_registry}).get_latest_version(f"{topic}-value")
        assert len(written) == WRITERS
        assert {struct.unpack(">I", data[1:5])[0] for data in written if data is not None} == {registered.schema_id}
