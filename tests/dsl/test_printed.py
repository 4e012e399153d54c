"""`KStream.print(Printed...)`: lines `[label]: key, value` as Kafka Streams prints them.

The format itself is checked against Kafka Streams by the differential suite (tests/fidelity prints to
files on both sides); these tests pin the documented format, standard output and the file's life cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamlet import Consumed, Grouped, Printed, StreamsBuilder, TimeWindows, TopologyError
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"application.id": "print", "default.key.serde": "String", "default.value.serde": "String"}


def run(builder: StreamsBuilder, records: list[tuple[Any, Any, int]]) -> None:
    with TopologyTestDriver(builder.build(), CONFIG, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", S, S)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)


def test_sys_out_default_label_is_the_printed_streams_name(capsys: pytest.CaptureFixture[str]) -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).map_values(lambda v: v).print(Printed.to_sys_out())
    run(b, [("a", "1", 0), (None, None, 1)])
    assert capsys.readouterr().out.splitlines() == [
        "[KSTREAM-MAPVALUES-0000000001]: a, 1",
        "[KSTREAM-MAPVALUES-0000000001]: null, null",
    ]


def test_label_mapper_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    b = StreamsBuilder()
    printed = Printed.to_sys_out().with_label("orders").with_key_value_mapper(lambda k, v: f"{k}={v}")
    b.stream("in", Consumed(S, S)).print(printed.with_name("show"))
    run(b, [("a", "1", 0)])
    assert capsys.readouterr().out == "[orders]: a=1\n"
    assert "Processor: show (stores: [])" in str(b.build().describe())


def test_windowed_keys_and_counts_print_as_java_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    b = StreamsBuilder()
    counts = b.stream("in", Consumed(S, S)).group_by_key(Grouped(S, S)) \
        .windowed_by(TimeWindows.of_size_with_no_grace(10)).count()
    counts.to_stream().print(Printed.to_sys_out().with_label("c"))
    run(b, [("a", "1", 3), ("a", "2", 12)])
    assert capsys.readouterr().out.splitlines() == ["[c]: [a@0/10], 1", "[c]: [a@10/20], 1"]


def test_to_file_truncates_at_once_and_holds_every_line_once_closed(tmp_path: Path) -> None:
    path = tmp_path / "printed.txt"
    path.write_text("old content\n")
    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).print(Printed.to_file(str(path)).with_label("f"))
    assert path.read_text() == ""  # opened (and truncated) when Printed.to_file is called, as in Kafka Streams
    run(b, [("a", "1", 0), ("b", "2", 1)])
    assert path.read_text() == "[f]: a, 1\n[f]: b, 2\n"


def test_bad_paths_fail_while_building(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="empty"):
        Printed.to_file("  ")
    with pytest.raises(TopologyError, match="Unable to write stream to file at"):
        Printed.to_file(str(tmp_path / "no-such-dir" / "x.txt"))
