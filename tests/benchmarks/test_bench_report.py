"""benchmarks/report.py on synthetic results: ratios, target verdicts, wrong outputs never counting,
and RESULTS.md's generated section replaced between its markers only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report

X = report.TIMES  # the multiplication sign of the ratios

LABELS = {"streamlet": "streamlet (1 worker)", "streamlet-2": "streamlet (2 workers)",
          "kafka-streams": "Kafka Streams 3.9.1 (Java)", "kafka-streams-2": "Kafka Streams 3.9.1 (Java, 2 threads)",
          "faust": "faust-streaming 0.15.3",
          "quix": "Quix Streams 3.28.1", "raw-aiokafka": "raw aiokafka pipe (ceiling)"}


def row(key: str, workload: str, rate: int, p99: float | None = None, correct: bool = True,
        **extra: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"system": LABELS[key], "system_key": key, "workload": workload, "records": 100_000,
                         "seconds": round(100_000 / rate, 2), "records_per_s": rate, "peak_rss_mb": 80, "cpu_s": 9.5,
                         "correct": correct, "outputs": 100, "duplicates": 0,
                         "detail": "" if correct else "7 keys missing or wrong, 0 unexpected"}
    if p99 is not None:
        cdf = [round(p99 * (q + 1) / 100, 1) for q in range(100)] + [p99 * 2]
        r.update(p50_ms=cdf[50], p99_ms=p99, samples=1000, saturated=False, latency_cdf_ms=cdf)
    return r | extra


def write(results: Path, workload: str, rows: list[dict[str, Any]]) -> None:
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{workload}.json").write_text(json.dumps(
        {"command": "python -m benchmarks --quick", "records": 100_000, "taken_at": "2026-11-23 15:00 UTC",
         "results": rows}))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    out = tmp_path / "results"
    write(out, "wordcount_eos", [
        row("streamlet", "wordcount_eos", 6_000, p99=300.0),
        row("streamlet-2", "wordcount_eos", 12_000, p99=500.0),  # the faster one: judged for throughput
        row("kafka-streams", "wordcount_eos", 30_000, p99=200.0),
        row("kafka-streams-2", "wordcount_eos", 15_000, p99=250.0),  # streamlet-2's pair
        row("faust", "wordcount_eos", 2_000, p99=900.0),
        row("quix", "wordcount_eos", 10_000, p99=400.0),
    ])
    write(out, "pipe", [
        row("streamlet", "pipe", 20_000),
        row("streamlet-2", "pipe", 30_000),  # no Kafka Streams at 2 threads here: no ratio
        row("kafka-streams", "pipe", 40_000),
        row("faust", "pipe", 5_000),
        # The fastest row of all, but wrong: never the best peer, no ratio, no win.
        row("quix", "pipe", 90_000, correct=False),
        {"system": LABELS["raw-aiokafka"], "system_key": "raw-aiokafka", "workload": "pipe", "n/a": "stateless"},
    ])
    write(out, "join", [
        row("streamlet", "join", 4_000),
        row("kafka-streams", "join", 20_000),
        row("faust", "join", 5_000),
        {"system": LABELS["quix"], "system_key": "quix", "workload": "join", "records": 100_000, "correct": False,
         "error": "Traceback ...\nRuntimeError: quix exited early (code 1)"},
    ])
    (out / "legacy.json").write_text(json.dumps({"command": "old", "results": [{"system": "x"}]}))
    return out


def by_name(results: Path) -> dict[str, report.Workload]:
    return {w.name: w for w in report.load(results)}


def test_load_orders_workloads_and_skips_foreign_files(results: Path) -> None:
    assert [w.name for w in report.load(results)] == ["pipe", "wordcount_eos", "join"]


def test_ratios_against_kafka_streams_and_the_best_correct_python_peer(results: Path) -> None:
    ws = by_name(results)
    eos = ws["wordcount_eos"]
    ks, peer = eos.kafka_streams(), eos.best_python_peer()
    assert ks is not None and peer is not None and peer.key == "quix"
    s2 = eos.row("streamlet-2")
    assert s2 is not None
    assert report.ratio(s2, ks) == pytest.approx(0.4)
    assert report.ratio(s2, peer) == pytest.approx(1.2)
    # Like with like: 2 workers over Kafka Streams at 2 threads, 1 worker over 1 thread.
    ks2 = eos.kafka_streams(paired_with="streamlet-2")
    assert ks2 is not None and ks2.key == "kafka-streams-2"
    assert eos.kafka_streams(paired_with="streamlet") is ks
    lines = report.table(eos)
    s2_line = next(line for line in lines if "streamlet (2 workers)" in line)
    assert f"| 12,000 | 0.80{X} | 1.20{X} |" in s2_line
    s1_line = next(line for line in lines if "streamlet (1 worker)" in line)
    assert f"| 6,000 | 0.20{X} |" in s1_line
    pipe_s2 = next(line for line in report.table(ws["pipe"]) if "streamlet (2 workers)" in line)
    assert f"| 30,000 | {report.NONE} |" in pipe_s2


def test_wrong_output_is_never_the_best_peer_nor_gets_a_ratio(results: Path) -> None:
    pipe = by_name(results)["pipe"]
    best = pipe.best_python_peer()
    assert best is not None and best.key == "faust"  # quix is faster, but wrong
    quix = pipe.row("quix")
    assert quix is not None and not quix.correct
    assert report.ratio(quix, pipe.kafka_streams()) is None
    lines = report.table(pipe)
    quix_line = next(line for line in lines if "Quix" in line)
    assert "no (7 keys missing or wrong" in quix_line
    assert X not in quix_line
    streamlet_line = next(line for line in lines if "streamlet (1 worker)" in line)
    assert f"| 0.50{X} | 4.00{X} |" in streamlet_line  # over Kafka Streams 40,000 and faust 5,000
    assert any("n/a: stateless" in line for line in lines)
    join = by_name(results)["join"]
    best_join = join.best_python_peer()
    assert best_join is not None and best_join.key == "faust"  # quix's run failed


def test_target_verdicts(results: Path) -> None:
    verdicts = {t.text: t for t in report.targets(report.load(results))}

    def find(*words: str) -> report.Target:
        (t,) = [t for text, t in verdicts.items() if all(w in text for w in words)]
        return t

    faust = find("exactly-once", f"5{X}", "faust")
    assert faust.met is True and f"6.00{X}" in faust.actual  # 12,000 (2 workers) / 2,000
    quix = find("exactly-once", f"1.5{X}", "Quix")
    assert quix.met is False and quix.actual.startswith("by 20%") and f"1.20{X}" in quix.actual
    ks = find("exactly-once", f"0.5{X}", "Kafka Streams")
    assert ks.met is True and ks.actual.startswith(f"0.80{X}")  # the better pair: 12,000 / 15,000 (2 threads)
    p99 = find("exactly-once", "p99")
    assert p99.met is True and f"1.50{X}" in p99.actual  # the better pair: 300 / 200 ms (500 / 250 is 2.0)
    assert find("pipe", "faust").met is True
    pipe_quix = find("pipe", "Quix")
    assert pipe_quix.met is None and "output was wrong" in pipe_quix.actual
    join_faust = find("join", "faust")
    assert join_faust.met is False and join_faust.actual.startswith("by 20%")  # 4,000 vs 5,000: behind
    assert find("join", "Quix").met is None
    assert "**missed** by 20%" in join_faust.line()


def test_big_shortfalls_read_as_factors() -> None:
    assert report._shortfall(0.1, 0.5) == f"by 5.0{X}"
    assert report._shortfall(3.0, 2.0, higher_is_better=False) == "by 50%"


def test_main_replaces_only_the_generated_section(results: Path, tmp_path: Path) -> None:
    md = tmp_path / "RESULTS.md"
    md.write_text("# Benchmark results\n\nIntro.\n\n## Hand-written\n\nKeep me.\n")
    report.main(results, md, draw=False)
    text = md.read_text()
    assert text.startswith("# Benchmark results\n\nIntro.\n\n" + report.START)
    assert text.endswith(report.END + "\n\n## Hand-written\n\nKeep me.\n")
    assert "### WordCount exactly-once" in text and "### Targets" in text
    first = text
    report.main(results, md, draw=False)  # idempotent: the markers are found, nothing is added twice
    assert md.read_text() == first
    assert md.read_text().count(report.START) == 1


def test_charts(results: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    md = tmp_path / "RESULTS.md"
    report.main(results, md)
    assert (results / "throughput.png").stat().st_size > 10_000
    assert (results / "latency_wordcount_eos.png").exists()
    assert not (results / "latency_pipe.png").exists()  # no latency data there
    assert "](results/throughput.png)" in md.read_text()


def test_rounds_report_the_median_round_and_never_outvote_a_wrong_one(tmp_path: Path) -> None:
    from benchmarks.__main__ import median_row

    rounds = [row("streamlet", "pipe", rate, machine_probe_ms=ms) for rate, ms in ((30_000, 11.0), (10_000, 18.2),
                                                                                    (20_000, 11.4))]
    median = median_row(rounds)
    assert median["records_per_s"] == 20_000
    assert [r["records_per_s"] for r in median["rounds"]] == [30_000, 10_000, 20_000]
    assert [r["machine_probe_ms"] for r in median["rounds"]] == [11.0, 18.2, 11.4]
    assert median_row(rounds[:2])["records_per_s"] == 10_000  # even: the lower middle
    assert "rounds" not in median_row(rounds[:1])
    wrong = median_row([*rounds, row("streamlet", "pipe", 50_000, correct=False)])
    assert wrong["correct"] is False and wrong["records_per_s"] == 50_000 and len(wrong["rounds"]) == 4

    write(tmp_path, "pipe", [median, row("kafka-streams", "pipe", 40_000)])
    lines = report.table(report.load(tmp_path)[0])
    streamlet_line = next(line for line in lines if line.startswith("| **streamlet"))
    assert f"| 20,000 (median of 3: 10,000{report.NONE}30,000) | 0.50{X} |" in streamlet_line
    assert "median of" not in next(line for line in lines if line.startswith("| Kafka Streams"))


def test_latency_rounds_report_the_median_percentiles_and_never_outvote_a_failed_one() -> None:
    from benchmarks.__main__ import median_latency

    def latency(p50: float, p99: float, **extra: Any) -> dict[str, Any]:
        return {"p50_ms": p50, "p99_ms": p99, "samples": 5_000, "saturated": False, "latency_cdf_ms": [p50, p99],
                **extra}

    rounds = [latency(170, 1_103), latency(182, 655), latency(125, 551)]
    median = median_latency(rounds)
    assert (median["p50_ms"], median["p99_ms"]) == (170, 655)  # each percentile's own median
    assert median["latency_cdf_ms"] == [182, 655]  # the CDF of the median p99's round
    assert [r["p99_ms"] for r in median["latency_rounds"]] == [1_103, 655, 551]
    assert "latency_cdf_ms" not in median["latency_rounds"][0]
    assert (median_latency(rounds[:2])["p50_ms"], median_latency(rounds[:2])["p99_ms"]) == (170, 655)  # even: lower
    assert "latency_rounds" not in median_latency(rounds[:1])
    failed = median_latency([*rounds, {"latency_error": "not up within 120s"}])
    assert failed["latency_error"] == "not up within 120s" and len(failed["latency_rounds"]) == 4


def test_an_avro_workload_is_judged_against_kafka_streams_thread_for_worker(results: Path) -> None:
    write(results, "pipe_avro", [
        row("streamlet", "pipe_avro", 9_000),
        row("streamlet-2", "pipe_avro", 30_000, correct=False),  # faster, but wrong: never judged
        row("kafka-streams", "pipe_avro", 10_000),
        row("kafka-streams-2", "pipe_avro", 12_000),
        {"system": LABELS["faust"], "system_key": "faust", "workload": "pipe_avro", "n/a": "streamlet and KS only"},
    ])
    (target,) = [t for t in report.targets(report.load(results)) if "pipe on Avro" in t.text]
    assert f"1{X} Kafka Streams" in target.text
    assert target.met is False and target.actual.startswith("by 10%") and f"0.90{X}" in target.actual
    write(results, "pipe_avro", [row("streamlet", "pipe_avro", 10_000), row("kafka-streams", "pipe_avro", 10_000)])
    (target,) = [t for t in report.targets(report.load(results)) if "pipe on Avro" in t.text]
    assert target.met is True  # at least 1.0x: equal is met
