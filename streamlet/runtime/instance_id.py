"""`claim_instance_id`: the id in this instance's transactional id, kept in its state directory.

Under exactly-once each instance writes through one producer with `transactional.id =
<application.id>-<instance id>` (Kafka Streams: `<application.id>-<processId>-<thread>`). Keeping the
id in the state directory means an instance restarted after a crash starts a producer with the same
transactional id, which aborts the crashed one's open transaction at once; with a fresh id, that
transaction would hold up the partitions it touched until `transaction.timeout.ms` ran out. The id
is locked while the instance runs: a second live instance pointed at the same directory gets an id
of its own, because two live producers sharing one transactional id would fence each other forever.

`ensure_state_directory` is the start-up check of that directory (Kafka Streams' `StateDirectory`
constructor): one that cannot be created or written fails the client before it joins the group,
with the path in the message, instead of failing a task deep inside the first rebalance.

`clean_up` wipes that directory (Kafka Streams' `KafkaStreams.cleanUp()`; the reset tool uses it too).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from streamlet.config import StreamsConfig
from streamlet.errors import StateDirectoryError

log = logging.getLogger(__name__)

ID_FILE = "streamlet.instance.id"
LOCK_FILE = "streamlet.instance.lock"


def state_root(config: Any, application_id: str) -> Path:
    """`<state.dir>/<application.id>` (state.dir defaults to `<tmp>/streamlet`), as Kafka Streams lays it out."""
    import tempfile

    base = config.get("state.dir") or str(Path(tempfile.gettempdir()) / "streamlet")
    return Path(base) / application_id


def ensure_state_directory(root: Path) -> None:
    """Create `root` if needed and prove it writable by creating the lock file every run uses anyway.

    Raises `StateDirectoryError` naming the path otherwise. Creating a file, not testing permission
    bits (`os.access`), is what tells: root ignores the bits, but not a read-only file system, an
    immutable directory or a path running through a regular file."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.close(os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as exc:
        blocker = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), None)
        where = f" ({blocker} is not a directory)" if blocker is not None else ""
        raise StateDirectoryError(
            f"the state directory {root} cannot be created or written: {exc.strerror or exc}{where}; "
            "set state.dir to a directory this process may write") from exc


def claim_instance_id(state_root: Path) -> tuple[str, Callable[[], None]]:
    """The instance id and the function that releases it (call it when the instance stops)."""
    state_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return uuid.uuid4().hex, lambda: None
    path = state_root / ID_FILE
    try:
        instance_id = path.read_text().strip()
    except FileNotFoundError:
        instance_id = ""
    if not instance_id:
        instance_id = uuid.uuid4().hex
        tmp = path.with_suffix(".tmp")
        tmp.write_text(instance_id)
        tmp.replace(path)

    def release() -> None:
        os.close(fd)  # closing the descriptor drops the lock

    return instance_id, release


def clean_up(config: StreamsConfig | Mapping[str, Any]) -> Path | None:
    """Wipe this instance's local state (`<state.dir>/<application.id>`), as Kafka Streams' `cleanUp()`.
    Returns the directory wiped, or None when there was none. The next start restores every store
    from its changelog (or starts empty after a reset deleted the changelogs)."""
    config = StreamsConfig.of(config)
    root = state_root(config, config.application_id)
    if not root.exists():
        return None
    shutil.rmtree(root)
    log.info("wiped the local state of %r in %s", config.application_id, root)
    return root
