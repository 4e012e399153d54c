"""The Spark engine: the same `Topology` run as Structured Streaming queries (see `SparkStreams`).

`import streamlet` never imports pyspark, and neither does importing this package: `SparkStreams` is
loaded on first use, so that `streamlet spark fetch` and the CLI's help stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamlet.spark.streams import SparkStreams

__all__ = ["SparkStreams"]


def __getattr__(name: str) -> Any:
    if name == "SparkStreams":
        from streamlet.spark.streams import SparkStreams  # on first use: the whole engine (see above)

        return SparkStreams
    raise AttributeError(f"module 'streamlet.spark' has no attribute {name!r}")
