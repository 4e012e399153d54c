"""`EmitStrategy`: when a windowed aggregation sends its results downstream (Kafka Streams' KIP-825).

`on_window_update()` (the default) sends every update as it is made (through the store's cache when
it caches). `on_window_close()` sends nothing while a window is open and each window's final result
once stream time has passed its end plus the grace period: after each record, the aggregation looks
up the windows that closed since it last looked (at most once per emit interval of wall-clock time,
`__emit.interval.ms.kstreams.windowed.aggregation__`, 1 s by default and 0 in the test driver) and
sends them in the order of their start time, then key, each with its stored timestamp (a session
with its end). Kafka Streams then keeps the window store uncached for sliding and session windows.
"""

from __future__ import annotations

from enum import Enum
from typing import Self


class StrategyType(Enum):
    """The two strategies Kafka Streams 3.9 knows."""

    ON_WINDOW_UPDATE = 0
    ON_WINDOW_CLOSE = 1


class EmitStrategy:
    """Build with `EmitStrategy.on_window_update()` or `EmitStrategy.on_window_close()` and pass it to a
    windowed stream's `emit_strategy(...)`."""

    def __init__(self, strategy_type: StrategyType) -> None:
        self._type = strategy_type

    @staticmethod
    def on_window_update() -> EmitStrategy:
        """Send each window's updates as they are made (Kafka Streams' default)."""
        return EmitStrategy(StrategyType.ON_WINDOW_UPDATE)

    @staticmethod
    def on_window_close() -> EmitStrategy:
        """Send each window's final result once, after the window closed (end + grace passed by stream time)."""
        return EmitStrategy(StrategyType.ON_WINDOW_CLOSE)

    def type(self) -> StrategyType:
        """Which strategy this is (a method, as Java's `EmitStrategy.type()`)."""
        return self._type

    @property
    def on_close(self) -> bool:
        """True for `on_window_close()`."""
        return self._type is StrategyType.ON_WINDOW_CLOSE

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmitStrategy) and other._type is self._type

    def __hash__(self) -> int:
        return hash(self._type)

    def __repr__(self) -> str:
        return f"EmitStrategy.{self._type.name.lower()}()"


class ChoosesEmitStrategy:
    """What a windowed stream has for `emit_strategy(...)` (updates by default)."""

    _emit_strategy: EmitStrategy = EmitStrategy.on_window_update()

    def emit_strategy(self, emit_strategy: EmitStrategy) -> Self:
        """When the aggregations made after this call send results: each update (the default) or each
        window's final result once it closed (`EmitStrategy.on_window_close()`). Returns this stream."""
        if not isinstance(emit_strategy, EmitStrategy):
            raise TypeError(f"emit_strategy() takes an EmitStrategy, got {emit_strategy!r}")
        self._emit_strategy = emit_strategy
        return self
