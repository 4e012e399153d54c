"""`AutoOffsetReset`: where a source topic's partition starts when the application has no committed offset
for it (Kafka Streams' `AutoOffsetReset`, KIP-1106).

Kafka Streams decides this per source topic (`Consumed.with(AutoOffsetReset...)`), falling back to the
application's `auto.offset.reset`, and never lets the consumer decide on its own: a task must start
exactly where the policy says, also after the fetcher moved on. `by_duration(d)` starts at the first record
timestamped at or after now - d (Kafka's `by_duration:` reset, KIP-842), or at the end when there is none;
`none` refuses to start a partition without a committed offset (the member fails with
`NoOffsetResetPolicyError`, as Kafka Streams' thread dies on its StreamsException).
"""

from __future__ import annotations

import re
from datetime import timedelta

from streamlet.errors import ConfigError

_KINDS = ("earliest", "latest", "none", "by_duration")
_ISO_DURATION = re.compile(
    r"^(?P<sign>[-+]?)P(?:(?P<days>[-+]?\d+)D)?"
    r"(?:T(?:(?P<hours>[-+]?\d+)H)?(?:(?P<minutes>[-+]?\d+)M)?(?:(?P<seconds>[-+]?\d+(?:[.,]\d{1,9})?)S)?)?$",
    re.IGNORECASE)


class NoOffsetResetPolicyError(ConfigError):
    """A source partition has no committed offset and its reset policy is `none`."""


def parse_iso_duration(text: str) -> timedelta:
    """Java's `Duration.parse` format (`PT1H`, `P2DT3H4M`, `PT0.5S`), the form Kafka's `by_duration:` takes."""
    match = _ISO_DURATION.match(text.strip())
    if match is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise ConfigError(f"not an ISO-8601 duration (like PT1H or P1DT12H): {text!r}")
    parts = {k: float(v.replace(",", ".")) if v else 0.0 for k, v in match.groupdict().items() if k != "sign"}
    duration = timedelta(days=parts["days"], hours=parts["hours"], minutes=parts["minutes"],
                         seconds=parts["seconds"])
    return -duration if match.group("sign") == "-" else duration


class AutoOffsetReset:
    """A reset policy: `AutoOffsetReset.earliest()`, `.latest()`, `.none()` or `.by_duration(timedelta)`.

    Give one to `Consumed(offset_reset=...)` for a source topic; `auto.offset.reset` sets the
    application's default in the same words (`earliest`, `latest`, `none`, `by_duration:PT1H`)."""

    __slots__ = ("duration", "kind")

    def __init__(self, kind: str, duration: timedelta | None = None) -> None:
        if kind not in _KINDS:
            raise ConfigError(f"an offset reset policy is one of {', '.join(_KINDS)}, got {kind!r}")
        if (kind == "by_duration") != (duration is not None):
            raise ConfigError("by_duration takes a duration, and only by_duration does")
        if duration is not None and duration < timedelta(0):
            raise ConfigError(f"the reset duration must not be negative, got {duration}")
        self.kind = kind
        self.duration = duration

    @property
    def duration_ms(self) -> int:
        """The duration of a `by_duration` policy in milliseconds (0 for the others)."""
        return 0 if self.duration is None else int(self.duration.total_seconds() * 1000)

    @staticmethod
    def earliest() -> AutoOffsetReset:
        """Start at the partition's first record."""
        return AutoOffsetReset("earliest")

    @staticmethod
    def latest() -> AutoOffsetReset:
        """Start at the partition's end: only records written from now on."""
        return AutoOffsetReset("latest")

    @staticmethod
    def none() -> AutoOffsetReset:
        """Do not start a partition without a committed offset: the instance fails instead."""
        return AutoOffsetReset("none")

    @staticmethod
    def by_duration(duration: timedelta) -> AutoOffsetReset:
        """Start at the first record timestamped at or after now - `duration` (the end if none is)."""
        return AutoOffsetReset("by_duration", duration)

    @staticmethod
    def parse(value: AutoOffsetReset | str) -> AutoOffsetReset:
        """A policy from itself or from its configuration words (`by_duration:PT1H` included)."""
        if isinstance(value, AutoOffsetReset):
            return value
        text = str(value).strip().lower()
        if text.startswith("by_duration:"):
            return AutoOffsetReset.by_duration(parse_iso_duration(str(value).strip()[len("by_duration:"):]))
        if text in ("earliest", "latest", "none"):
            return AutoOffsetReset(text)
        raise ConfigError(f"auto.offset.reset must be earliest, latest, none or by_duration:<ISO-8601 duration>, "
                          f"got {value!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AutoOffsetReset) and (self.kind, self.duration) == (other.kind, other.duration)

    def __hash__(self) -> int:
        return hash((self.kind, self.duration))

    def __repr__(self) -> str:
        return f"AutoOffsetReset.{self.kind}({'' if self.duration is None else repr(self.duration)})"
