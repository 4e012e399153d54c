# streamlet: every target sets up what it needs on a fresh machine (needs python3 >= 3.11, Java 17+,
# Maven). Stamp files keep repeated runs fast: the venv is rebuilt only when pyproject.toml changes,
# and the Kafka jars are fetched once into the cache (.cache/ in this checkout).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
BENCH_INSTALLED := $(VENV)/.bench-installed

export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1

.PHONY: all compile demo demo-spark test lint docs broker-jars registry-jars keycloak js-serdes spark-jars toxiproxy jaeger prometheus chromium bench bench-spark bench-quick bench-scale bench-restore bench-report chaos chaos-repeat spark-chaos soak fidelity fidelity-restart venv clean distclean

all: test

venv: $(INSTALLED)

$(INSTALLED): pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "streamlet needs Python 3.11+, but $(PYTHON) is " + sys.version.split()[0] + " (run make PYTHON=python3.11 ...)")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[spark,dev,registry,otel]'
	touch $@

# The hot path compiled with mypyc (setup.py; the modules are listed in streamlet/_compiled.py), rebuilt in place
# when one of their sources changed since the last build (a no-op otherwise; about 30 s when not). Without a C
# compiler it stays pure Python; a stale build is never used (streamlet/_compiled.py checks each source's hash).
compile: $(INSTALLED)
	$(BIN)/python setup.py -q build_ext --inplace

# The same code path as the tests (streamlet.testing.local_broker.ensure_kafka_jars), for every supported
# Kafka version (4.4.0, the default, and 3.9.1): no-op once fetched.
broker-jars: $(INSTALLED)
	$(BIN)/python -m streamlet broker fetch

# The development and test schema registry (streamlet.testing.local_registry: Apicurio Registry 2.6.13.Final,
# Confluent's API), and 3.3.3 (Java 21+) for the byte-equality tests against the 3.x line's Java serdes; each
# fetched once with Maven and unpacked into .cache/apicurio-registry-<version>; no-op once there.
registry-jars: $(INSTALLED)
	$(BIN)/python -m streamlet registry fetch
	$(BIN)/python -m streamlet registry fetch --version 3.3.3

# Keycloak 26.4.0 (Maven Central, Java 21+), which checks the registry's passwords for the wrong-credentials tests
# (tests/helpers/keycloak.py); fetched once into .cache/keycloak-<version>; no-op once there.
keycloak: $(INSTALLED)
	$(BIN)/python -c "from tests.helpers.keycloak import keycloak_home; print(keycloak_home())"

# Confluent's official JavaScript serializers (@confluentinc/schemaregistry, versions pinned by the committed
# tests/js/confluent_serdes/package-lock.json) for the byte-equality test against Confluent's own serializers
# (tests/schema_registry/test_confluent_js_byte_equality.py); installed with `npm ci`, again only when the lock
# file changes (Node.js 20+ and npm).
JS_SERDES := tests/js/confluent_serdes
js-serdes: $(JS_SERDES)/node_modules/.installed

$(JS_SERDES)/node_modules/.installed: $(JS_SERDES)/package.json $(JS_SERDES)/package-lock.json
	@command -v npm >/dev/null || { echo "make js-serdes: npm was not found; the Confluent byte-equality test runs Confluent's JavaScript client with it: install Node.js 20+ and npm" >&2; exit 1; }
	cd $(JS_SERDES) && npm ci --no-audit --no-fund
	touch $@

# Spark's Kafka connector and the three jars it needs that pyspark lacks (streamlet.spark.jars), fetched
# once with Maven into .cache/spark-kafka-<version>/libs; no-op once there.
spark-jars: $(INSTALLED)
	$(BIN)/python -m streamlet spark fetch

# The fault-injecting TCP proxy of the network-fault tests (tests/integration/toxiproxy.py runs it), built
# from source with Go into .cache/bin; no-op when the pinned version is there. Go is looked up on PATH,
# then where the official tarball puts it.
TOXIPROXY_VERSION := v2.12.0
TOXIPROXY := $(CURDIR)/.cache/bin/toxiproxy-server
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)

toxiproxy:
	@$(TOXIPROXY) -version 2>/dev/null | grep -qF ' $(TOXIPROXY_VERSION)' || { \
	  test -x $(GO) || { echo "make toxiproxy: Go was not found (go on PATH or /usr/local/go/bin/go); the network-fault tests build toxiproxy-server with it: install Go 1.23+ (https://go.dev/dl/)" >&2; exit 1; }; \
	  echo "building toxiproxy-server $(TOXIPROXY_VERSION) with $(GO) into $(dir $(TOXIPROXY))"; \
	  GOBIN=$(CURDIR)/.cache/toxiproxy-build $(GO) install \
	    -ldflags '-X github.com/Shopify/toxiproxy/v2.Version=$(TOXIPROXY_VERSION)' \
	    github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION) && \
	  mkdir -p $(dir $(TOXIPROXY)) && mv $(CURDIR)/.cache/toxiproxy-build/server $(TOXIPROXY) && \
	  rmdir $(CURDIR)/.cache/toxiproxy-build; }

# A real trace collector for the tracing test (tests/telemetry): Jaeger (its v2 binary, an OpenTelemetry
# Collector distribution receiving OTLP, with in-memory storage and a query API), built from its Go module into
# .cache/bin; no-op when the pinned version is there. Its go.mod is made in a scratch module (`go get -tool`, as
# the module's own replace directives rule out `go install ...@version`).
JAEGER_VERSION := v1.75.0
JAEGER := $(CURDIR)/.cache/bin/jaeger-$(JAEGER_VERSION)

jaeger:
	@test -x $(JAEGER) || { \
	  test -x $(GO) || { echo "make jaeger: Go was not found (go on PATH or /usr/local/go/bin/go); the tracing test builds Jaeger with it: install Go 1.25+ (https://go.dev/dl/)" >&2; exit 1; }; \
	  echo "building jaeger $(JAEGER_VERSION) with $(GO) into $(dir $(JAEGER)) (a few minutes)"; \
	  rm -rf $(CURDIR)/.cache/jaeger-build && mkdir -p $(CURDIR)/.cache/jaeger-build $(dir $(JAEGER)) && \
	  cd $(CURDIR)/.cache/jaeger-build && $(GO) mod init streamlet-jaeger-build >/dev/null 2>&1 && \
	  $(GO) get -tool github.com/jaegertracing/jaeger/cmd/jaeger@$(JAEGER_VERSION) && \
	  $(GO) build -o $(JAEGER).tmp github.com/jaegertracing/jaeger/cmd/jaeger && mv $(JAEGER).tmp $(JAEGER) && \
	  cd $(CURDIR) && rm -rf $(CURDIR)/.cache/jaeger-build; }

# A real Prometheus server (and promtool) for the metrics test (tests/metrics): Debian's package,
# installed when missing (CI runs as root on a fresh Debian machine).
prometheus:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "make prometheus: install Prometheus (prometheus and promtool on PATH)" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }

# A real headless browser for the live page's test (tests/http): Debian's chromium, installed when missing.
chromium:
	@command -v chromium >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "make chromium: install Chromium (chromium on PATH)" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; }

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/mypy

# The whole suite on Kafka 3.9.1, then the broker-level exactly-once, chaos and security tests again on the
# default broker, Kafka 4.4.0 (LocalKafkaBroker's default), so that both lines stay proven within CI's budget,
# with the streams-group (KIP-1071) tests, which only a 4.2+ broker runs.
SUITE_KAFKA_VERSION ?= 3.9.1
OTHER_KAFKA_VERSION ?= 4.4.0
OTHER_VERSION_TESTS := tests/integration/test_wordcount_broker.py \
	tests/integration/test_chaos.py tests/integration/test_fenced_offsets.py tests/integration/test_fenced_abort.py \
	tests/integration/test_secured_cluster.py tests/integration/test_streams_group_protocol.py \
	tests/integration/test_streams_group_runtime.py tests/integration/test_streams_group_rolling_move.py \
	tests/interop/test_operators_rolling_move.py tests/integration/test_streams_group_queries.py \
	tests/integration/test_committed_lag.py \
	'tests/integration/test_static_membership.py::test_streams_group_static_members_closed_and_restarted_keep_their_tasks' \
	'tests/integration/test_static_membership.py::test_streams_group_member_killed_and_restarted_keeps_its_tasks' \
	'tests/integration/test_static_membership.py::test_a_killed_static_member_of_a_streams_group_waits_for_its_old_session' \
	tests/integration/test_streams_group_states.py tests/integration/test_static_membership_kafka_streams.py \
	'tests/fidelity_restart/test_restart_differential.py::test_rolling_swap_gives_kafka_streams_output' \
	'tests/interop/test_avro_app_move.py::test_output_equals_the_reference[rolling]' \
	'tests/interop/test_avro_app_move.py::test_changelog_equals_the_reference[rolling]' \
	'tests/interop/test_avro_app_move.py::test_the_move_was_real_and_no_instance_failed[rolling]'
# Two pytest-xdist workers (TEST_WORKERS): most tests wait on brokers, JVMs and subprocesses, so two halve the
# wall time on two cores; tests/conftest.py keeps each file, and all the Java-building ones, on one worker.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --durations=30

test: lint docs compile broker-jars registry-jars keycloak js-serdes spark-jars toxiproxy jaeger prometheus chromium
	STREAMLET_KAFKA_VERSION=$(SUITE_KAFKA_VERSION) $(BIN)/pytest -q $(PYTEST_PARALLEL)
	STREAMLET_KAFKA_VERSION=$(OTHER_KAFKA_VERSION) $(BIN)/pytest -q -p no:cacheprovider $(PYTEST_PARALLEL) $(OTHER_VERSION_TESTS)

# The documentation (docs/), built with Sphinx; any warning fails the build. Output: docs/_build/html.
docs: $(INSTALLED)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html

demo: compile broker-jars
	$(BIN)/python examples/demo_wordcount.py

# The same WordCount on the Spark engine (streamlet spark run, local[2]); under 3 minutes.
demo-spark: compile broker-jars spark-jars
	$(BIN)/python examples/demo_spark_wordcount.py

# The long chaos run: 2,000,000 words, 12 kill -9 of random instances, exactly-once checked.
chaos: compile broker-jars
	$(BIN)/python -m tests.integration.chaos --words 2000000 --kills 12

# Chaos on Spark: WordCount under exactly_once_v2 on `streamlet spark run`, 3 kill -9 of the driver
# (JVM and Python workers too) at random moments and a task failed mid-batch; exactly 1..n per word. ~3 minutes.
spark-chaos: compile broker-jars spark-jars
	STREAMLET_SPARK_CHAOS=1 $(BIN)/pytest -q -s -p no:cacheprovider tests/integration/test_spark_eos_chaos.py

# Repeated runs: every chaos test (and the lost-membership test) RUNS times, each run a fresh
# pytest process; ends with a table of passes and failures per test. Nothing is retried.
RUNS ?= 20
chaos-repeat: compile broker-jars
	$(BIN)/python -m tests.integration.repeat --runs $(RUNS)

# The soak: three exactly-once apps at once under mixed random faults for MINUTES (not in `make test`).
MINUTES ?= 30
soak: compile broker-jars toxiproxy
	$(BIN)/python -m tests.integration.soak --minutes $(MINUTES)

# The differential suite at length: CASES generated topologies and inputs, each run on Kafka Streams
# 4.4.0's own TopologyTestDriver (tests/java/fidelity, built with Maven on first use; FIDELITY_KAFKA_VERSION=3.9.1
# for the older line) and on streamlet's, record for record (`make test` runs 2,000 of them). A case is a round
# trip between the JVM and streamlet that keeps under half a core busy, so the cases run in shards on LANES
# pytest-xdist workers side by side, each worker with its own JVM (tests/fidelity/shards.py). Twice as many shards
# as lanes, and idle workers steal queued shards (`worksteal`: `load` queued two long shards behind each other on
# one worker while others sat idle).
CASES ?= 50000
LANES ?= 4
fidelity: compile $(INSTALLED)
	FIDELITY_CASES=$(CASES) FIDELITY_SHARDS=$$(( $(LANES) * 2 )) $(BIN)/pytest -q -p no:cacheprovider -n $(LANES) \
	  --dist worksteal tests/fidelity

# The restart differential suite at length (tests/fidelity_restart/README.md): CASES generated cases (given
# on the command line; else RESTART_CASES, 300) from seed RESTART_SEED (random when empty), each run on Kafka
# Streams 4.4.0 (tests/java/fidelity's RestartApp, a real application) and on streamlet against a fresh local broker
# through the same stop point (a clean close, a kill -9 after a commit, a kill -9 with a batch in flight) and
# restart, the outputs compared record for record (`make test` runs a handful); RESTART_JOBS cases at a time.
# Differing cases are run again (does each system repeat itself?) and without a restart. Results in
# $TMPDIR/streamlet-fidelity-restart/.
RESTART_CASES ?= 300
RESTART_JOBS ?= 2
RESTART_SEED ?=
fidelity-restart: compile broker-jars
	FIDELITY_RESTART_CASES=$(if $(filter command line,$(origin CASES)),$(CASES),$(RESTART_CASES)) \
	  FIDELITY_RESTART_JOBS=$(RESTART_JOBS) $(if $(RESTART_SEED),FIDELITY_RESTART_SEED=$(RESTART_SEED)) \
	  $(BIN)/python -m tests.fidelity_restart --recheck --control

# The benchmark's extra (matplotlib for the report's charts), on top of the venv; not needed by `make test`.
$(BENCH_INSTALLED): pyproject.toml $(INSTALLED)
	$(BIN)/python -m pip install -q -e '.[spark,dev,registry,bench]'
	touch $@

# Every workload on every system (long; the Spark engine and native Spark's WordCount included); writes
# benchmarks/results/ and regenerates benchmarks/RESULTS.md.
bench: compile broker-jars spark-jars $(BENCH_INSTALLED)
	$(BIN)/python -m benchmarks

# WordCount on the Spark engine beside native Spark Structured Streaming, local[1], local[2] and a standalone
# cluster on loopback (spark-cluster: a master and two one-core workers, benchmarks/spark_cluster.py), as
# bounded runs (backfills) in one SparkSession per master (benchmarks/spark_bench.py; writes benchmarks/results/spark.json).
# make bench runs both continuously beside the other systems.
bench-spark: compile broker-jars spark-jars
	$(BIN)/python -m benchmarks.spark_bench

bench-quick: compile broker-jars spark-jars $(BENCH_INSTALLED)
	$(BIN)/python -m benchmarks --quick

# The workloads that keep state by key (WordCount both ways, table_agg, window_count, join: benchmarks/workloads.py's
# SCALE_WORKLOADS) at SCALE_KEYS keys over SCALE_RECORDS records, streamlet (1 worker) beside Kafka Streams
# (1 thread), each on CPU 0 and the broker and runner on the others; every output verified. Writes
# benchmarks/results/scale/<workload>-keys<N>.json (not the suite's tables). Larger: make bench-scale SCALE_KEYS=10000000
SCALE_KEYS ?= 1000000
SCALE_RECORDS ?= 2000000
bench-scale: compile broker-jars $(BENCH_INSTALLED)
	$(BIN)/python -m benchmarks --workloads scale --systems streamlet,kafka-streams --keys $(SCALE_KEYS) \
	  --records $(SCALE_RECORDS) --system-cpus 0

# Restoring a 1,000,000-record count-store changelog, streamlet (1 worker) beside Kafka Streams (1 thread)
# (benchmarks/restore.py; writes benchmarks/results/restore.json). Not part of make bench.
bench-restore: compile broker-jars $(BENCH_INSTALLED)
	$(BIN)/python -m benchmarks.restore

# RESULTS.md's generated part and the charts, from the JSON in benchmarks/results/ (runs nothing).
bench-report: $(BENCH_INSTALLED)
	$(BIN)/python -m benchmarks.report

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find streamlet -name '*.so' -delete; rm -f streamlet/_compiled_manifest.json streamlet/_compiled_fallback.txt
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

# Also the virtualenv and the downloaded Kafka jars (and the dev broker's data in .cache/).
distclean: clean
	rm -rf $(VENV) .cache
