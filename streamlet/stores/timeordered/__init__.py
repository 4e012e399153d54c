"""The time-ordered key-value buffer of a stream-table join with a grace period (KIP-923)."""
