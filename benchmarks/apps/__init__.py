"""The benchmark's applications for the systems that live in this repository (streamlet, raw aiokafka)."""
