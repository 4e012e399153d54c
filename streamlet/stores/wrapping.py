"""`_StoreLayer`: what every wrapping layer of a bytes store (change-logging, caching, session
retention) passes to the store it wraps unchanged: open, flush, close, `persistent` and `is_open`.

Kafka Streams gives its layers a common `WrappedStateStore` base for the same reason; here it is a
mixin placed before the store's abstract base, so a layer writes only what it changes (a cache's
`flush` and `close`, say) and inherits the plain pass-through for the rest.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar


class _Wrapped(Protocol):
    """The part of a bytes store (key-value or window) that a layer passes through."""

    def open(self, context: Any) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    @property
    def persistent(self) -> bool: ...

    @property
    def is_open(self) -> bool: ...


_Inner = TypeVar("_Inner", bound=_Wrapped)


class _StoreLayer(Generic[_Inner]):
    """Mixin: the store's lifecycle is `inner`'s. Subclasses set `inner` in their `__init__`."""

    inner: _Inner

    def open(self, context: Any) -> None:
        self.inner.open(context)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    @property
    def is_open(self) -> bool:
        return self.inner.is_open
