"""`python -m benchmarks --keys N`: the input at a given key cardinality (every key occurs, the same every
time), today's input unchanged without it, and the checker exact at N keys (against streamlet's topologies
on the driver). No timings."""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
from collections import Counter
from pathlib import Path

import orjson
import pytest

from benchmarks import workloads as wl


def _digest(records: object) -> str:
    return hashlib.sha256(repr(list(records)).encode()).hexdigest()[:16]


def test_without_keys_the_input_is_the_suites_usual_one_record_for_record() -> None:
    # Digests of the input before the knob existed: results taken without --keys stay comparable.
    assert _digest(wl.word_lines(2000)) == "064904f368ec1906"
    assert _digest((k, v) for k, v, _ts in wl.events(2000)) == "7f3af931fa572488"
    assert _digest((k, v) for k, v, _ts in wl.users()) == "10c338224e2b92bb"


@pytest.mark.parametrize("keys", [1, 7, 1000, 4099])
def test_the_words_cover_every_key_once_the_input_allows_and_repeat_the_same(keys: int) -> None:
    lines = list(wl.word_lines(keys // 3 + 5, keys=keys))
    words = Counter(w for line in lines for w in line.decode().split())
    assert set(words) == {f"w{i}" for i in range(keys)}
    assert lines == list(wl.word_lines(keys // 3 + 5, keys=keys))  # deterministic
    first = [w for line in lines[:10] for w in line.split()][:min(keys, 30)]
    assert len(set(first)) == len(first)  # the first `keys` draws are a permutation


@pytest.mark.parametrize("keys", [5, 1000, 3001])
def test_events_users_and_updates_have_exactly_n_keys(keys: int) -> None:
    evs = list(wl.events(keys + 100, keys=keys))
    assert {k for k, _v, _ts in evs} == {f"u{i}".encode() for i in range(keys)}
    assert evs == list(wl.events(keys + 100, keys=keys))
    table = list(wl.users(keys))
    assert [k for k, _v, _ts in table] == [f"u{i}".encode() for i in range(keys)]
    ups = list(wl.updates(keys + 100, keys))
    assert {k for k, _v, _ts in ups} == {f"k{i}".encode() for i in range(keys)}
    assert {orjson.loads(v)["group"] for _k, v, _ts in ups} <= {f"g{g}" for g in range(wl.groups_of(keys))}


def test_the_table_aggregations_expected_sums_are_the_latest_rows_summed_by_group() -> None:
    records, keys = 5000, 1000
    latest: dict[bytes, dict[str, object]] = {}
    touched: set[str] = set()
    for key, value, _ts in wl.updates(records, keys):
        latest[key] = orjson.loads(value)
        touched.add(str(latest[key]["group"]))
    sums = dict.fromkeys(touched, 0)
    for row in latest.values():
        sums[str(row["group"])] += int(row["amount"])  # type: ignore[call-overload]
    tracker = wl.Expected("table_agg", records, keys=keys).tracker()
    for group, total in sums.items():
        tracker.add(group.encode(), struct.pack(">q", total))
    assert tracker.complete and tracker.check().correct


def _driver_output(workload: str, records: int, keys: int, monkeypatch: pytest.MonkeyPatch,
                   value_bytes: int = 0) -> list[tuple[bytes, bytes]]:
    """streamlet's topology of `workload` on the driver, one partition, over the input at `keys`."""
    from benchmarks.apps import streamlet_app
    from streamlet import Serdes
    from streamlet.testing.test_driver import TopologyTestDriver

    monkeypatch.setenv("BENCH_INPUT", "in")
    monkeypatch.setenv("BENCH_TABLE", "table")
    monkeypatch.setenv("BENCH_OUTPUT", "out")
    app = "wordcount" if workload.startswith("wordcount") else workload
    with TopologyTestDriver(getattr(streamlet_app, app)(), {"application.id": workload}) as driver:
        if workload == "join":
            table = driver.create_input_topic("table", Serdes.Bytes(), Serdes.Bytes())
            for key, value, ts in wl.users(keys):
                table.pipe_input(key, value, ts)
        source = driver.create_input_topic("in", Serdes.Bytes(), Serdes.Bytes())
        for key, value, ts in wl.input_records(wl.INPUT_OF[workload], records, keys, value_bytes=value_bytes):
            source.pipe_input(key, value, ts)
        return [(kv.key, kv.value) for kv in
                driver.create_output_topic("out", Serdes.Bytes(), Serdes.Bytes()).read_key_values_to_list()]


@pytest.mark.parametrize("workload", ["wordcount_alos", "table_agg", "window_count", "join", "pipe"])
def test_the_checker_judges_the_driver_output_at_n_keys_exactly(workload: str, monkeypatch: pytest.MonkeyPatch) -> None:
    records, keys = 6000, 1500
    output = _driver_output(workload, records, keys, monkeypatch)
    expected = wl.Expected(workload, records, partitions=1, keys=keys)
    tracker = expected.tracker()
    for key, value in output:
        tracker.add(key, value)
    check = tracker.check()
    assert check.correct and tracker.complete, check.detail
    if expected.counts is not None:
        assert expected.counts.size >= (keys if workload != "table_agg" else wl.groups_of(keys))
        # One key's last value off by one: wrong, and said so.
        key, value = output[-1]
        tracker.add(key, struct.pack(">q", struct.unpack(">q", value)[0] + 1))
        assert not tracker.check().correct and not tracker.complete
        # Without that key's output at all: incomplete.
        partial = expected.tracker()
        for k, v in output:
            if k != key:
                partial.add(k, v)
        assert not partial.complete and not partial.check().correct
    else:
        tracker.add(*output[0])  # a repeat is a duplicate
        assert tracker.check().duplicates == 1 and not tracker.check().correct


def test_the_checker_takes_no_python_object_per_key() -> None:
    import tracemalloc

    keys = 300_000
    tracemalloc.start()
    expected = wl.Expected("wordcount_eos", keys // 3, keys=keys)
    tracker = expected.tracker()
    size, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert expected.counts is not None and expected.counts.size == keys
    assert size < 20 * keys, size  # two 8-byte arrays, nothing per key besides
    tracker.add(b"w0", struct.pack(">q", expected.counts.wants[0]))
    tracker.add(b"w00", struct.pack(">q", 1))  # not how the word is written
    tracker.add(f"w{keys}".encode(), struct.pack(">q", 1))  # beyond the vocabulary
    assert tracker.matching == 1 and tracker.unexpected == 2


def test_padded_table_rows_have_the_asked_size_and_leave_the_sums_as_they_were(
        monkeypatch: pytest.MonkeyPatch) -> None:
    records, keys = 3000, 800
    plain = list(wl.updates(records, keys))
    padded = list(wl.updates(records, keys, value_bytes=300))
    assert all(len(value) == 300 for _key, value, _ts in padded)
    for (key, value, ts), (pkey, pvalue, pts) in zip(plain, padded, strict=True):
        row = orjson.loads(pvalue)
        assert (key, ts) == (pkey, pts) and row.pop("pad") and row == orjson.loads(value)
    output = _driver_output("table_agg", records, keys, monkeypatch, value_bytes=300)
    assert output == _driver_output("table_agg", records, keys, monkeypatch)
    tracker = wl.Expected("table_agg", records, partitions=1, keys=keys).tracker()
    for key, value in output:
        tracker.add(key, value)
    assert tracker.complete and tracker.check().correct


def test_a_run_with_keys_writes_its_results_beside_the_suites_not_over_them(tmp_path: Path) -> None:
    from benchmarks.__main__ import RESULTS, results_file, write_results

    plain = argparse.Namespace(keys=None, results_dir="", merge=False, records=1000, partitions=8, value_bytes=0)
    scaled = argparse.Namespace(keys=50_000, results_dir="", merge=False, records=1000, partitions=8, value_bytes=0)
    assert results_file("table_agg", plain) == RESULTS / "table_agg.json"
    assert results_file("wordcount_eos", scaled) == RESULTS / "scale" / "wordcount_eos-keys50000.json"
    elsewhere = argparse.Namespace(keys=50_000, results_dir=str(tmp_path), merge=False, records=1000, partitions=8,
                                   value_bytes=0)
    write_results("join", [{"system": "x", "system_key": "streamlet"}], elsewhere)
    written = json.loads((tmp_path / "join-keys50000.json").read_text())
    assert written["keys"] == 50_000 and written["partitions"] == 8 and "value_bytes" not in written
    padded = argparse.Namespace(keys=50_000, results_dir=str(tmp_path), merge=False, records=1000, partitions=8,
                                value_bytes=500)
    write_results("table_agg", [{"system": "x", "system_key": "streamlet"}], padded)
    assert json.loads((tmp_path / "table_agg-keys50000-bytes500.json").read_text())["value_bytes"] == 500
