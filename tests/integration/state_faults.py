"""State-directory faults for issue #11 (3c): damage a stopped instance's state on disk, then restart it.

`corrupt_leveldb` damages one LevelDB store directory in one of the ways LevelDB (or streamlet's own
checks at open) must report, and `stop_fault_restart` is a chaos disruption (see `chaos.run_chaos`)
that stops the only instance cleanly mid-input, applies a fault to its state directory while it is
down, and starts it again on the same directory. Used by `tests/integration/test_state_dir_faults.py`
and by the store-level tests in `tests/stores/test_leveldb_corruption.py`.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers.app_process import AppProcess
from tests.integration.chaos import Disruption

CORRUPTIONS = ("current", "manifest", "log", "truncated-table", "missing-current")
"""Damage found when the store opens: garbage in CURRENT or the MANIFEST, a flipped byte in the write-ahead
log (LevelDB's paranoid checks), a table cut short or a CURRENT file gone (streamlet's own checks)."""


def _flip_bytes(file: Path, every: int = 257) -> None:
    data = bytearray(file.read_bytes())
    for i in range(min(16, len(data) - 1), len(data), every):
        data[i] ^= 0xFF
    file.write_bytes(bytes(data))


def corrupt_leveldb(store_dir: Path, how: str) -> str:
    """Damage the closed LevelDB database in `store_dir`; returns what was done (for the test's log).

    Raises `ValueError` when the database has nothing to damage that way (no log, no table), so that a
    test never passes on damage that was not done."""
    files = sorted(p for p in store_dir.iterdir() if p.is_file())
    if how == "current":
        (store_dir / "CURRENT").write_text("MANIFEST-999999\n")
        return "CURRENT points to a MANIFEST that does not exist"
    if how == "manifest":
        manifests = [p for p in files if p.name.startswith("MANIFEST-")]
        if not manifests:
            raise ValueError(f"no MANIFEST in {store_dir}")
        for p in manifests:
            p.write_bytes(b"\xff" * max(64, p.stat().st_size))
        return f"overwrote {', '.join(p.name for p in manifests)} with 0xff"
    if how == "log":
        logs = [p for p in files if p.suffix == ".log" and p.stat().st_size > 64]
        if not logs:
            raise ValueError(f"no non-empty write-ahead log in {store_dir}: {[p.name for p in files]}")
        for p in logs:
            _flip_bytes(p)
        return f"flipped bytes in {', '.join(p.name for p in logs)}"
    if how in ("truncated-table", "flipped-table"):
        tables = [p for p in files if p.suffix in (".ldb", ".sst")]
        if not tables:
            raise ValueError(f"no table file in {store_dir}: {[p.name for p in files]}")
        for p in tables:
            if how == "flipped-table":
                _flip_bytes(p, every=97)
            else:
                with p.open("r+b") as fh:
                    fh.truncate(p.stat().st_size // 2)
        done = "flipped bytes in" if how == "flipped-table" else "truncated to half"
        return f"{done} {', '.join(p.name for p in tables)}"
    if how == "missing-current":
        (store_dir / "CURRENT").unlink()
        return "deleted CURRENT"
    raise ValueError(f"unknown corruption {how!r}")


def store_dirs(state_dir: Path, store: str) -> list[Path]:
    """Every task's directory of `store` under an instance's `state.dir` (`<app id>/<task>/<store>`)."""
    return sorted(p for p in state_dir.glob(f"*/*/{store}") if p.is_dir())


StateFault = Callable[[Path], str]
"""Damages a stopped instance's `state.dir`; returns what it did."""


def delete_state_dir(state_dir: Path) -> str:
    """The whole state directory, instance-id file, checkpoints and stores, gone."""
    if not state_dir.is_dir():
        raise ValueError(f"{state_dir} does not exist: nothing to delete")
    shutil.rmtree(state_dir)
    return f"deleted {state_dir}"


def corrupt_stores(store: str, how: str) -> StateFault:
    """Corrupt every task's copy of `store` in the instance's state directory."""

    def fault(state_dir: Path) -> str:
        dirs = store_dirs(state_dir, store)
        if not dirs:
            raise ValueError(f"no {store!r} directory under {state_dir}")
        return "; ".join(f"{d.relative_to(state_dir)}: {corrupt_leveldb(d, how)}" for d in dirs)

    return fault


def stop_fault_restart(fault: StateFault, after: float, restarted: list[str]) -> Disruption:
    """Stop the only instance cleanly (SIGTERM: commit, checkpoint) `after` seconds into the input, apply
    `fault` to its state directory while it is down, and start it again on that directory. What the
    fault did is appended to `restarted`."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        app = apps[0]
        await asyncio.sleep(after)
        began = time.monotonic()
        code = app.stop()
        if code != 0:
            raise AssertionError(f"the clean stop exited with {code}:\n{app.log_text()[-3000:]}")
        done = fault(Path(app.settings["state.dir"]))
        restarted.append(done)
        log(f"[state-fault] stopped cleanly in {time.monotonic() - began:.1f}s; {done}; restarting")
        app.start()
        return 1

    return disrupt
