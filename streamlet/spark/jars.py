"""The jars a Spark session needs to read and write Kafka, fetched once with Maven into the cache.

pyspark ships Spark itself but not its Kafka connector. Resolving the connector with Ivy at session
start (`spark.jars.packages`) would reach the network on every cold start and from every executor;
instead `connector/pom.xml` is resolved once with Maven, like the broker's jars, and only the four jars
that pyspark does not bundle are kept (the other transitive jars are pyspark's own, at the versions its
JVM expects). Sessions get them through `spark.jars`.
"""

from __future__ import annotations

from pathlib import Path

from streamlet.kafka.maven_jars import cache_dir, fetch_maven_jars

SPARK_VERSION = "4.2.0"
"""Pinned with pyproject.toml's `spark` extra and connector/pom.xml: the connector must match pyspark."""

_CONNECTOR_JAR = f"spark-sql-kafka-0-10_2.13-{SPARK_VERSION}.jar"
_KEEP_PREFIXES = ("spark-sql-kafka-0-10_2.13-", "spark-token-provider-kafka-0-10_2.13-", "kafka-clients-",
                  "commons-pool2-")


def _not_in_pyspark(jar_name: str) -> bool:
    return jar_name.startswith(_KEEP_PREFIXES)


def spark_jars_home(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"spark-kafka-{SPARK_VERSION}"


def ensure_spark_jars(cache: Path | None = None) -> list[Path]:
    """The connector's jars (fetched on first use), sorted by name, ready for `spark.jars`."""
    home = spark_jars_home(cache)
    fetch_maven_jars(Path(__file__).resolve().parent / "connector" / "pom.xml", home,
                     f"Spark {SPARK_VERSION} Kafka connector", _CONNECTOR_JAR, keep=_not_in_pyspark)
    return sorted((home / "libs").glob("*.jar"))
