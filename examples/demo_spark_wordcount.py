"""`make demo-spark`: the seed's WordCount on the Spark engine (`local[2]`) against a real broker.

The same `examples/wordcount.py` topology as `make demo`, run by `streamlet spark run` in its own
process: a fresh local broker, the quickstart's topics and three lines, every update the Spark queries
write to `streams-wordcount-output` printed as `word<TAB>count`, then SIGTERM and a clean exit. Exit code
0 only if all 11 updates arrived and the app exited cleanly.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from examples.demo_wordcount import (  # noqa: E402 - after the path fix-up
    INPUT_TOPIC,
    LINES,
    OUTPUT_TOPIC,
    DemoError,
    consume_counts,
    create_topics,
    produce_lines,
    say,
    stop_app,
    tail,
)
from streamlet.testing.local_broker import LocalKafkaBroker  # noqa: E402


def start_app(bootstrap: str, work: Path, log_path: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "streamlet", "spark", "run", "examples.wordcount:topology",
        "--master", "local[2]", "--checkpoint", str(work / "checkpoints"),
        "--set", f"bootstrap.servers={bootstrap}",
        "--set", "application.id=wordcount-spark-demo",
        "--set", "statestore.cache.max.bytes=0",  # no caching: one output record per input word
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with open(log_path, "wb") as log_file:
        return subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                                stderr=subprocess.STDOUT)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="streamlet-spark-demo-") as scratch:
        work = Path(scratch)
        log_path = work / "wordcount-spark.log"
        say("starting a local Apache Kafka broker ...")
        with LocalKafkaBroker() as broker:
            bootstrap = broker.bootstrap_servers
            say(f"broker ready at {bootstrap}; creating {INPUT_TOPIC} and {OUTPUT_TOPIC}")
            asyncio.run(create_topics(bootstrap))
            app = start_app(bootstrap, work, log_path)
            say(f"started `streamlet spark run examples.wordcount:topology --master local[2]` (pid {app.pid})")
            try:
                asyncio.run(produce_lines(bootstrap))
                say(f"wrote {len(LINES)} lines to {INPUT_TOPIC}; reading {OUTPUT_TOPIC} (Spark's first "
                    "micro-batches take a while):")
                counts = asyncio.run(consume_counts(bootstrap, app))
            except DemoError as exc:
                stop_app(app)
                print(f"demo failed: {exc}; last lines of the app's log:\n{tail(log_path)}", file=sys.stderr)
                return 1
            for word, count in counts:
                print(f"{word}\t{count}", flush=True)
            code = stop_app(app)
            if code != 0:
                print(f"demo failed: the app exited with code {code} after SIGTERM; last lines of its log:\n"
                      f"{tail(log_path)}", file=sys.stderr)
                return 1
            say("the Spark app stopped cleanly; stopping the broker")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
