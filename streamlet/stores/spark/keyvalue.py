"""`SparkKeyValueBytesStore`: a key-value bytes store over Spark's state, kept in pages.

Why pages: every state call crosses to the JVM (50-200 µs here), and Spark's MapState has no bulk read
or write. With one map entry per key, a batch paid a round trip for every key it changed: WordCount's
counting tasks made about 3,750 such writes per task and micro-batch, and the writes alone took
10% of a run. So the entries live in pages. A page is one map entry, holding every entry whose key
hashes to it. A batch reads a page when it first needs one of its keys and writes each changed page
once, when the task flushes at the end of the batch.

Pages split one at a time as the store grows (linear hashing: Litwin, 1980), so a page holds about
`PAGE_ENTRIES` entries and no batch rewrites the whole store. With `level` L and `split` s there are
2^L + s pages; a key goes to page `h mod 2^L`, or `h mod 2^(L+1)` when that is below s, for h its
CRC-32. A store never shrinks, like Kafka Streams' own.

In the store's slice of Spark's state, page i is under the 4-byte big-endian key i, and the meta entry
holds (`_FORMAT`, entries, level, split). A store that the layout before pages wrote (one map entry per
key, a meta entry of 8 or 16 bytes) is moved into pages the first time a batch opens it.

A range scan needs keys in byte order, which neither pages nor Spark's MapState give: it reads every
page (one streamed scan of the map) and sorts. The other backends' rule holds: a scan is a snapshot.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Mapping
from itertools import accumulate
from zlib import crc32

from streamlet.errors import StreamsError
from streamlet.stores.api import BytesIterator, BytesWriteBatch, QueuedWriteBatch, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.spark.state import SparkStoreState

PAGE_ENTRIES = 256
"""Entries per page on average before the next page splits."""

_FORMAT = 2
_META = struct.Struct(">Bqqq")
"""(format, entries, level, split)."""
_PAGE_KEY = struct.Struct(">I")
_PAGE_HEAD = struct.Struct("<I")
"""A page: its entry count n, then n key lengths and n value lengths (little-endian u32), then the
keys, then the values."""
_LENGTHS = "I"
assert array(_LENGTHS).itemsize == 4
_MISSING = object()

Page = dict[bytes, bytes]


class SparkStateLayoutError(StreamsError):
    """A store's entries in Spark's state cannot be read (a page's lengths do not add up, an unknown
    meta format): the checkpoint does not hold what this version of streamlet wrote."""


def encode_page(page: Page) -> bytes:
    keys = list(page)
    lengths = array(_LENGTHS, map(len, keys))
    lengths.extend(map(len, page.values()))
    if sys.byteorder == "big":
        lengths.byteswap()
    return b"".join((_PAGE_HEAD.pack(len(keys)), lengths.tobytes(), *keys, *page.values()))


def decode_page(data: bytes) -> Page:
    count = _PAGE_HEAD.unpack_from(data)[0] if len(data) >= _PAGE_HEAD.size else -1
    start = _PAGE_HEAD.size + 8 * count
    if count < 0 or start > len(data):
        raise SparkStateLayoutError(f"a store page of {len(data)} bytes is truncated")
    lengths = array(_LENGTHS)
    lengths.frombytes(data[_PAGE_HEAD.size:start])
    if sys.byteorder == "big":
        lengths.byteswap()
    ends = list(accumulate(lengths, initial=start))
    if ends[-1] != len(data):
        raise SparkStateLayoutError(f"a store page's lengths add up to {ends[-1]} bytes, not {len(data)}")
    return {data[ends[i]:ends[i + 1]]: data[ends[count + i]:ends[count + i + 1]] for i in range(count)}


def _page_key(page: int) -> bytes:
    return _PAGE_KEY.pack(page)


class SparkKeyValueBytesStore(KeyValueBytesStore):
    """A task's key-value store in Spark's state (see the module): pages read at first need and
    written back once per flush, with only the pages that changed."""

    def __init__(self, name: str, state: SparkStoreState) -> None:
        self.name = name
        self._state = state
        self._pages: dict[int, Page] = {}  # pages read in this batch, as Spark holds them after the last flush
        self._all_read = False
        self._dirty: dict[bytes, bytes | None] = {}  # written since the last flush (None: deleted)
        self._layout: tuple[int, int, int] | None = None  # (entries, level, split), once read
        self._stored_layout: tuple[int, int, int] | None = None  # what the meta entry holds
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        self._open = True

    # -- layout ----------------------------------------------------------------------------------------
    def _read_layout(self) -> tuple[int, int, int]:
        if self._layout is None:
            meta = self._state.meta()
            if meta is None:
                self._layout = (0, 0, 0)
            elif len(meta) == _META.size and meta[0] == _FORMAT:
                _format, entries, level, split = _META.unpack(meta)
                self._layout = self._stored_layout = (entries, level, split)
            elif len(meta) in (8, 16):
                self._layout = self._into_pages()
            else:
                raise SparkStateLayoutError(f"store {self.name!r}: unknown meta entry of {len(meta)} bytes")
        return self._layout

    def _into_pages(self) -> tuple[int, int, int]:
        """Move a store of the layout before pages (one map entry per key) into pages, in Spark's state
        at once: the batch commits it with everything else, or replays it."""
        old = dict(self._state.scan())
        self._layout, self._pages, self._all_read = (0, 0, 0), {0: {}}, True
        changed = self._apply(old)
        self._state.write({**dict.fromkeys(old), **self._encoded(changed)})
        self._write_meta()
        return self._layout

    @staticmethod
    def _address(key: bytes, level: int, split: int) -> int:
        hashed = crc32(key)
        page = hashed & ((1 << level) - 1)
        return hashed & ((2 << level) - 1) if page < split else page

    def _page(self, page: int) -> Page:
        found = self._pages.get(page)
        if found is None:
            if self._all_read:
                found = {}
            else:
                data = self._state.get(_page_key(page))
                found = {} if data is None else decode_page(data)
            self._pages[page] = found
        return found

    def _read_all(self) -> None:
        if not self._all_read:
            for key, data in self._state.scan():
                page = _PAGE_KEY.unpack(key)[0]
                if page not in self._pages:
                    self._pages[page] = decode_page(data)
            self._all_read = True

    # -- reads -----------------------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        value = self._dirty.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        _entries, level, split = self._read_layout()
        return self._page(self._address(key, level, split)).get(key)

    def _current(self) -> Page:
        self._read_layout()
        self._read_all()
        merged: Page = {}
        for page in self._pages.values():
            merged.update(page)
        for key, maybe in self._dirty.items():
            if maybe is None:
                merged.pop(key, None)
            else:
                merged[key] = maybe
        return merged

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        # A snapshot, as the other backends give: writes during the iteration are not seen.
        current = self._current()
        keys = sorted(k for k in current
                      if (from_key is None or k >= from_key) and (to_key is None or k <= to_key))
        return BytesIterator(iter([(k, current[k]) for k in keys]))

    def approximate_num_entries(self) -> int:
        return len(self._current())

    # -- writes ----------------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None) -> None:
        self._dirty[key] = value

    def delete(self, key: bytes) -> None:
        self._dirty[key] = None

    def batch(self) -> BytesWriteBatch:
        return QueuedWriteBatch(self.put)

    def _apply(self, changes: Mapping[bytes, bytes | None]) -> set[int]:
        """Apply the changes to their pages (each read first: a page is written whole), then split pages
        while the store holds more than `PAGE_ENTRIES` per page; the pages that changed."""
        entries, level, split = self._read_layout()
        changed: set[int] = set()
        for key, value in changes.items():
            number = self._address(key, level, split)
            page = self._page(number)
            if value is None:
                if page.pop(key, _MISSING) is not _MISSING:
                    entries -= 1
                    changed.add(number)
            else:
                if key not in page:
                    entries += 1
                page[key] = value
                changed.add(number)
        while entries > PAGE_ENTRIES * ((1 << level) + split):
            old = self._page(split)
            new = self._pages[split + (1 << level)] = {}  # a page past the last one was never written
            for key in [k for k in old if self._address(k, level + 1, 0) != split]:
                new[key] = old.pop(key)
            changed.update((split, split + (1 << level)))
            split += 1
            if split == 1 << level:
                level, split = level + 1, 0
        self._layout = (entries, level, split)
        return changed

    def _encoded(self, changed: set[int]) -> dict[bytes, bytes | None]:
        return {_page_key(n): encode_page(self._pages[n]) if self._pages[n] else None for n in sorted(changed)}

    def _write_meta(self) -> None:
        layout = self._read_layout()
        if layout != self._stored_layout:
            self._state.set_meta(_META.pack(_FORMAT, *layout))
            self._stored_layout = layout

    def flush(self) -> None:
        if not self._dirty:
            return
        changed = self._apply(self._dirty)
        self._dirty = {}
        if changed:
            self._state.write(self._encoded(changed))
        self._write_meta()

    def close(self) -> None:
        self._pages, self._all_read, self._dirty, self._open = {}, False, {}, False
        self._layout = self._stored_layout = None

    @property
    def persistent(self) -> bool:
        return True  # Spark's checkpoint keeps it

    @property
    def is_open(self) -> bool:
        return self._open
