"""A real trace collector for the tracing tests: Jaeger v2 (an OpenTelemetry Collector distribution), built from
its Go module by `make jaeger`, receiving OTLP over HTTP on loopback, keeping traces in memory, and answering
its query API (`/api/traces/<id>`), which the tests read the spans from. Metrics received over OTLP go to the
collector's Prometheus exporter (`scrape()`)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from streamlet.runtime.parent_death import die_with_parent
from streamlet.testing.local_broker import HOST, free_ports
from tests.helpers.app_process import REPO
from tests.helpers.go_tools import ChildServer, find_built

_VERSION = re.search(r"^JAEGER_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
BINARY = REPO / ".cache" / "bin" / f"jaeger-{_VERSION.group(1) if _VERSION else 'unknown'}"

_CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
    metrics:
      receivers: [otlp]
      processors: [batch]
      exporters: [prometheus]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: {host}:{health}
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: {host}:{query}
    grpc:
      endpoint: {host}:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: {host}:{otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
  prometheus:
    endpoint: {host}:{prometheus}
    resource_to_telemetry_conversion:
      enabled: true
"""


class Jaeger(ChildServer):
    """A Jaeger child process on free loopback ports: `otlp_endpoint` takes spans, `trace(id)` reads them."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.log_path = workdir / "jaeger.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.otlp_port = self.query_port = self.prometheus_port = 0

    @property
    def otlp_endpoint(self) -> str:
        """OTEL_EXPORTER_OTLP_ENDPOINT for an OTLP/HTTP exporter."""
        return f"http://{HOST}:{self.otlp_port}"

    def start(self) -> Jaeger:
        binary = find_built(BINARY, "jaeger", "tracing tests")
        self.otlp_port, self.query_port, query_grpc, health, self.prometheus_port = free_ports(5)
        config = self.workdir / "jaeger.yaml"
        config.write_text(_CONFIG.format(host=HOST, otlp=self.otlp_port, query=self.query_port,
                                         query_grpc=query_grpc, health=health, prometheus=self.prometheus_port))
        with open(self.log_path, "ab") as out:
            self._process = subprocess.Popen([str(binary), "--config", str(config)], stdin=subprocess.DEVNULL,
                                             stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"jaeger exited with {self._process.returncode}: "
                                   f"{self.log_path.read_text(errors='replace')[-3000:]}")
            with contextlib.suppress(OSError):
                self._get("/api/services")
                return self
            time.sleep(0.1)
        raise RuntimeError(f"jaeger did not answer on {HOST}:{self.query_port} within 60s; see {self.log_path}")

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://{HOST}:{self.query_port}{path}", timeout=10) as response:
            return json.loads(response.read())

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        """The spans Jaeger holds for `trace_id` (32 hex digits), each with its `serviceName`; [] when none."""
        try:
            data = self._get(f"/api/traces/{trace_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise
        spans: list[dict[str, Any]] = []
        for found in data.get("data") or []:
            processes = found["processes"]
            for span in found["spans"]:
                spans.append({**span, "serviceName": processes[span["processID"]]["serviceName"]})
        return spans

    def services(self) -> list[str]:
        return list(self._get("/api/services").get("data") or [])

    def operation_traces(self, service: str, operation: str) -> list[dict[str, Any]]:
        """The traces (up to 20) that hold a span of `service` named `operation`."""
        query = urllib.parse.urlencode({"service": service, "operation": operation, "limit": 20})
        return list(self._get(f"/api/traces?{query}").get("data") or [])

    def scrape(self) -> str:
        """The metrics the collector received over OTLP, in Prometheus' text format."""
        with urllib.request.urlopen(f"http://{HOST}:{self.prometheus_port}/metrics", timeout=10) as response:
            return str(response.read().decode())
