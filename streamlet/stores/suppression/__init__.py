"""The suppression buffer: `KTable.suppress`'s store, in memory and restored from its changelog."""
