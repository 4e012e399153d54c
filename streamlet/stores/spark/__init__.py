"""The Spark backend: key-value and window bytes stores kept in Spark's state (transformWithState)."""

from streamlet.stores.spark.state import SparkStoreState
from streamlet.stores.spark.supplier import check_spark_backend, over_spark_state

__all__ = ["SparkStoreState", "check_spark_backend", "over_spark_state"]
