"""WordCount through the TopologyTestDriver: the seed's example, caching, and a hypothesis property."""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from examples.wordcount import INPUT_TOPIC, OUTPUT_TOPIC, split_words, topology
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

SEED_LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"]
SEED_UPDATES = [
    ("all", 1), ("streams", 1), ("lead", 1), ("to", 1), ("kafka", 1),
    ("hello", 1), ("kafka", 2), ("streams", 2),
    ("join", 1), ("kafka", 3), ("summit", 1),
]
NO_CACHE = {"application.id": "wordcount-test", "statestore.cache.max.bytes": 0}


def run_lines(lines: list[str], config: dict[str, object]) -> list[KeyValue]:
    with TopologyTestDriver(topology(), config) as driver:
        inp = driver.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.String())
        out = driver.create_output_topic(OUTPUT_TOPIC, Serdes.String(), Serdes.Long())
        for line in lines:
            inp.pipe_input(None, line)
        return out.read_key_values_to_list()


def test_seed_wordcount_emits_the_eleven_updates_in_order() -> None:
    assert run_lines(SEED_LINES, NO_CACHE) == [KeyValue(k, v) for k, v in SEED_UPDATES]


def test_store_holds_final_counts() -> None:
    with TopologyTestDriver(topology(), NO_CACHE) as driver:
        inp = driver.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.String())
        inp.pipe_value_list(SEED_LINES)
        store = driver.get_key_value_store("counts-store")
        assert store.get("kafka") == 3
        with store.all() as it:
            words = [kv.key for kv in it]
    assert words == sorted(words)  # serialized (UTF-8) key order
    assert set(words) == {"all", "streams", "lead", "to", "kafka", "hello", "join", "summit"}


def test_cache_commits_after_each_repartitioned_record_as_kafkas_driver_does() -> None:
    # Kafka Streams' driver commits (flushing the cache) after every record it processes, including
    # each word read back from the repartition topic, so even with the cache on every count shows.
    updates = run_lines(["a a a b", "a"], {"application.id": "wc-cache"})
    assert updates == [KeyValue("a", 1), KeyValue("a", 2), KeyValue("a", 3), KeyValue("b", 1), KeyValue("a", 4)]


def test_java_split_semantics() -> None:
    assert split_words("Hello, World!") == ["hello", "world"]
    assert split_words("  leading space") == ["", "leading", "space"]
    assert split_words("") == [""]
    assert split_words("...") == []


words = st.sampled_from(["kafka", "streams", "all", "lead", "to", "join", "summit", "hello", "x", "y1"])
line = st.lists(words, min_size=0, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(line, min_size=1, max_size=15))
def test_property_each_word_counts_one_to_n_and_totals_match_counter(lines: list[str]) -> None:
    updates = run_lines(lines, NO_CACHE)
    seen: dict[str, list[int]] = defaultdict(list)
    for kv in updates:
        seen[kv.key].append(kv.value)
    expected = Counter(w for ln in lines for w in split_words(ln))
    for word, counts in seen.items():
        assert counts == list(range(1, len(counts) + 1)), word
    assert {w: c[-1] for w, c in seen.items()} == dict(expected)
