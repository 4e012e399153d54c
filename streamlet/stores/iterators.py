"""`StoreKeyValueIterator`: the typed stores' `KeyValueIterator`, with `peek_next_key` working.

Peeking needs one element of look-ahead, which the contract's base class leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from streamlet.record import KeyValue
from streamlet.stores.api import KeyValueIterator

_NOTHING: Any = object()


class StoreKeyValueIterator(KeyValueIterator[Any, Any]):
    def __init__(self, source: Iterator[KeyValue], on_close: Callable[[], None] | None = None) -> None:
        super().__init__(source, on_close)
        self._peeked: Any = _NOTHING

    def __next__(self) -> KeyValue:
        if self._closed:
            raise StopIteration
        peeked = self._peeked
        if peeked is not _NOTHING:
            self._peeked = _NOTHING
            return peeked
        return next(self._source)

    def peek_next_key(self) -> Any:
        """The key `next()` will return, without consuming it; StopIteration at the end."""
        if self._closed:
            raise StopIteration
        if self._peeked is _NOTHING:
            self._peeked = next(self._source)
        return self._peeked.key
