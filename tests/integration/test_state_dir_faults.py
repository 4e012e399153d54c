"""Issue #11 (3c): state-directory faults on the real broker.

WordCount runs as one `streamlet run` instance while input flows in; part-way it is stopped cleanly
(SIGTERM: last commit, checkpoint), its state directory is damaged while it is down, and it is
started again on that directory. The changelog is the source of truth, so the restarted instance
must rebuild its stores from it: under exactly_once_v2 every word's count updates, read
`read_committed`, are exactly 1..n; under at_least_once no count ends below the truth. A state
directory that cannot be written stops `streamlet run` at once with exit code 1 and a one-line error
naming the path, before it touches the broker.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.helpers.app_process import AppProcess
from tests.integration.chaos import TARGET, run_chaos
from tests.integration.state_faults import corrupt_stores, delete_state_dir, stop_fault_restart

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

STORE = "counts-store"


def _restored_from_changelog(log: str) -> bool:
    """The restarted instance filled its counts store from the changelog (the first run, on empty
    topics, restores nothing and logs no such line)."""
    return f"into {STORE} in" in log and " restored " in log


async def test_exactly_once_after_the_state_dir_was_deleted(kafka_broker: Any, tmp_path: Path) -> None:
    done: list[str] = []
    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=40_000, instances=1,
                             disrupt=stop_fault_restart(delete_state_dir, after=6, restarted=done),
                             guarantee="exactly_once_v2", produce_seconds=14, seed=11)
    assert done and done[0].startswith("deleted"), done
    assert result.check.exact, result.check.summary()
    assert result.check.updates == 40_000
    assert _restored_from_changelog(result.logs[0]), result.logs[0][-4000:]


async def test_at_least_once_after_the_state_dir_was_deleted_loses_nothing(kafka_broker: Any,
                                                                          tmp_path: Path) -> None:
    done: list[str] = []
    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=30_000, instances=1,
                             disrupt=stop_fault_restart(delete_state_dir, after=5, restarted=done),
                             guarantee="at_least_once", produce_seconds=12, seed=12)
    assert done, "the fault was applied"
    assert result.check.no_loss, result.check.summary()
    assert _restored_from_changelog(result.logs[0]), result.logs[0][-4000:]


@pytest.mark.parametrize(("guarantee", "how"), [("exactly_once_v2", "manifest"), ("at_least_once", "log")])
async def test_a_corrupted_store_is_rebuilt_from_its_changelog(kafka_broker: Any, tmp_path: Path,
                                                               guarantee: str, how: str) -> None:
    """The damage is found when the store opens (LevelDB reports the MANIFEST or log as corrupt): the
    task wipes its local state and checkpoint, says so, and restores the store from the changelog."""
    done: list[str] = []
    words = 40_000 if guarantee == "exactly_once_v2" else 30_000
    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=words, instances=1,
                             disrupt=stop_fault_restart(corrupt_stores(STORE, how), after=6, restarted=done),
                             guarantee=guarantee, produce_seconds=14, seed=13)
    assert done, "the fault was applied"
    log = result.logs[0]
    if guarantee == "exactly_once_v2":
        assert result.check.exact, result.check.summary()
        assert result.check.updates == words
    else:
        assert result.check.no_loss, result.check.summary()
    corrupted_dirs = done[0].count(f"/{STORE}:")
    rebuilt = [line for line in log.splitlines() if "rebuilding its stores from their changelogs" in line]
    assert corrupted_dirs >= 1 and len(rebuilt) == corrupted_dirs, (done, rebuilt)
    for line in rebuilt:
        assert f"state store '{STORE}' at {tmp_path / 'state-0'}" in line and "is corrupted" in line, line
    assert _restored_from_changelog(log), log[-4000:]
    assert "Traceback" not in log, log[-4000:]


async def _topics_of(bootstrap: str, app_id: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return [t for t in await admin.list_topics() if t.startswith(app_id)]
    finally:
        await admin.close()


async def _run_expecting_state_dir_error(bootstrap: str, tmp_path: Path, state_dir: Path, workers: int = 1) -> str:
    app_id = f"unwritable-{uuid.uuid4().hex[:8]}"
    app = AppProcess(TARGET, {"bootstrap.servers": bootstrap, "application.id": app_id,
                              "processing.guarantee": "exactly_once_v2", "state.dir": state_dir,
                              "default.key.serde": "String", "default.value.serde": "String"},
                     tmp_path / "app.log", env={"WORDCOUNT_INPUT": f"{app_id}-in", "WORDCOUNT_OUTPUT": f"{app_id}-out"},
                     extra_args=["--workers", str(workers)])
    app.start()
    assert app.proc is not None
    try:
        code = app.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        app.kill()
        raise AssertionError(f"the app did not stop on its own:\n{app.log_text()[-3000:]}") from None
    app.stop()
    log = app.log_text()
    assert code == 1, log
    errors = [line for line in log.splitlines() if line.startswith("streamlet: error:")]
    expected_root = state_dir / "worker-0" / app_id if workers > 1 else state_dir / app_id
    assert len(errors) == 1 and str(expected_root) in errors[0], log
    assert "Traceback" not in log, log
    # Nothing half-started: it failed before preparing topics or joining the group.
    assert await _topics_of(bootstrap, app_id) == []
    return errors[0]


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_state_dir_under_a_regular_file_fails_at_start(kafka_broker: Any, tmp_path: Path, workers: int) -> None:
    """`state.dir` runs through a regular file: mkdir fails with ENOTDIR, which root cannot override
    (the tests run as root, which ignores permission bits, so a chmod would prove nothing). With
    `--workers 2` the check runs before any worker starts (the pool would replace failing workers)."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a regular file\n")
    error = await _run_expecting_state_dir_error(kafka_broker.bootstrap_servers, tmp_path, blocker / "state", workers)
    assert "Not a directory" in error and f"{blocker} is not a directory" in error, error


async def test_an_immutable_state_dir_fails_at_start(kafka_broker: Any, tmp_path: Path) -> None:
    """`state.dir` is an existing directory marked immutable (`chattr +i`): creating anything in it
    fails with EPERM even for root. Skipped where chattr is missing or the file system refuses it."""
    state_dir = tmp_path / "immutable"
    state_dir.mkdir()
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(state_dir)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        error = await _run_expecting_state_dir_error(kafka_broker.bootstrap_servers, tmp_path, state_dir)
        assert "Operation not permitted" in error, error
        assert list(state_dir.iterdir()) == []
    finally:
        subprocess.run([chattr, "-i", str(state_dir)], check=True)
