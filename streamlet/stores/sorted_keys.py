"""`SortedKeyIndex`: the byte-ordered key list behind the in-memory store and the cache.

A dict gives O(1) puts but no order; re-sorting all keys on every range scan would cost
O(n log n) per scan, and `bisect.insort` on every new key costs an O(n) memmove on the hot path.
So new keys wait in a pending list and removed keys in a set, and both are folded into the sorted
list only when a scan needs it: puts stay O(1), and a scan pays O(n + k log k) once after k new
keys (Timsort merges the sorted run and the sorted tail), then O(log n + m) while nothing changes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class SortedKeyIndex:
    """Keys of a dict, in unsigned byte order; the owner reports additions and removals.

    Invariants: `_sorted` is sorted; `_sorted` and `_pending` are disjoint; the members are
    (`_sorted` + `_pending`) minus `_removed`, and `_removed` only holds keys of those two lists.
    """

    __slots__ = ("_pending", "_removed", "_sorted")

    def __init__(self) -> None:
        self._sorted: list[bytes] = []
        self._pending: list[bytes] = []
        self._removed: set[bytes] = set()

    def add(self, key: bytes) -> None:
        """Record a key that just became a member (the caller knows it was not one)."""
        if key in self._removed:
            self._removed.discard(key)
        else:
            self._pending.append(key)

    def discard(self, key: bytes) -> None:
        """Record that a member key is gone (the caller knows it was one)."""
        self._removed.add(key)

    def clear(self) -> None:
        self._sorted = []
        self._pending = []
        self._removed = set()

    def between(self, from_key: bytes | None, to_key: bytes | None) -> list[bytes]:
        """A snapshot of the member keys in [from_key, to_key] (None = unbounded), in byte order."""
        self._settle()
        keys = self._sorted
        lo = 0 if from_key is None else bisect_left(keys, from_key)
        hi = len(keys) if to_key is None else bisect_right(keys, to_key)
        removed = self._removed
        if removed:
            return [k for k in keys[lo:hi] if k not in removed]
        return keys[lo:hi]

    def _settle(self) -> None:
        pending, removed = self._pending, self._removed
        # Purge removed keys when we rebuild anyway, or when they would dominate scans.
        purge = bool(removed) and (bool(pending) or len(removed) > 64 + len(self._sorted) // 4)
        if not pending and not purge:
            return
        if purge:
            merged = [k for k in self._sorted if k not in removed]
            merged.extend(k for k in pending if k not in removed)
        else:
            merged = self._sorted  # sorting in place is safe: `between` hands out copies
            merged.extend(pending)
        if pending:
            merged.sort()
        self._sorted = merged
        self._pending = []
        if purge:
            self._removed = set()
