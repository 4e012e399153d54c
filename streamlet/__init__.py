"""streamlet: Kafka Streams for Python."""
