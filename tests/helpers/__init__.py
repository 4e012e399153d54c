"""Helpers shared by the test suites: Kafka I/O against the real broker (`tests.helpers.kafka`), apps in
processes of their own (`tests.helpers.app_process`) and the test driver's side of restart tests
(`tests.helpers.driver`). Tests import them from here, never from another test module."""
