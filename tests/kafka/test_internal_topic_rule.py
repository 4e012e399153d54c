"""The rule of the start-up check of internal topics (`mismatch`), without a broker; the broker cases are
in tests/integration/test_internal_topic_check.py."""

from __future__ import annotations

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.kafka.internal_topic_check import EXACT, EXISTING, NONE, looks_internal, mismatch

APP = "orders"
COUNTS = "orders-counts-changelog"
REPART = "orders-counts-repartition"
FK = ("orders-fk-subscription-registration-topic", "orders-fk-subscription-response-topic")
USER = ("orders-input", "payments", "orders-fk-out")


@pytest.mark.parametrize("mode", [EXISTING, EXACT])
def test_a_first_start_passes(mode: str) -> None:
    assert mismatch(APP, {COUNTS, REPART, *FK}, USER, mode) is None


@pytest.mark.parametrize("mode", [EXISTING, EXACT])
def test_the_same_topics_pass(mode: str) -> None:
    assert mismatch(APP, {COUNTS, REPART, *FK}, {COUNTS, REPART, *FK, *USER}, mode) is None


def test_added_topics_pass_unless_exact() -> None:
    held = {COUNTS, REPART, *USER}
    assert mismatch(APP, {COUNTS, REPART, *FK}, held, EXISTING) is None
    problem = mismatch(APP, {COUNTS, REPART, *FK}, held, EXACT)
    assert problem is not None and problem.startswith(f"this topology has the internal topic {FK[0]!r}"), problem
    assert f"1 more: {FK[1]!r}" in problem, problem


def test_a_held_topic_the_topology_lacks_is_named_with_its_counterpart() -> None:
    generated = "orders-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
    problem = mismatch(APP, {generated, "orders-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"},
                       {COUNTS, REPART, *USER}, EXISTING)
    assert problem is not None
    assert problem.startswith(f"the cluster holds the internal topic {COUNTS!r} of application 'orders', which "
                              "this topology does not have"), problem
    assert f"This topology has instead {generated!r}" in problem  # same kind (changelog) only
    assert f"1 more such topic(s): {REPART!r}" in problem
    assert "Materialized.as" in problem and "internal.topics.check=none" in problem


def test_none_checks_nothing() -> None:
    assert mismatch(APP, set(), {COUNTS, REPART}, NONE) is None


def test_another_applications_topics_are_left_out() -> None:
    audit = {"orders-audit-counts-changelog", "orders-audit-counts-repartition"}
    assert mismatch(APP, {COUNTS}, {COUNTS, *audit}, EXACT) is not None  # without knowing the group
    assert mismatch(APP, {COUNTS}, {COUNTS, *audit}, EXACT, other_applications=["orders-audit", "x"]) is None
    assert mismatch(APP, set(), audit, EXACT, other_applications=["orders-audit"]) is None


def test_internal_names_are_kafka_streams() -> None:
    assert looks_internal(APP, COUNTS) and looks_internal(APP, REPART) and all(looks_internal(APP, t) for t in FK)
    assert not any(looks_internal(APP, t) for t in USER)
    assert not looks_internal(APP, "ordersx-counts-changelog")


def test_the_setting_is_checked_when_the_config_is_made() -> None:
    assert StreamsConfig({"internal.topics.check": "EXACT"})["internal.topics.check"] == EXACT
    assert StreamsConfig()["internal.topics.check"] == EXISTING
    with pytest.raises(ConfigError, match="internal.topics.check must be one of existing, exact, none"):
        StreamsConfig({"internal.topics.check": "strict"})
