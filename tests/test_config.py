"""StreamsConfig: dotted and snake_case keys, defaults that depend on the guarantee, fast failures."""

from __future__ import annotations

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.serdes import Serdes


def test_snake_case_and_dotted_keys_are_the_same() -> None:
    a = StreamsConfig({"application.id": "x", "commit.interval.ms": "250"})
    b = StreamsConfig(application_id="x", commit_interval_ms=250)
    assert a["application.id"] == b["application_id"] == "x"
    assert a["commit.interval.ms"] == b["commit.interval.ms"] == 250


def test_commit_interval_default_depends_on_guarantee() -> None:
    assert StreamsConfig(application_id="x")["commit.interval.ms"] == 30000
    eos = StreamsConfig(application_id="x", processing_guarantee="exactly_once_v2")
    assert eos["commit.interval.ms"] == 100
    assert eos.exactly_once


def test_bad_values_fail_with_the_key_name() -> None:
    with pytest.raises(ConfigError, match="processing.guarantee"):
        StreamsConfig(processing_guarantee="maybe_once")
    with pytest.raises(ConfigError, match="commit.interval.ms"):
        StreamsConfig(commit_interval_ms="soon")
    with pytest.raises(ConfigError, match="application.id"):
        _ = StreamsConfig().application_id


def test_serde_config_accepts_classes_instances_and_names() -> None:
    config = StreamsConfig(default_key_serde=Serdes.String, default_value_serde="LongSerde")
    assert isinstance(config.default_key_serde(), Serdes.String)
    assert isinstance(config.default_value_serde(), Serdes.Long)


def test_of_accepts_plain_dicts_and_configs() -> None:
    config = StreamsConfig(application_id="x")
    assert StreamsConfig.of(config) is config
    assert StreamsConfig.of({"application.id": "y"}).application_id == "y"


def test_the_config_shows_the_values_in_force_not_placeholders() -> None:
    import tempfile
    from pathlib import Path

    config = StreamsConfig(application_id="x", processing_guarantee="exactly_once_v2")
    assert config["state.dir"] == str(Path(tempfile.gettempdir()) / "streamlet")
    assert None not in (config["state.dir"], config["commit.interval.ms"])
    assert "None" not in repr({k: config[k] for k in ("state.dir", "commit.interval.ms")})
    assert config.given_keys == {"application.id", "processing.guarantee"}


def test_overrides_derive_the_defaults_again() -> None:
    eos = StreamsConfig(application_id="x", processing_guarantee="exactly_once_v2")
    alos = eos.with_overrides(processing_guarantee="at_least_once")
    assert (eos["commit.interval.ms"], alos["commit.interval.ms"]) == (100, 30000)
    assert eos.with_overrides(commit_interval_ms=5)["commit.interval.ms"] == 5
    assert StreamsConfig(eos).given_keys == eos.given_keys


def test_every_setting_is_described_for_the_reference() -> None:
    from streamlet.config import DEFAULTS, DESCRIPTIONS

    assert set(DESCRIPTIONS) == set(DEFAULTS)
    assert all(text.endswith(".") and len(text) > 20 for text in DESCRIPTIONS.values())
