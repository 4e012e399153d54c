"""The command-line tools: `streamlet run | describe | topics | reset | broker | spark | version`.

`main.py` parses the command line and runs a command; `loading.py` loads the application and its
settings for every command; `reset.py` is Kafka Streams' application reset tool (`streamlet reset`);
`spark.py` holds the Spark engine's commands (`streamlet spark ...`).
The tools load an application (`MODULE:FUNCTION`) and its layered settings the same way, so the
helpers for that are public here for the Spark engine's command and for users' scripts.
"""

from streamlet.cli.loading import (
    UsageError,
    configure_logging,
    load_target,
    parse_properties,
    parse_settings,
    read_config_file,
)
from streamlet.cli.main import build_parser, main, run_streams

__all__ = [
    "UsageError",
    "build_parser",
    "configure_logging",
    "load_target",
    "main",
    "parse_properties",
    "parse_settings",
    "read_config_file",
    "run_streams",
]
