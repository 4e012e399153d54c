"""The named user functions of the differential cases, twins of `Runner.Functions` in java/.

Each behaves exactly as its Java twin, nulls included (Java's `String.valueOf` of a Long is Python's
`str` of an int; keys and values are ASCII), so any difference in output comes from the engines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.processor import FixedKeyProcessor, FixedKeyProcessorContext, FixedKeyRecord, TopicNameExtractor
from streamlet.record import KeyValue
from streamlet.stores.api import RecordContext


def _j(v: Any) -> str:
    """Java's string concatenation of a value: `null` for null."""
    return "null" if v is None else str(v)


def _last12(s: str) -> str:
    return s[-12:]


PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "value_even_length": lambda k, v: v is not None and len(str(v)) % 2 == 0,
    "key_before_c": lambda k, v: k is not None and k < "c",
    "value_not_null": lambda k, v: v is not None,
}

VALUE_MAPPERS: dict[str, Callable[[Any], Any]] = {
    "tag": lambda v: "n" if v is None else str(v) + "t",
    "length": lambda v: "0" if v is None else str(len(str(v))),
}

KEY_SELECTORS: dict[str, Callable[[Any, Any], Any]] = {
    # str(v)[0] and [-1] raise on "" as Java's substring(0, 1) and substring(length - 1) do
    "value_first": lambda k, v: None if v is None else str(v)[0],
    "key_and_value_last": lambda k, v: ("n" if k is None else str(k)) + ("n" if v is None else str(v)[-1]),
    "value_length": lambda k, v: None if v is None else str(len(str(v))),
}

KEY_VALUE_MAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "swap": lambda k, v: KeyValue(v, k),
    "key_from_value_first": lambda k, v: KeyValue(None if v is None else str(v)[0], f"{_j(k)}:{_j(v)}"),
}

FLAT_VALUE_MAPPERS: dict[str, Callable[[Any], Any]] = {
    "chars": lambda v: [] if v is None else list(str(v)),
}

FLAT_KEY_VALUE_MAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "twice": lambda k, v: [KeyValue(k, v), KeyValue("n" if k is None else str(k) + "2", v)],
}

REDUCERS: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda a, b: _last12(f"{_j(a)}+{_j(b)}"),
    "unconcat": lambda a, b: _last12(f"{_j(a)}-{_j(b)}"),
}

INITIALIZERS: dict[str, Callable[[], Any]] = {
    "trail": lambda: "",
}

AGGREGATORS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "trail": lambda k, v, agg: _last12(f"{_j(agg)}/{'n' if k is None else k}{'n' if v is None else v}"),
    "untrail": lambda k, v, agg: _last12(f"{_j(agg)}\\{'n' if k is None else k}{'n' if v is None else v}"),
}

MERGERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "trail": lambda k, a, b: _last12(f"{_j(a)}|{_j(b)}"),
}

JOINERS: dict[str, Callable[[Any, Any], Any]] = {
    "pair": lambda a, b: ("n" if a is None else str(a)) + "&" + ("n" if b is None else str(b)),
}


def _first_char_key(v: Any) -> Any:
    c = str(v)[0]
    return "abcd"[int(c) % 4] if "0" <= c <= "8" else None


def _last_char_key(v: Any) -> Any:
    c = str(v)[-1]
    return "abcd"[int(c) % 4] if "0" <= c <= "9" else "a"


FOREIGN_KEYS: dict[str, Callable[[Any], Any]] = {
    "first_char_key": _first_char_key,
    "last_char_key": _last_char_key,
}


def global_key_selector(fn: str) -> Callable[[Any, Any], Any]:
    """Twin of `Functions.globalKeySelector`: the record's key, or a foreign key of its value."""
    if fn == "key":
        return lambda k, v: k
    fk = FOREIGN_KEYS[fn]
    return lambda k, v: None if v is None else fk(v)


# -- process_values, topic name extractors and print (twins of SmallOps in java/) ------------------------------------
class _Stamp(FixedKeyProcessor):
    """Drops null values; restamps the others one ms later."""

    def process(self, record: FixedKeyRecord) -> None:
        if record.value is not None:
            self.context.forward(record.with_value(f"{record.value}s").with_timestamp(record.timestamp + 1))


class _Dup(FixedKeyProcessor):
    """The record, then a copy with a marked value."""

    def process(self, record: FixedKeyRecord) -> None:
        self.context.forward(record)
        self.context.forward(record.with_value(("n" if record.value is None else str(record.value)) + "d"))


class Running(FixedKeyProcessor):
    """Per key, the last 12 characters of every value seen so far, kept in the store `store_name`."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: FixedKeyProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store(self._store_name)

    def process(self, record: FixedKeyRecord) -> None:
        if record.key is None:
            self.context.forward(record)
            return
        prev = self._store.get(record.key)
        new = _last12(("" if prev is None else prev) + ("n" if record.value is None else str(record.value)))
        self._store.put(record.key, new)
        self.context.forward(record.with_value(new))


class VersionedCommands(FixedKeyProcessor):
    """Each value a command on a versioned store (the twin of `VersionedOps.commands`): `p<v>` puts v, None
    puts a tombstone, `d` deletes, `g<t>` reads as of t, `l` reads the latest; the answer is the new value."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: FixedKeyProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store(self._store_name)

    @staticmethod
    def _show(found: Any) -> str:
        if found is None:
            return "-"
        return f"{found.value}@{found.timestamp}" + ("" if found.valid_to is None else f"/{found.valid_to}")

    def process(self, record: FixedKeyRecord) -> None:
        if record.key is None:
            self.context.forward(record)
            return
        key, command, ts = record.key, record.value, record.timestamp
        if command is None:
            answer = f"P{self._store.put(key, None, ts)}"
        elif command.startswith("p"):
            answer = f"P{self._store.put(key, command[1:], ts)}"
        elif command.startswith("d"):
            answer = "D" + self._show(self._store.delete(key, ts))
        elif command.startswith("g"):
            answer = "G" + self._show(self._store.get(key, int(command[1:])))
        else:
            answer = "L" + self._show(self._store.get(key))
        self.context.forward(record.with_value(answer))


FIXED_KEY_PROCESSORS: dict[str, Callable[[], FixedKeyProcessor]] = {"stamp": _Stamp, "dup": _Dup}


class _Extractor(TopicNameExtractor):
    """A named extractor: `str()` is its name, as the Java twin's toString(), which describe() prints."""

    def __init__(self, name: str, fn: Callable[[Any, Any, RecordContext], str]) -> None:
        self._name = name
        self._fn = fn

    def extract(self, key: Any, value: Any, record_context: RecordContext) -> str:
        return self._fn(key, value, record_context)

    def __str__(self) -> str:
        return self._name


TOPIC_EXTRACTORS: dict[str, TopicNameExtractor] = {
    "by_key": _Extractor("by_key", lambda k, v, ctx: "rnull" if k is None else "rlow" if k < "c" else "rhigh"),
    "by_ts": _Extractor("by_ts", lambda k, v, ctx: f"rts{ctx.timestamp % 2}"),
}
EXTRACTOR_TOPICS = {"by_key": ["rhigh", "rlow", "rnull"], "by_ts": ["rts0", "rts1"]}

PRINT_MAPPERS: dict[str, Callable[[Any, Any], str]] = {
    "kv_colon": lambda k, v: f"{_j(k)}:{_j(v)}",
}
