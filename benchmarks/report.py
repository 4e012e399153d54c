"""The benchmark report: charts and RESULTS.md's generated part, from benchmarks/results/*.json.

    python -m benchmarks.report                 # after `python -m benchmarks --no-report`, or to redo it

Runs nothing: it reads the JSON files the runner wrote (one per workload, see benchmarks/__main__.py) and
writes, into the same folder, `throughput.png` (records/s per workload and system) and
`latency_<workload>.png` (the latency CDF of every system at 10,000 records/s offered), and replaces the
part of benchmarks/RESULTS.md between the markers below (inserted after the introduction when missing;
everything outside them is left as it is).

A row whose output was wrong never counts: its ratios are not computed, it is never "the best Python
peer", and its bar is grey, hatched and labelled "wrong output". Charts need matplotlib (the `bench`
extra: `pip install -e '.[bench]'`, which `make bench` does); without it only the tables are written.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
RESULTS_MD = REPO / "benchmarks" / "RESULTS.md"

START = "<!-- generated:start -->"
END = "<!-- generated:end -->"

KAFKA_STREAMS = "kafka-streams"
#: Like with like: a streamlet row's Kafka Streams ratio is over Kafka Streams with as many stream
#: threads as it has workers; every other row's is over one stream thread.
KAFKA_STREAMS_PAIR = {"streamlet": KAFKA_STREAMS, "streamlet-2": "kafka-streams-2"}
STREAMLET_KEYS = ("streamlet", "streamlet-2")
SPARK_PAIRS = (("streamlet-spark", "native-spark"), ("streamlet-spark-cluster", "native-spark-cluster"))
"""The Spark engine beside native Spark on the same master: `local[2]`, then the standalone cluster."""
EOS_WORKLOAD = "wordcount_eos"
OFFERED_PER_S = 10_000

#: The percentiles of `latency_cdf_ms`: 0..99, then 99.9.
CDF_PERCENTILES = [*range(100), 99.9]


def _systems_order() -> tuple[list[str], dict[str, str], set[str]]:
    """(system keys in the suite's order, their labels, the Python peers' keys)."""
    try:
        from benchmarks.systems import SYSTEMS
    except Exception:  # the report must not depend on the runner's imports working
        return (["streamlet", "streamlet-2", KAFKA_STREAMS, "kafka-streams-2", "faust", "quix", "raw-aiokafka",
                 "raw-java"], {},
                {"faust", "quix"})
    return list(SYSTEMS), {k: s.label for k, s in SYSTEMS.items()}, {k for k, s in SYSTEMS.items() if s.python_peer}


def _no_latency_workloads() -> set[str]:
    try:
        from benchmarks.workloads import NO_LATENCY
    except Exception:
        return {"session_count"}
    return set(NO_LATENCY)


NO_LATENCY_WORKLOADS = _no_latency_workloads()


def _workloads_order() -> list[str]:
    try:
        from benchmarks.workloads import WORKLOADS
    except Exception:
        return ["pipe", "wordcount_alos", "wordcount_eos", "window_count", "join", "session_count", "stream_join"]
    return list(WORKLOADS)


def _avro_workloads() -> set[str]:
    try:
        from benchmarks.workloads import AVRO_WORKLOADS
    except Exception:
        return {"pipe_avro", "window_count_avro"}
    return set(AVRO_WORKLOADS)


SYSTEM_ORDER, SYSTEM_LABELS, PYTHON_PEERS = _systems_order()
WORKLOAD_ORDER = _workloads_order()
AVRO_WORKLOAD_NAMES = _avro_workloads()
"""Judged against Kafka Streams with the Java Avro serde, not the Python peers (who do not run them)."""

WORKLOAD_TITLES = {
    "pipe": "pipe (parse, filter, map; at-least-once)",
    "wordcount_alos": "WordCount at-least-once",
    "wordcount_eos": "WordCount exactly-once",
    "window_count": "count per user in 1-minute tumbling windows",
    "join": "stream-table join (events ⋈ users)",
    "session_count": "final session counts per user (30 s gap, suppressed until the session closes)",
    "stream_join": "stream-stream join (clicks ⋈ views of the same user within 10 s)",
    "pipe_avro": "pipe on Avro values through a schema registry",
    "window_count_avro": "window count on Avro values through a schema registry",
}

#: streamlet in one highlighted hue (two shades: 1 and 2 workers), the others in calmer distinct colors.
COLORS = {
    "streamlet": "#e8590c",
    "streamlet-2": "#f59f00",
    KAFKA_STREAMS: "#1c7ed6",
    "kafka-streams-2": "#74c0fc",
    "faust": "#2b8a3e",
    "quix": "#7048e8",
    "raw-aiokafka": "#868e96",
    "raw-java": "#495057",
}
FALLBACK_COLORS = ["#0ca678", "#c2255c", "#1098ad", "#5c940d", "#364fc7"]
WRONG_COLOR = "#ced4da"

TIMES = "\u00d7"  # the multiplication sign of ratios
NONE = "\u2013"  # an en dash: an empty cell


# --- the data ---------------------------------------------------------------------------------------


@dataclass
class Row:
    """One system's result on one workload."""

    raw: dict[str, Any]

    @property
    def key(self) -> str:
        return str(self.raw.get("system_key") or self.raw.get("system") or "?")

    @property
    def label(self) -> str:
        return str(self.raw.get("system") or SYSTEM_LABELS.get(self.key, self.key))

    @property
    def na(self) -> str | None:
        value = self.raw.get("n/a")
        return None if value is None else str(value)

    @property
    def error(self) -> str | None:
        value = self.raw.get("error")
        return None if value is None else str(value)

    @property
    def rate(self) -> float | None:
        value = self.raw.get("records_per_s")
        return float(value) if isinstance(value, int | float) and value > 0 else None

    @property
    def correct(self) -> bool:
        """A measured, verified result: the only kind that counts in ratios and targets."""
        return self.na is None and self.error is None and self.raw.get("correct") is True and self.rate is not None

    @property
    def wrong(self) -> bool:
        """Ran, but its output (or its run) was not right."""
        return self.na is None and not self.correct

    @property
    def is_streamlet(self) -> bool:
        return self.key in STREAMLET_KEYS

    @property
    def is_python_peer(self) -> bool:
        return self.key in PYTHON_PEERS

    @property
    def cdf(self) -> list[float] | None:
        cdf = self.raw.get("latency_cdf_ms")
        if not isinstance(cdf, list) or len(cdf) != len(CDF_PERCENTILES):
            return None
        if any(not isinstance(v, int | float) for v in cdf):
            return None
        return [float(v) for v in cdf]

    @property
    def p50(self) -> float | None:
        value = self.raw.get("p50_ms")
        return float(value) if isinstance(value, int | float) else None

    @property
    def p99(self) -> float | None:
        value = self.raw.get("p99_ms")
        return float(value) if isinstance(value, int | float) else None

    @property
    def saturated(self) -> bool:
        return self.raw.get("saturated") is True

    def wrong_reason(self) -> str:
        if self.error is not None:
            return "error: " + _last_line(self.error)
        detail = str(self.raw.get("detail") or "")
        if self.rate is None and not detail:
            detail = "no result"
        return detail or "wrong output"


@dataclass
class Workload:
    """One results file: one workload, every system run on it."""

    name: str
    command: str
    records: int | None
    taken_at: str
    rows: list[Row] = field(default_factory=list)

    @property
    def title(self) -> str:
        return WORKLOAD_TITLES.get(self.name, self.name)

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.key == key), None)

    def kafka_streams(self, paired_with: str | None = None) -> Row | None:
        """Kafka Streams' row, when its result is correct (the baseline of the Kafka Streams ratio): the
        one with as many stream threads as `paired_with` has workers (KAFKA_STREAMS_PAIR), else one."""
        row = self.row(KAFKA_STREAMS_PAIR.get(paired_with or "", KAFKA_STREAMS))
        return row if row is not None and row.correct else None

    def best_python_peer(self) -> Row | None:
        """The fastest Python peer whose output was correct."""
        peers = [r for r in self.rows if r.is_python_peer and r.correct]
        return max(peers, key=lambda r: r.rate or 0.0, default=None)

    def best_streamlet(self) -> Row | None:
        """The faster correct streamlet row (1 or 2 workers)."""
        rows = [r for r in self.rows if r.is_streamlet and r.correct]
        return max(rows, key=lambda r: r.rate or 0.0, default=None)


def ratio(row: Row, baseline: Row | None) -> float | None:
    """row's records/s over baseline's; None unless both are correct results."""
    if baseline is None or not row.correct or not baseline.correct:
        return None
    assert row.rate is not None and baseline.rate is not None
    return row.rate / baseline.rate


def load(results_dir: Path) -> list[Workload]:
    """Every results file in `results_dir`, in the suite's workload order (unknown names after)."""
    workloads: list[Workload] = []
    for path in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"report: skipped {path}: {exc}", file=sys.stderr)
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), list) or "taken_at" not in data:
            print(f"report: skipped {path}: not a results file of `python -m benchmarks`", file=sys.stderr)
            continue
        rows = [Row(r) for r in data["results"] if isinstance(r, dict)]
        records = data.get("records")
        workloads.append(Workload(path.stem, str(data.get("command", "")),
                                  records if isinstance(records, int) else None, str(data["taken_at"]), rows))
    rank = {w: i for i, w in enumerate(WORKLOAD_ORDER)}
    workloads.sort(key=lambda w: (rank.get(w.name, len(rank)), w.name))
    for w in workloads:
        w.rows.sort(key=lambda r: _system_rank(r.key))
    return workloads


def _system_rank(key: str) -> int:
    return SYSTEM_ORDER.index(key) if key in SYSTEM_ORDER else len(SYSTEM_ORDER)


# --- formatting -------------------------------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text.strip()


def _cell(text: str, limit: int = 160) -> str:
    """Text safe inside a markdown table cell."""
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fmt_int(value: float | None) -> str:
    return NONE if value is None else f"{value:,.0f}"


def fmt_ms(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:,.1f}" if value < 10 else f"{value:,.0f}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.2f}{TIMES}" if value < 10 else f"{value:,.1f}{TIMES}"


def fmt_rate_short(value: float) -> str:
    """Bar labels: 95, 9.2k, 143.7k, 1.2M."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}"


# --- the targets ------------------------------------------------------------------------------------


@dataclass
class Target:
    """One target and its verdict: `met` is None when it cannot be judged from the data."""

    text: str
    met: bool | None
    actual: str

    def line(self) -> str:
        if self.met is False:  # actual reads "by N%: ..." or "by Nx: ..." or ": why"
            return f"- {self.text}: **missed** {self.actual}"
        return f"- {self.text}: {'**met**' if self.met else 'not judged'} \u2014 {self.actual}"


def _shortfall(actual: float, goal: float, higher_is_better: bool = True) -> str:
    """How far a missed target is: "by 36%" when within a factor of 2, else "by 3.1x"."""
    factor = goal / actual if higher_is_better else actual / goal
    if factor < 2:
        pct = (1 - actual / goal) * 100 if higher_is_better else (actual / goal - 1) * 100
        return f"by {pct:.0f}%"
    return f"by {factor:.1f}{TIMES}"


def _throughput_target(text: str, candidates: Sequence[Row], baseline: Row | None, baseline_name: str,
                       goal: float, strict: bool = False) -> Target:
    if not candidates:
        return Target(text, None, "no correct streamlet result")
    if baseline is None:
        return Target(text, None, f"no correct {baseline_name} result")
    best = max(candidates, key=lambda r: r.rate or 0.0)
    actual = ratio(best, baseline)
    assert actual is not None
    who = f"{best.label} {fmt_int(best.rate)} vs {fmt_int(baseline.rate)} records/s"
    if actual > goal or (actual == goal and not strict):
        return Target(text, True, f"{fmt_ratio(actual)} ({who})")
    return Target(text, False, f"{_shortfall(actual, goal)}: {fmt_ratio(actual)} ({who})")


def _not_comparable(peer: Row, name: str) -> str:
    what = "run failed" if peer.error is not None else "output was wrong"
    return f"{name}'s {what} ({_cell(peer.wrong_reason(), 100)})"


def _ahead_target(text: str, candidates: Sequence[Row], peer: Row | None, peer_name: str) -> Target:
    if peer is None or peer.na is not None:
        return Target(text, None, f"{peer_name} {'n/a: ' + peer.na if peer and peer.na else 'not measured'}")
    if not peer.correct:
        return Target(text, None, _not_comparable(peer, peer_name))
    return _throughput_target(text, candidates, peer, peer_name, 1.0, strict=True)


def targets(workloads: Sequence[Workload]) -> list[Target]:
    """The goals of issue #4, judged from the data: exactly-once WordCount against each peer, and
    every other workload ahead of both Python peers (the Avro workloads: at least Kafka Streams' rate, thread
    for worker). streamlet is the better of 1 and 2 workers."""
    by_name = {w.name: w for w in workloads}
    out: list[Target] = []
    eos = by_name.get(EOS_WORKLOAD)
    title = "WordCount exactly-once"
    if eos is None:
        return [Target(f"{title}: every target", None, "no results for `wordcount_eos`"), *_other_targets(workloads)]
    streamlet = [r for r in eos.rows if r.is_streamlet and r.correct]
    for key, name, goal in (("faust", "faust", 5.0), ("quix", "Quix Streams", 1.5),
                            (KAFKA_STREAMS, "Kafka Streams", 0.5)):
        peer = eos.row(key)
        text = f"{title}: streamlet's records/s \u2265 {goal:g}{TIMES} {name}"
        if key == KAFKA_STREAMS:
            text += " (with as many stream threads as workers)"
            out.append(_paired_target(text, eos, goal))
        elif peer is not None and peer.na is None and not peer.correct:
            out.append(Target(text, None, _not_comparable(peer, name)))
        else:
            out.append(_throughput_target(text, streamlet, peer if peer is not None and peer.correct else None,
                                          name, goal))
    out.append(_latency_target(f"{title}: streamlet's p99 latency \u2264 2{TIMES} Kafka Streams' (at "
                               f"{OFFERED_PER_S:,} records/s offered)", eos))
    return out + _other_targets(workloads)


def _paired_target(text: str, eos: Workload, goal: float) -> Target:
    """Each streamlet row over its paired Kafka Streams row; the best pair is judged."""
    pairs = [(r, ks) for r in eos.rows if r.is_streamlet and r.correct
             if (ks := eos.kafka_streams(paired_with=r.key)) is not None]
    if not pairs:
        return _throughput_target(text, [r for r in eos.rows if r.is_streamlet and r.correct],
                                  None, "Kafka Streams", goal)
    best, ks = max(pairs, key=lambda p: ratio(*p) or 0.0)
    return _throughput_target(text, [best], ks, ks.label, goal)


def _latency_target(text: str, eos: Workload) -> Target:
    measured = [r for r in eos.rows if r.is_streamlet and r.correct and r.p99 is not None]
    pairs = [(r, ks) for r in measured if (ks := eos.row(KAFKA_STREAMS_PAIR.get(r.key, KAFKA_STREAMS))) is not None
             and ks.p99 is not None and ks.p99 > 0]
    if not pairs:
        return Target(text, None, "no streamlet latency from a correct run" if not measured
                      else "no Kafka Streams latency")
    keeping_up = [p for p in pairs if not p[0].saturated]
    best, ks = min(keeping_up or pairs, key=lambda p: (p[0].p99 or math.inf) / (p[1].p99 or 1.0))
    assert best.p99 is not None and ks.p99 is not None
    actual = best.p99 / ks.p99
    who = f"{best.label} p99 {fmt_ms(best.p99)} ms vs {ks.label} {fmt_ms(ks.p99)} ms"
    if best.saturated:
        return Target(text, False, f"\u2014 streamlet could not keep up with {OFFERED_PER_S:,} records/s "
                                   f"({who}, {fmt_ratio(actual)})")
    if ks.saturated:
        who += "; Kafka Streams itself could not keep up"
    if actual <= 2.0:
        return Target(text, True, f"{fmt_ratio(actual)} ({who})")
    return Target(text, False, f"{_shortfall(actual, 2.0, higher_is_better=False)}: {fmt_ratio(actual)} ({who})")


def _other_targets(workloads: Sequence[Workload]) -> list[Target]:
    out: list[Target] = []
    for w in workloads:
        if w.name == EOS_WORKLOAD:
            continue
        if w.name in AVRO_WORKLOAD_NAMES:
            out.append(_paired_target(f"{w.title}: streamlet's records/s \u2265 1{TIMES} Kafka Streams with its Java "
                                      "Avro serde (as many stream threads as workers)", w, 1.0))
            continue
        streamlet = [r for r in w.rows if r.is_streamlet and r.correct]
        for key in sorted(PYTHON_PEERS, key=_system_rank):
            peer = w.row(key)
            name = peer.label if peer is not None else SYSTEM_LABELS.get(key, key)
            out.append(_ahead_target(f"{w.title}: streamlet ahead of {name}", streamlet, peer, name))
    return out


# --- markdown ---------------------------------------------------------------------------------------


def table(w: Workload) -> list[str]:
    ks, peer = w.kafka_streams(), w.best_python_peer()
    lines = [f"| system | records/s | {TIMES} Kafka Streams | {TIMES} best Python peer | p50 ms | p99 ms | peak RSS MB "
             "| CPU s "
             "| correct |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    notes: list[str] = []
    for r in w.rows:
        name = f"**{_cell(r.label)}**" if r.is_streamlet else _cell(r.label)
        if r.na is not None:
            lines.append(f"| {name} | n/a | | | | | | | n/a: {_cell(r.na)} |")
            continue
        if r.error is not None:
            lines.append(f"| {name} | error |{f' {NONE} |' * 6} no ({_cell(r.wrong_reason())}) |")
            continue
        p50, p99 = fmt_ms(r.p50), fmt_ms(r.p99)
        if r.saturated:
            p99 = f"{p99} (saturated)" if r.p99 is not None else "saturated"
            samples = r.raw.get("samples") or 0
            notes.append(f"{r.label} could not keep up with the {OFFERED_PER_S:,} records/s offered in the latency "
                         "run: " + (f"its latencies ({samples:,} samples) are a lower bound." if samples else
                                    "none of the measured window's output arrived in time."))
        if r.raw.get("latency_na"):
            p50 = p99 = "n/a"
            reason = _cell(str(r.raw["latency_na"]), 200)
            # A workload's own reason is said once; a system's, with its name.
            note = (f"No latency run for this workload: {reason}." if w.name in NO_LATENCY_WORKLOADS
                    else f"{r.label}: latency not measured: {reason}.")
            if note not in notes:
                notes.append(note)
        if "latency_error" in r.raw:
            p50 = p99 = "error"
            notes.append(f"{r.label}'s latency run failed: {_cell(_last_line(str(r.raw['latency_error'])), 200)}")
        n = r.raw.get("records")
        if isinstance(n, int) and w.records is not None and n < w.records:
            notes.append(f"{r.label} ran on the first {fmt_int(n)} of the {fmt_int(w.records)} records "
                         "(see `max_records` in benchmarks/systems.py): its rate is comparable, its CPU s are not.")
        rate = fmt_int(r.rate) + _rounds_note(r)
        verdict = "yes" if r.correct else f"no ({_cell(r.wrong_reason())})"
        rss = r.raw.get("peak_rss_mb")
        cpu = r.raw.get("cpu_s")
        ks_ratio = fmt_ratio(ratio(r, w.kafka_streams(paired_with=r.key)))
        lines.append(f"| {name} | {rate} | {ks_ratio} | {fmt_ratio(ratio(r, peer))} | {p50} | {p99} "
                     f"| {fmt_int(rss if isinstance(rss, int | float) else None)} "
                     f"| {f'{cpu:.1f}' if isinstance(cpu, int | float) else NONE} | {verdict} |")
    for engine_key, native_key in SPARK_PAIRS:
        on_spark, native = w.row(engine_key), w.row(native_key)
        if on_spark is not None and native is not None and on_spark.correct and native.correct:
            notes.append(f"{on_spark.label}: {fmt_ratio(ratio(on_spark, native))} {native.label}'s records/s "
                         f"(target: at least 0.8{TIMES}).")
    baselines = (f"Kafka Streams {fmt_int(ks.rate)} records/s" if ks else "Kafka Streams: no correct result",
                 f"best Python peer {peer.label} {fmt_int(peer.rate)} records/s" if peer
                 else "best Python peer: no correct result")
    ks2 = w.kafka_streams(paired_with="streamlet-2")
    pairing = (f" streamlet (2 workers) is paired with Kafka Streams at 2 threads ({fmt_int(ks2.rate)} records/s)."
               if ks2 is not None else "")
    lines += ["", f"Ratios of records/s over {'; '.join(baselines)}.{pairing} A row with wrong output gets no ratio.",
              *(["", *(f"- {n}" for n in notes)] if notes else [])]
    return lines


def _rounds_note(r: Row) -> str:
    """` (median of N: low-high)` for a row measured in several rounds (`python -m benchmarks --rounds N`)."""
    rates = [x["records_per_s"] for x in r.raw.get("rounds") or () if isinstance(x.get("records_per_s"), int | float)]
    if len(rates) < 2:
        return ""
    return f" (median of {len(rates)}: {fmt_int(min(rates))}{NONE}{fmt_int(max(rates))})"


def generated_section(workloads: Sequence[Workload], md_dir: Path, results_dir: Path,
                      charts: dict[str, Path]) -> str:
    rel = Path(os.path.relpath(results_dir, md_dir)).as_posix()
    out = ["## Latest benchmark run (generated)", "",
           "Generated by `python -m benchmarks.report` from `benchmarks/results/*.json`; edit outside the markers "
           "only. Throughput: the pre-loaded input, output verified (`correct`). Latency: "
           f"{OFFERED_PER_S:,} records/s offered; p50/p99 of output arrival - input timestamp.", ""]
    if not workloads:
        return "\n".join([*out, "No results yet: run `make bench` (or `python -m benchmarks --quick`).", ""])
    runs = sorted({(w.taken_at, w.command, w.records) for w in workloads})
    if len(runs) == 1:
        taken_at, command, records = runs[0]
        out += [f"Taken {taken_at} with `{command}`; {fmt_int(records)} records per run.", ""]
    else:
        out += ["Taken in several runs:", ""]
        out += [f"- {w.name}: {w.taken_at}, `{w.command}`, {fmt_int(w.records)} records per run" for w in workloads]
        out.append("")
    if "throughput" in charts:
        out += [f"![records/s per workload and system]({rel}/{charts['throughput'].name})", ""]
    for w in workloads:
        out += [f"### {w.title}", "", *table(w), ""]
        if w.name in charts:
            out += [f"![latency CDF, {w.name}]({rel}/{charts[w.name].name})", ""]
    out += ["### Targets", "",
            "streamlet is the better of 1 and 2 workers; only correct outputs count.", "",
            *(t.line() for t in targets(workloads)), ""]
    return "\n".join(out)


def splice(text: str, section: str) -> str:
    """`text` with the part between the markers replaced by `section`; the markers are inserted after the
    introduction (before the first `## ` heading) when missing."""
    block = f"{START}\n{section.rstrip()}\n{END}"
    if START in text and END in text and text.index(START) < text.index(END):
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        return before + block + after
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    head = "".join(lines[:at])
    if head and not head.endswith("\n"):
        head += "\n"
    if head and not head.endswith("\n\n"):
        head += "\n"
    return head + block + "\n" + ("\n" + "".join(lines[at:]) if at < len(lines) else "")


# --- charts -----------------------------------------------------------------------------------------


def _colors(keys: Sequence[str]) -> dict[str, str]:
    colors: dict[str, str] = {}
    spare = iter(FALLBACK_COLORS * 4)
    for key in keys:
        colors[key] = COLORS.get(key) or next(spare, "#adb5bd")
    return colors


def throughput_chart(workloads: Sequence[Workload], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    keys = sorted({r.key for w in workloads for r in w.rows}, key=lambda k: (_system_rank(k), k))
    labels = {r.key: r.label for w in workloads for r in w.rows}
    colors = _colors(keys)
    most = max((len(w.rows) for w in workloads), default=1)
    width = 0.84 / max(most, 1)
    fig, ax = plt.subplots(figsize=(max(10.0, 0.42 * most * len(workloads) + 3), 7.5), dpi=110)
    rates = [r.rate for w in workloads for r in w.rows if r.rate]
    lo = 10 ** math.floor(math.log10(max(min(rates, default=10.0), 1.0)))
    ax.set_yscale("log")
    ax.set_ylim(lo, max(rates, default=1000.0) * 14)  # room for the labels above the bars
    label_y = lo * 1.15
    for gi, w in enumerate(workloads):
        for si, row in enumerate(w.rows):  # each group holds the systems that have a row for it
            x = gi + width * (si - (len(w.rows) - 1) / 2)
            key = row.key
            if row.na is not None:
                ax.text(x, label_y, "n/a", ha="center", va="bottom", rotation=90, fontsize=10, color="#868e96")
                continue
            if row.correct:
                assert row.rate is not None
                ax.bar(x, row.rate, width * 0.9, color=colors[key], edgecolor="black" if row.is_streamlet else "none",
                       linewidth=1.2, zorder=3)
                ax.text(x, row.rate * 1.1, fmt_rate_short(row.rate), ha="center", va="bottom", rotation=90,
                        fontsize=10, fontweight="bold" if row.is_streamlet else "normal", zorder=4)
                continue
            if row.rate is not None:  # ran, fast or not, but wrong: never looks like a result
                ax.bar(x, row.rate, width * 0.9, color=WRONG_COLOR, edgecolor="#495057", hatch="///",
                       linewidth=0.8, zorder=3)
                ax.text(x, row.rate * 1.1, "wrong output", ha="center", va="bottom", rotation=90, fontsize=10,
                        color="#c92a2a", zorder=4)
            else:
                ax.text(x, label_y, "error" if row.error else "no result", ha="center", va="bottom",
                        rotation=90, fontsize=10, color="#c92a2a")
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_rate_short(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels([w.name for w in workloads], fontsize=12)
    ax.set_xlim(-0.5, len(workloads) - 0.5)
    ax.set_ylabel("input records/s (log scale, higher is better)", fontsize=12)
    ax.tick_params(axis="y", labelsize=11)
    ax.grid(axis="y", which="major", color="#dee2e6", zorder=0)
    records = sorted({w.records for w in workloads if w.records})
    subtitle = f"records per run: {' / '.join(fmt_int(r) for r in records)}" if records else ""
    ax.set_title(f"Throughput per workload (output verified)\n{subtitle}", fontsize=14)
    handles = [Patch(facecolor=colors[k], edgecolor="black" if k in STREAMLET_KEYS else "none",
                     label=labels.get(k, k)) for k in keys]
    if any(r.wrong and r.rate is not None for w in workloads for r in w.rows):
        handles.append(Patch(facecolor=WRONG_COLOR, edgecolor="#495057", hatch="///", label="wrong output"))
    ax.legend(handles=handles, fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.08),
              ncol=min(4, len(handles)), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def latency_chart(w: Workload, path: Path) -> bool:
    """The latency CDF of every system with one; False (and no file) when none has."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    colors = _colors([r.key for r in w.rows])
    measured = [r for r in w.rows if r.cdf is not None]
    if not measured:
        return False
    fig, ax = plt.subplots(figsize=(10, 6 + 0.3 * len(w.rows)), dpi=110)
    handles: list[Any] = []
    for r in measured:
        cdf = r.cdf
        assert cdf is not None
        xs = [max(v, 0.1) for v in cdf]  # log axis
        label = f"{r.label}: p50 {fmt_ms(r.p50)} ms, p99 {fmt_ms(r.p99)} ms"
        if r.saturated:
            label += " — saturated (could not keep up)"
        if r.wrong:
            label += " — wrong output"
        style = ":" if r.saturated else "--" if r.wrong else "-"
        (line,) = ax.plot(xs, CDF_PERCENTILES, style, color=colors[r.key], linewidth=3.0 if r.is_streamlet else 2.0,
                          label=label, zorder=3 if r.is_streamlet else 2)
        handles.append(line)
    for r in w.rows:
        if r.cdf is None and r.na is None:
            why = ("error" if "latency_error" in r.raw or r.error else
                   "saturated, no output in the window" if r.saturated else "no latency data")
            handles.append(Line2D([], [], color=colors[r.key], linestyle="none", marker="x",
                                  label=f"{r.label}: {why}"))
    ax.set_xscale("log")
    ax.set_xlabel("latency, ms (output arrival - input record timestamp; log scale)", fontsize=12)
    ax.set_ylabel("percentile of output records", fontsize=12)
    ax.set_ylim(0, 100)
    ax.set_yticks([0, 25, 50, 75, 90, 99])
    ax.tick_params(labelsize=11)
    ax.grid(True, which="major", color="#dee2e6")
    ax.grid(True, which="minor", axis="x", color="#f1f3f5")
    ax.set_title(f"Latency CDF: {w.title}\n{OFFERED_PER_S:,} records/s offered, lower/left is better", fontsize=14)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.legend(handles=handles, fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def charts(workloads: Sequence[Workload], results_dir: Path) -> dict[str, Path]:
    """Writes the charts; returns them by name ("throughput" or the workload). Empty without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("report: matplotlib is not installed (pip install -e '.[bench]'): no charts", file=sys.stderr)
        return {}
    out: dict[str, Path] = {}
    if workloads:
        out["throughput"] = results_dir / "throughput.png"
        throughput_chart(workloads, out["throughput"])
    for w in workloads:
        path = results_dir / f"latency_{w.name}.png"
        if latency_chart(w, path):
            out[w.name] = path
        else:
            path.unlink(missing_ok=True)
    return out


def main(results_dir: Path = RESULTS_DIR, results_md: Path = RESULTS_MD, draw: bool = True) -> None:
    results_dir = Path(results_dir)
    results_md = Path(results_md)
    workloads = load(results_dir)
    drawn = charts(workloads, results_dir) if draw and results_dir.is_dir() else {}
    section = generated_section(workloads, results_md.parent, results_dir, drawn)
    text = results_md.read_text() if results_md.exists() else "# Benchmark results\n"
    results_md.write_text(splice(text, section))
    print(f"report: wrote {results_md}" + (f" and {len(drawn)} charts in {results_dir}" if drawn else ""))


if __name__ == "__main__":
    main()
