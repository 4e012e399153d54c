"""What the tests that start `streamlet spark ...` as a process share: the WordCount input they feed it,
the command in its own process group (so kill -9 of the group takes the JVM and the Python workers
too), and the check that nothing of a killed group is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.helpers.kafka import Rec
from tests.spark.apps import INPUT_ENV, OUTPUT_ENV

REPO = Path(__file__).resolve().parents[2]
WORDS_PER_PARTITION = 12


def word_lines(topic: str, start_ms: int, count: int) -> list[Rec]:
    """`count` lines over two partitions; each word occurs in lines of one partition only."""
    out = []
    for i in range(count):
        partition = i % 2
        words = " ".join(f"w{partition}x{(i * 7 + j * 5) % WORDS_PER_PARTITION}" for j in range(1 + i % 4))
        out.append(Rec(topic, partition, f"line{i}".encode(), words.encode(), start_ms + i))
    return out


def word_counts(lines: list[Rec]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for r in lines:
        for word in (r.value or b"").decode().split():
            counts[word] += 1
    return dict(counts)


def spark_cli(action: str, bootstrap: str, app_id: str, checkpoint: Path, output: str, input_topic: str,
              log: Path, master: str = "local[2]", settings: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """`streamlet spark ACTION tests.spark.apps:wordcount`, output to `log`, in a session of its own."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{INPUT_ENV: input_topic, OUTPUT_ENV: output})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "streamlet", "spark", action, "tests.spark.apps:wordcount",
               "--master", master, "--checkpoint", str(checkpoint),
               "--set", f"bootstrap.servers={bootstrap}", "--set", f"application.id={app_id}",
               "--set", "statestore.cache.max.bytes=0"]
    for setting in settings:
        command += ["--set", setting]
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def group_alive(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry.name))
    return alive


def kill_group(app: subprocess.Popen[bytes]) -> None:
    """kill -9 of `app`'s process group; fails if any of its processes outlives it by 10 s."""
    os.killpg(app.pid, signal.SIGKILL)
    app.wait()
    deadline = time.monotonic() + 10
    while group_alive(app.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not group_alive(app.pid), "kill -9 left processes of the Spark app behind"
