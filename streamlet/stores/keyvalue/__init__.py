"""Key-value stores: the contract, builders, and the layers over a backend's key-value bytes store.

Layers, inner to outer: the bytes store (`streamlet.stores.leveldb`, `.memory` or `.spark`) ->
change-logging (`changelogging.py`) -> the record cache (`caching.py`) -> the typed facade
(`typed.py`, or `timestamped.py` for the DSL's `ValueAndTimestamp` values). `access.py` is how the
facade reaches the layer below it, with or without a cache.
"""
