"""Headers cross from Spark's Kafka source to the tasks as JSON (`rows.headers_column`): every kind of
header Kafka allows comes out as the task would have read it from Kafka."""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType

from streamlet.spark.rows import INPUT_COLUMNS, from_arrow, headers_column, topic_column

_SOURCE = StructType([
    StructField("task", IntegerType()), StructField("topic", StringType()), StructField("partition", IntegerType()),
    StructField("offset", LongType()), StructField("timestamp", LongType()), StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                 StructField("value", BinaryType())])))])
"""The Kafka source's columns as the query selects them, with headers as the source gives them."""

_HEADERS = [
    None,  # the connector's null for a record without headers...
    [],  # ...and an empty array: both are no headers
    [("trace", b"abc")],
    [("bytes", bytes(range(256))), ("bytes", b"")],  # every byte value, a repeated key, an empty value
    [("null-value", None)],  # Kafka allows a null header value; a task reads it as empty
    [("schlüssel ✓", b"\x00\xff"), ("", b"x")],  # a non-ASCII key and an empty one
]


def test_every_kind_of_header_arrives_as_kafka_holds_it(spark: Any) -> None:
    rows = [(0, "in", 0, offset, 1_000 + offset, b"k", b"v", headers) for offset, headers in enumerate(_HEADERS)]
    frame = spark.createDataFrame(rows, _SOURCE)
    selected = frame.select("task", topic_column(["in"]).cast("int").alias("topic"), *INPUT_COLUMNS[2:-1],
                            headers_column().alias("headers")).toArrow()
    records = [r for batch in selected.to_batches() for r in from_arrow(batch, ["in"])[("in", 0)]]
    assert [r.headers for r in sorted(records, key=lambda r: r.offset)] == [
        (), (), (("trace", b"abc"),), (("bytes", bytes(range(256))), ("bytes", b"")), (("null-value", b""),),
        (("schlüssel ✓", b"\x00\xff"), ("", b"x"))]


def test_rows_of_several_topics_come_back_under_their_names(spark: Any) -> None:
    """The `topic` column crosses as an index into the query's source topics (`rows.topic_column`); each
    record is filed under its own topic's name again, whatever order the rows come in."""
    topics = ["orders", "users", "orders-repartition"]
    rows = [(0, topics[i % 3], i % 2, i, 1_000 + i, b"k", str(i).encode(), None) for i in range(12)]
    frame = spark.createDataFrame(rows, _SOURCE)
    selected = frame.select("task", topic_column(topics).cast("int").alias("topic"), *INPUT_COLUMNS[2:-1],
                            headers_column().alias("headers")).toArrow()
    found = [(topic, partition, r.offset, r.value) for batch in selected.to_batches()
             for (topic, partition), records in from_arrow(batch, topics).items() for r in records]
    assert sorted(found) == sorted((topics[i % 3], i % 2, i, str(i).encode()) for i in range(12))
    assert all(r.topic == topic for batch in selected.to_batches()
               for (topic, _p), records in from_arrow(batch, topics).items() for r in records)
