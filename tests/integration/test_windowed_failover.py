"""Issue #16 on the real broker: a session-windowed count with `until_window_closes` and a stream-stream
outer join, each on two instances under exactly_once_v2 with a kill -9 in the middle: the output read
`read_committed` equals the driver's, key by key, in order (see staged_failover.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamlet.config import OUTER_JOIN_EMIT_INTERVAL_MS
from tests.helpers.kafka import RECENT_BASE_TS as BASE_TS
from tests.integration import windowed_failover_apps as apps
from tests.integration.staged_failover import Rows, run_staged_failover

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

SECOND = 1000


def _clicks(users: range, at_s: float, each_s: float, n: int, tag: str) -> Rows:
    """n clicks per user, `each_s` apart from `at_s` on, users interleaved in time order."""
    return [(f"u{u}", f"{tag}{i}", BASE_TS + int((at_s + i * each_s) * SECOND) + u)
            for i in range(n) for u in users]


async def test_session_counts_until_window_closes_survive_a_kill(kafka_broker: Any, tmp_path: Path) -> None:
    stages: list[tuple[str, Rows]] = [
        ("SW_INPUT", _clicks(range(8), 0, 1, 4, "a")),             # sessions [0 s, 3 s]
        ("SW_INPUT", _clicks(range(8), 20, 1.5, 3, "b")),          # closes them; new sessions [20 s, 23 s]
        ("SW_INPUT", _clicks(range(4), 24, 2, 3, "c")              # extends half of those (merges)
         + _clicks(range(8), 40, 1, 2, "d")                       # closes the rest; sessions at 40 s
         + [("u1", "late-in-grace", BASE_TS + 39 * SECOND)]       # joins u1's 40 s session
         + [("u2", "too-late", BASE_TS + 5 * SECOND)]),           # after its window closed: dropped
        ("SW_INPUT", _clicks(range(8), 60, 4, 3, "e")),           # gaps of 4 s: one session each
        ("SW_INPUT", [("u0", "end", BASE_TS + 200 * SECOND)]),     # closes everything
    ]
    result = await run_staged_failover(
        kafka_broker.bootstrap_servers, tmp_path, "tests.integration.windowed_failover_apps:session_final_counts",
        apps.session_final_counts, {"SW_INPUT": "sw-in", "SW_OUTPUT": "sw-out"}, "SW_OUTPUT", stages,
        kill_at_stage=2)
    growth = [b - a for a, b in zip([0, *result.expected_after], result.expected_after, strict=False)]
    assert sum(1 for g in growth if g) >= 3, growth  # final counts come out at several stages, the kill's too
    assert "restored" in result.takeover_log  # the survivor rebuilt the store and the suppression buffer
    assert result.got_total == result.expected_total
    assert result.got == result.expected


async def test_stream_stream_outer_join_survives_a_kill(kafka_broker: Any, tmp_path: Path) -> None:
    def views(keys: range, at_s: float, tag: str) -> Rows:
        return [(f"u{u}", f"{tag}{u}", BASE_TS + int(at_s * SECOND) + u * 10) for u in keys]

    stages: list[tuple[str, Rows]] = [
        ("OJ_LEFT", _clicks(range(10), 0, 0.5, 3, "click")),        # clicks at 0-1 s
        ("OJ_RIGHT", views(range(0, 10, 2), 2, "view")),           # even users matched within 3 s
        ("OJ_LEFT", _clicks(range(10), 10, 0.5, 2, "later")),       # closes the 0-1 s windows: odd users'
        ("OJ_RIGHT", views(range(5), 11, "v2") + views(range(5, 10), 30, "v3")),  # clicks come out unmatched
        ("OJ_LEFT", [("u0", "end", BASE_TS + 200 * SECOND)]),       # closes everything
    ]
    result = await run_staged_failover(
        kafka_broker.bootstrap_servers, tmp_path, "tests.integration.windowed_failover_apps:clicks_outer_join_views",
        apps.clicks_outer_join_views, {"OJ_LEFT": "oj-clicks", "OJ_RIGHT": "oj-views", "OJ_OUTPUT": "oj-out"},
        "OJ_OUTPUT", stages, kill_at_stage=2,
        # Kafka Streams emits unmatched outer-join results at most once per second of wall-clock time (an
        # internal setting); at 0 they come out at the record that closes their window, in the driver and
        # in the apps alike, so the output after each stage is fixed.
        extra_settings={OUTER_JOIN_EMIT_INTERVAL_MS: 0})
    assert any(v is not None and v.endswith("+None") for vs in result.expected.values() for v in vs)
    assert any(v is not None and v.startswith("None+") for vs in result.expected.values() for v in vs)
    assert "restored" in result.takeover_log  # the survivor rebuilt the join stores
    assert result.got_total == result.expected_total
    assert result.got == result.expected
