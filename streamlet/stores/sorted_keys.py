"""`SortedKeyIndex`: the byte-ordered key list behind the in-memory store and the cache.

A dict gives O(1) puts but no order; re-sorting all keys on every range scan would cost
O(n log n) per scan, and `bisect.insort` on every new key costs an O(n) memmove on the hot path.
So new keys wait in a pending list and removed keys in a set, and both are folded into the sorted
list only when a scan needs it: puts stay O(1), and a scan pays O(n + k log k) once after k new
keys (Timsort merges the sorted run and the sorted tail), then O(log n + m) while nothing changes.

A scan after only a few changes folds them in one by one instead (a bisection and a pointer memmove
each): a session aggregation scans its key's sessions on every record after adding one session key
and deleting one, and re-sorting the whole list there cost n byte comparisons per record, the
largest single cost of a session count (benchmarks.hot_path --workload session_count).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

_FOLD_ONE_BY_ONE_MAX = 8
"""Up to this many pending additions plus removals are folded in one by one: each costs about log n
comparisons and a memmove of n pointers, where a re-sort costs n comparisons, each far dearer."""


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

    def any_between(self, from_key: bytes, to_key: bytes) -> bool:
        """Whether a member key lies in [from_key, to_key], without building the list."""
        self._settle()
        keys, removed = self._sorted, self._removed
        n = len(keys)
        i = bisect_left(keys, from_key)
        while i < n and keys[i] <= to_key:
            if keys[i] not in removed:
                return True
            i += 1
        return False

    def _settle(self) -> None:
        pending, removed = self._pending, self._removed
        if (pending or removed) and len(pending) + len(removed) <= _FOLD_ONE_BY_ONE_MAX:
            self._fold_one_by_one()
            return
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

    def _fold_one_by_one(self) -> None:
        """Apply the few pending changes to the sorted list in place (`between` hands out copies)."""
        keys, pending = self._sorted, self._pending
        for key in self._removed:  # a member: in the sorted list, or else still pending
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                del keys[i]
            else:
                pending.remove(key)
        for key in pending:
            insort(keys, key)
        self._pending = []
        self._removed = set()
