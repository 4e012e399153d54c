"""KafkaStreams without a broker: the settings it logs at start-up, its state changes, clean_up()."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest

from streamlet import StreamsBuilder
from streamlet.config import StreamsConfig
from streamlet.errors import StreamsError
from streamlet.runtime.kafka_streams import KafkaStreams, State, _config_in_force

SECRET = "s3cret-pw"


def test_the_start_up_config_shows_every_value_in_force_and_hides_secrets(tmp_path: Path) -> None:
    config = StreamsConfig({"application.id": "app", "processing.guarantee": "exactly_once_v2",
                            "sasl.jaas.config": f'x required username="u" password="{SECRET}";'})
    lines = _config_in_force(config).splitlines()
    assert lines[0] == "StreamsConfig values:"
    shown = dict(line.lstrip("\t").split(" = ", 1) for line in lines[1:])
    assert shown["commit.interval.ms"] == "100"
    assert shown["state.dir"] == str(Path(tempfile.gettempdir()) / "streamlet")
    assert shown["processing.guarantee"] == "exactly_once_v2"
    assert SECRET not in "\n".join(lines) and shown["sasl.jaas.config"] == "[hidden]"
    assert list(shown) == sorted(shown)


def test_a_rebalance_during_a_rebalance_is_told_to_listeners_but_not_logged_as_a_transition(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    streams = KafkaStreams(builder.build(), {"application.id": "app", "state.dir": str(tmp_path)})
    heard: list[tuple[State, State]] = []
    streams.set_state_listener(lambda new, old: heard.append((new, old)))
    with caplog.at_level(logging.INFO, logger="streamlet.runtime.kafka_streams"):
        streams._set_state(State.REBALANCING)
        streams._set_state(State.REBALANCING)
        streams._set_state(State.RUNNING)
        streams._set_state(State.RUNNING)  # no change: nothing heard
    assert heard == [(State.REBALANCING, State.CREATED), (State.REBALANCING, State.REBALANCING),
                     (State.RUNNING, State.REBALANCING)]
    assert "from REBALANCING to REBALANCING" not in caplog.text
    assert "another rebalance began before the last one finished" in caplog.text
    assert caplog.text.count("state transition from") == 2


def test_clean_up_wipes_local_state_only_while_not_running(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    streams = KafkaStreams(builder.build(), {"application.id": "app", "state.dir": str(tmp_path)})
    task_dir = tmp_path / "app" / "0_0"
    task_dir.mkdir(parents=True)
    (task_dir / ".checkpoint").write_text("in 0 42\n")
    streams.clean_up()
    assert not task_dir.exists() and (tmp_path / "app").is_dir()
    streams._set_state(State.REBALANCING)
    with pytest.raises(StreamsError, match="not running"):
        streams.clean_up()
