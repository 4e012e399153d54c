"""`streamlet run --workers N`: N worker processes of one application, supervised, one core each.

Why processes: CPython runs Python code on one core per process, so the way to use N cores is N
processes. Each worker is an ordinary `streamlet run` of the same target and settings, hence its own
member of the consumer group `application.id`; the group spreads the tasks over the workers exactly
as it spreads them over machines. This is what Kafka Streams' `num.stream.threads` does within one
JVM (one consumer and a share of the tasks per thread), with processes in place of threads.

Each worker keeps its state in `<state.dir>/worker-<i>` (set through `STREAMLET_WORKER_INDEX`), so a
replaced worker finds the stores it left, and two workers never share a task directory.

The supervisor replaces a worker that dies (a crash, `kill -9`, an application error: Kafka Streams'
`REPLACE_THREAD`), with a growing back-off, and gives up when workers keep dying (`max_restarts`
within `restart_window_s`). SIGINT/SIGTERM are forwarded to every worker, which then close cleanly.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from streamlet.runtime.parent_death import die_with_parent

log = logging.getLogger(__name__)

WORKER_INDEX_ENV = "STREAMLET_WORKER_INDEX"


def thread_number() -> int:
    """This process's number among the pool's workers, from 1 (1 outside a pool): what Kafka Streams'
    stream thread index is in its client ids and static members' `group.instance.id`."""
    return int(os.environ.get(WORKER_INDEX_ENV) or 0) + 1


@dataclass
class Worker:
    index: int
    proc: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)
    next_start: float = 0.0
    done: bool = False


class WorkerPool:
    def __init__(self, worker_args: Sequence[str], workers: int, *, max_restarts: int = 10,
                 restart_window_s: float = 60.0) -> None:
        self.args = [sys.executable, "-m", "streamlet", "run", *worker_args]
        self.workers = [Worker(i) for i in range(workers)]
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self._stopping = False

    def _start(self, worker: Worker) -> None:
        env = dict(os.environ, **{WORKER_INDEX_ENV: str(worker.index)})
        # A worker whose pool process dies (kill -9) is told to close (SIGTERM) instead of running on
        # unsupervised (`die_with_parent`, as the local broker is started).
        worker.proc = subprocess.Popen(self.args, env=env, preexec_fn=die_with_parent())
        log.info("worker %d started (pid %d)", worker.index, worker.proc.pid)

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self._stopping:
            return
        self._stopping = True
        log.info("%s received: closing %d workers", signal.Signals(signum).name, len(self.workers))
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)

    def run(self) -> int:
        """Run until SIGINT/SIGTERM (0 when every worker closed cleanly) or until workers keep dying (1)."""
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for w in self.workers:
            self._start(w)
        failed = False
        while True:
            alive = 0
            for w in self.workers:
                if w.done:
                    continue
                if w.proc is None:
                    if not self._stopping and time.monotonic() >= w.next_start:
                        self._start(w)
                    alive += 1
                    continue
                code = w.proc.poll()
                if code is None:
                    alive += 1
                    continue
                if self._stopping:
                    failed |= code != 0
                    continue
                if code == 0:
                    log.info("worker %d finished (exit 0); not replacing it", w.index)
                    w.done = True
                    continue
                now = time.monotonic()
                w.restarts = [t for t in w.restarts if now - t < self.restart_window_s] + [now]
                if len(w.restarts) > self.max_restarts:
                    log.error("worker %d died %d times within %.0fs; shutting down", w.index,
                              len(w.restarts), self.restart_window_s)
                    failed = True
                    self._on_signal(signal.SIGTERM, None)
                    continue
                delay = min(30.0, 0.5 * 2 ** (len(w.restarts) - 1))
                log.warning("worker %d (pid %d) died with %s; replacing it in %.1fs", w.index, w.proc.pid,
                            f"signal {-code}" if code < 0 else f"exit code {code}", delay)
                w.proc = None
                w.next_start = now + delay
                alive += 1
            if self._stopping and all(w.proc is None or w.proc.poll() is not None for w in self.workers):
                break
            if not alive:
                break
            time.sleep(0.2)
        return 1 if failed else 0
