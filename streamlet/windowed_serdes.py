"""`WindowedSerdes`: serdes for `Windowed` keys, byte-identical to Kafka Streams' windowed serdes.

Why: a windowed aggregation's results are written to topics with their window, and Java consumers
(or Kafka Streams apps) must read them. Java's `TimeWindowedSerializer` writes the inner key's bytes
followed by the window start as an 8-byte big-endian long; the end is not written, so the
deserializer needs the window size to rebuild it (Java's default is Long.MAX_VALUE, which makes the
end the largest time).
"""

from __future__ import annotations

import struct
from typing import Any

from streamlet.durations import to_millis
from streamlet.errors import SerializationError
from streamlet.serdes import Deserializer, Serde, Serializer, resolve_serde
from streamlet.windowed import MAX_TIME, SessionWindow, TimeWindow, Windowed

_START = struct.Struct(">q")
_END_START = struct.Struct(">qq")


class TimeWindowedSerializer(Serializer[Windowed]):
    def __init__(self, inner: Serializer[Any]) -> None:
        super().__init__()
        self.inner = inner

    def serialize(self, topic: str | None, data: Windowed | None) -> bytes | None:
        if data is None:
            return None
        key = self.inner.serialize(topic, data.key)
        if key is None:
            raise SerializationError(f"the key of {data} serialized to None; a windowed key needs bytes")
        return key + _START.pack(data.window.start)


class TimeWindowedDeserializer(Deserializer[Windowed]):
    def __init__(self, inner: Deserializer[Any], window_size: int = MAX_TIME) -> None:
        super().__init__()
        self.inner = inner
        self.window_size = window_size

    def deserialize(self, topic: str | None, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        if len(data) < _START.size:
            raise SerializationError(f"a time-windowed key needs at least 8 bytes, got {len(data)}")
        start = _START.unpack_from(data, len(data) - _START.size)[0]
        key = self.inner.deserialize(topic, data[:-_START.size])
        return Windowed(key, TimeWindow.for_size(start, self.window_size))


class TimeWindowedSerde(Serde[Windowed]):
    name = "TimeWindowed"

    def __init__(self, inner: Serde[Any], window_size: int = MAX_TIME) -> None:
        super().__init__(TimeWindowedSerializer(inner.serializer), TimeWindowedDeserializer(inner.deserializer,
                                                                                           window_size))
        self.inner = inner
        self.window_size = window_size

    def __repr__(self) -> str:
        return f"WindowedSerdes.time_windowed_serde_from({self.inner!r}, {self.window_size})"


class SessionWindowedSerializer(Serializer[Windowed]):
    """The inner key's bytes, then the session's end and start (8-byte big-endian each), as Java's."""

    def __init__(self, inner: Serializer[Any]) -> None:
        super().__init__()
        self.inner = inner

    def serialize(self, topic: str | None, data: Windowed | None) -> bytes | None:
        if data is None:
            return None
        key = self.inner.serialize(topic, data.key)
        if key is None:
            raise SerializationError(f"the key of {data} serialized to None; a windowed key needs bytes")
        return key + _END_START.pack(data.window.end, data.window.start)


class SessionWindowedDeserializer(Deserializer[Windowed]):
    def __init__(self, inner: Deserializer[Any]) -> None:
        super().__init__()
        self.inner = inner

    def deserialize(self, topic: str | None, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        if len(data) < _END_START.size:
            raise SerializationError(f"a session-windowed key needs at least 16 bytes, got {len(data)}")
        end, start = _END_START.unpack_from(data, len(data) - _END_START.size)
        return Windowed(self.inner.deserialize(topic, data[:-_END_START.size]), SessionWindow(start, end))


class SessionWindowedSerde(Serde[Windowed]):
    name = "SessionWindowed"

    def __init__(self, inner: Serde[Any]) -> None:
        super().__init__(SessionWindowedSerializer(inner.serializer), SessionWindowedDeserializer(inner.deserializer))
        self.inner = inner

    def __repr__(self) -> str:
        return f"WindowedSerdes.session_windowed_serde_from({self.inner!r})"


class WindowedSerdes:
    """Factories named as Java's `WindowedSerdes.timeWindowedSerdeFrom(...)` / `sessionWindowedSerdeFrom`."""

    @staticmethod
    def session_windowed_serde_from(inner: Any) -> SessionWindowedSerde:
        """Serde of session-`Windowed` keys over `inner` (a serde, serde class or name)."""
        serde = resolve_serde(inner)
        if serde is None:
            raise SerializationError("session_windowed_serde_from() needs the inner key serde")
        return SessionWindowedSerde(serde)

    @staticmethod
    def time_windowed_serde_from(inner: Any, window_size: Any = None) -> TimeWindowedSerde:
        """Serde of `Windowed` keys over `inner` (a serde, serde class or name); `window_size` in ms or
        `timedelta` rebuilds window ends on reading (without it they are the largest time, as Java's)."""
        serde = resolve_serde(inner)
        if serde is None:
            raise SerializationError("time_windowed_serde_from() needs the inner key serde")
        size = MAX_TIME if window_size is None else to_millis(window_size)
        if size <= 0:
            raise SerializationError(f"the window size must be positive, got {window_size!r}")
        return TimeWindowedSerde(serde, size)
