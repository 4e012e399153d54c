"""benchmarks/eos_recovery.py reads each system's restart: RUNNING, whether it wiped its state, what it
restored; and its "before" mode removes the marks of kept state so that the restart rebuilds in full."""

from __future__ import annotations

from pathlib import Path

from benchmarks.eos_recovery import _RUNNING, _WIPED, engine, forget_committed_marks, system_for
from benchmarks.restore import marks
from streamlet.actors.state_manager import TRANSACTIONAL_MARKER

# Lines as the systems print them (a Kafka Streams 4.4.0 restart after a kill -9 under exactly-once, and streamlet's).
KS_LOG = """\
[2026-12-07 15:23:49,672] WARN stream-client [a-1] State store counts-store did not find checkpoint offsets \
while stores are not empty, since under EOS it has the risk of getting uncommitted data in stores we have to \
treat it as a task corruption error and wipe out the local state of task 1_0 before re-bootstrapping \
(org.apache.kafka.streams.processor.internals.ProcessorStateManager)
bench-mark state REBALANCING 1796657026738
bench-mark restore-start a-counts-store-changelog-0 counts-store 0 14423 1796657034397
bench-mark restore-end a-counts-store-changelog-0 counts-store 14423 1796657036603
bench-mark state RUNNING 1796657037364
"""
STREAMLET_LOG = """\
2026-12-07 15:22:45,563 INFO streamlet.runtime.task_manager: task 1_0: local state without a checkpoint is not \
trusted; wiping it
2026-12-07 15:22:46,000 INFO streamlet.kafka.changelog_reader: task 1_0: restoring 14423 changelog records
2026-12-07 15:22:46,700 INFO streamlet.kafka.changelog_reader: task 1_0 restored 14423 records
2026-12-07 15:22:46,800 INFO streamlet.runtime.kafka_streams: state transition from REBALANCING to RUNNING
"""


def test_each_systems_restart_is_read_from_its_log() -> None:
    for key, log in [("kafka-streams", KS_LOG), ("streamlet-full-rebuild", STREAMLET_LOG)]:
        assert _RUNNING[engine(key)].search(log)
        assert _WIPED[engine(key)].search(log)
        first, running, restored = marks(system_for(key), log)
        assert restored == 14423 and first is not None and running is not None and running > first
    assert not _WIPED["streamlet"].search(STREAMLET_LOG.splitlines()[-1])
    assert not _WIPED["kafka-streams"].search("\n".join(KS_LOG.splitlines()[1:]))


def test_the_before_mode_removes_every_task_directorys_mark(tmp_path: Path) -> None:
    for task in ("0_0", "1_0"):
        (tmp_path / "app" / task).mkdir(parents=True)
        (tmp_path / "app" / task / TRANSACTIONAL_MARKER).write_text("")
    (tmp_path / "app" / "1_0" / "counts-store").mkdir()
    assert forget_committed_marks(tmp_path) == 2
    assert not list(tmp_path.rglob(TRANSACTIONAL_MARKER))
    assert (tmp_path / "app" / "1_0" / "counts-store").is_dir()
