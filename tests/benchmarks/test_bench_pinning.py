"""`python -m benchmarks --system-cpus`: a system under test and everything it starts run on the given CPUs,
and a running process (the broker) can be moved, every thread of it, to the others."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from benchmarks.measure import _pinned, pin_process

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")

PRINT_AFFINITY = "import os, subprocess, sys; print(sorted(os.sched_getaffinity(0))); sys.stdout.flush(); " \
                 "subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'])"


def test_a_started_system_and_its_children_run_on_the_given_cpus() -> None:
    out = subprocess.run([sys.executable, "-c", PRINT_AFFINITY], preexec_fn=_pinned(None, {CPUS[-1]}),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [f"[{CPUS[-1]}]", f"[{CPUS[-1]}]"]
    unpinned = subprocess.run([sys.executable, "-c", PRINT_AFFINITY], preexec_fn=_pinned(None, None),
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert unpinned == [str(CPUS)] * 2


def test_every_thread_of_a_running_process_moves() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        pin_process(os.getpid(), {CPUS[0]})
        time.sleep(0.01)
        tids = [int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")]
        assert len(tids) >= 2
        assert {tuple(sorted(os.sched_getaffinity(t))) for t in tids} == {(CPUS[0],)}
    finally:
        pin_process(os.getpid(), set(CPUS))
        stop.set()
        worker.join()


PIN_SYSTEMS = """
import os, subprocess, sys, time
from benchmarks import measure
service = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
try:
    measure.pin_systems(sys.argv[1], service.pid)
    print(sorted(measure.SYSTEM_CPUS), sorted(os.sched_getaffinity(service.pid)), sorted(os.sched_getaffinity(0)))
finally:
    service.kill()
"""


def test_system_cpus_go_to_the_systems_and_the_rest_to_the_services_and_the_runner() -> None:
    # In a child process: pin_systems moves the calling runner too.
    out = subprocess.run([sys.executable, "-c", PIN_SYSTEMS, str(CPUS[0])], capture_output=True, text=True,
                         check=True).stdout.split("] ")
    rest = str(CPUS[1:])[1:-1]
    assert out == [f"[{CPUS[0]}", f"[{rest}", f"[{rest}]\n"]
