"""`die_with_parent`: children that must not outlive the process that started them.

A local broker started by a test run, the workers of `streamlet run --workers N`, and the systems a
benchmark starts all have the same problem: if their parent is killed (Ctrl-C, a CI timeout, kill -9),
they run on as orphans holding ports and CPU. Linux can signal a child when its parent dies
(`PR_SET_PDEATHSIG`); this module sets that up as a `preexec_fn` for `subprocess.Popen`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to send `sig` to the child when the process that started it dies
    (None off Linux). SIGTERM lets the child close cleanly; SIGKILL is for children whose clean close
    could wait on something that died with the parent.

    The signal is tied to the *thread* that starts the child, so start children from a long-lived thread.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent already died before the hook ran
            os._exit(1)

    return hook
