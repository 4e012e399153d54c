"""The streamlet side of a restart case, for `streamlet run tests.fidelity_restart.streamlet_app:topology`: the
case description is the JSON file named by `RESTART_CASE_FILE` (the settings come with `--set`)."""

from __future__ import annotations

import json
import os

from streamlet.topology import Topology
from tests.fidelity_restart.ops import build


def topology() -> Topology:
    """The topology of the case in `RESTART_CASE_FILE`."""
    with open(os.environ["RESTART_CASE_FILE"], encoding="utf-8") as f:
        topology: Topology = build(json.load(f))
    return topology
