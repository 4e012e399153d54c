"""The Spark engine: the same `Topology` run as Structured Streaming queries (see `SparkStreams`)."""
