"""How many arguments a user function takes, for DSL operations whose Kafka Streams overloads differ only in
the functional interface (`Function` or `BiFunction`, `ValueJoiner` or `ValueJoinerWithKey`): Python has one
callable type, so the count of its required positional parameters picks the overload."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def required_positionals(fn: Callable[..., Any]) -> int | None:
    """The number of positional parameters `fn` requires, or None when its signature cannot be read (some
    builtins): callers then take the overload Kafka Streams had first."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in parameters if p.kind in _POSITIONAL and p.default is inspect.Parameter.empty)
