"""Kafka Streams' name generator: one counter shared by processor names and generated store names.

Every DSL operation takes the next index even when the user names it (Kafka Streams "burns" the
index to keep generated names stable when a name is added later), so the same program yields the
same `KSTREAM-FILTER-0000000003` here as in Java. The prefixes are Kafka Streams' own.
"""

from __future__ import annotations

import re

# Processor name prefixes.
SOURCE = "KSTREAM-SOURCE-"
SINK = "KSTREAM-SINK-"
FILTER = "KSTREAM-FILTER-"
MAP = "KSTREAM-MAP-"
MAPVALUES = "KSTREAM-MAPVALUES-"
FLATMAP = "KSTREAM-FLATMAP-"
FLATMAPVALUES = "KSTREAM-FLATMAPVALUES-"
KEY_SELECT = "KSTREAM-KEY-SELECT-"
PEEK = "KSTREAM-PEEK-"
FOREACH = "KSTREAM-FOREACH-"
MERGE = "KSTREAM-MERGE-"
PROCESSOR = "KSTREAM-PROCESSOR-"
PROCESSVALUES = "KSTREAM-PROCESSVALUES-"
PRINTER = "KSTREAM-PRINTER-"
REPARTITION = "KSTREAM-REPARTITION-"
AGGREGATE = "KSTREAM-AGGREGATE-"
REDUCE = "KSTREAM-REDUCE-"
JOIN = "KSTREAM-JOIN-"
LEFTJOIN = "KSTREAM-LEFTJOIN-"
JOINTHIS = "KSTREAM-JOINTHIS-"
JOINOTHER = "KSTREAM-JOINOTHER-"
OUTERTHIS = "KSTREAM-OUTERTHIS-"
OUTEROTHER = "KSTREAM-OUTEROTHER-"
OUTERSHARED = "KSTREAM-OUTERSHARED-"
WINDOWED = "KSTREAM-WINDOWED-"
TOTABLE = "KSTREAM-TOTABLE-"
BRANCH = "KSTREAM-BRANCH-"
KTABLE_SOURCE = "KTABLE-SOURCE-"
KTABLE_FILTER = "KTABLE-FILTER-"
KTABLE_MAPVALUES = "KTABLE-MAPVALUES-"
KTABLE_TOSTREAM = "KTABLE-TOSTREAM-"
KTABLE_SUPPRESS = "KTABLE-SUPPRESS-"
KTABLE_SELECT = "KTABLE-SELECT-"
KTABLE_AGGREGATE = "KTABLE-AGGREGATE-"
KTABLE_REDUCE = "KTABLE-REDUCE-"
KTABLE_MERGE = "KTABLE-MERGE-"
KTABLE_JOINTHIS = "KTABLE-JOINTHIS-"
KTABLE_JOINOTHER = "KTABLE-JOINOTHER-"

STATE_STORE = "STATE-STORE-"
REPARTITION_TOPIC_SUFFIX = "-repartition"
TABLE_SOURCE_SUFFIX = "-source"

_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")


def is_generated(name: str) -> bool:
    """True for a name the generator made (a repartition topic named after it gets generated nodes)."""
    return _GENERATED.fullmatch(name) is not None


class NameGenerator:
    """The builder-wide counter behind every generated name, and the record of the internal resources
    (stores, changelog and repartition topics) whose names were generated rather than given: Kafka Streams'
    explicit naming check (KIP-1111, `ensure.explicit.internal.resource.naming`) lists them, and they are
    the names that change when the topology changes shape, breaking a running application's state."""

    def __init__(self) -> None:
        self._index = 0
        self.implicit_changelogs: list[str] = []
        self.implicit_stores: list[str] = []
        self.implicit_repartitions: list[str] = []

    def _next(self) -> int:
        index = self._index
        self._index += 1
        return index

    def processor_name(self, prefix: str) -> str:
        return f"{prefix}{self._next():010d}"

    def store_name(self, prefix: str) -> str:
        return f"{prefix}{STATE_STORE}{self._next():010d}"

    def materialized_store_name(self, given: str | None, prefix: str, logged: bool) -> str:
        """The store name a DSL operation materializes: the user's, else a generated one, recorded as
        implicit with its changelog when `logged` (Kafka Streams' MaterializedInternal)."""
        if given is not None:
            return given
        name = self.store_name(prefix)
        self.implicit_store(name, logged)
        return name

    def implicit_store(self, name: str, logged: bool) -> None:
        """Record a store whose name was generated (and its changelog, when `logged`)."""
        if logged:
            self.implicit_changelogs.append(name + "-changelog")
        self.implicit_stores.append(name)

    def unprovided_names(self) -> str | None:
        """Kafka Streams' message naming the internal resources with generated names, or None."""
        sections = [("changelog topic(s)", self.implicit_changelogs), ("state store(s)", self.implicit_stores),
                    ("repartition topic(s)", self.implicit_repartitions)]
        lines = [f"Following {what} has not been named: {', '.join(names)}\n" for what, names in sections if names]
        return "".join(lines) or None

    def name_or_generate(self, name: str | None, prefix: str) -> str:
        """The user's name if given, else a generated one; the index is used up either way."""
        generated = self.processor_name(prefix)
        return generated if name is None else name

    def suffixed_or_generate(self, name: str | None, suffix: str, prefix: str) -> str:
        """`name + suffix` if a name is given, else a generated one; the index is used up either way."""
        generated = self.processor_name(prefix)
        return generated if name is None else name + suffix
