"""What an IQv2 query answers: one `QueryResult` per partition, gathered in a `StateQueryResult`."""

from __future__ import annotations

import enum
from typing import Any

from streamlet.stores.position import Position


class FailureReason(enum.Enum):
    """Why a partition did not answer (Kafka Streams' `FailureReason`)."""

    CACHE_FAILURE = "CACHE_FAILURE"
    """Not raised by streamlet: its caches answer every query type they pass down."""
    UNKNOWN_QUERY_TYPE = "UNKNOWN_QUERY_TYPE"
    """The store cannot answer this kind of query (a `KeyQuery` to a window store, say)."""
    NOT_ACTIVE = "NOT_ACTIVE"
    """`require_active()` was asked and the copy is a standby, still restoring, or the client is not RUNNING."""
    NOT_UP_TO_BOUND = "NOT_UP_TO_BOUND"
    """The store has not yet seen the offsets of the request's position bound."""
    NOT_PRESENT = "NOT_PRESENT"
    """A partition asked for has no copy on this instance."""
    DOES_NOT_EXIST = "DOES_NOT_EXIST"
    """The store does not exist (for IQv2's own errors; an unknown store name raises instead)."""
    STORE_EXCEPTION = "STORE_EXCEPTION"
    """The store failed while answering (the message says how)."""


class QueryResult:
    """One partition's answer (Kafka Streams' `QueryResult`): a result or a failure, and the store's
    position when it answered."""

    __slots__ = ("_execution_info", "_failure", "_message", "_position", "_result")

    def __init__(self, result: Any = None, failure: FailureReason | None = None, message: str | None = None,
                 position: Position | None = None) -> None:
        self._result = result
        self._failure = failure
        self._message = message
        self._position = position
        self._execution_info: list[str] = []

    @staticmethod
    def for_result(result: Any) -> QueryResult:
        """A successful answer."""
        return QueryResult(result)

    @staticmethod
    def for_failure(reason: FailureReason, message: str) -> QueryResult:
        """A failure, with its reason and a message."""
        return QueryResult(None, reason, message)

    @staticmethod
    def for_unknown_query_type(query: Any, store: Any) -> QueryResult:
        """The failure of a store that cannot answer this kind of query."""
        return QueryResult.for_failure(
            FailureReason.UNKNOWN_QUERY_TYPE,
            f"This store ({type(store).__name__}) doesn't know how to execute the given query ({query}).")

    @staticmethod
    def not_up_to_bound(position: Position, bound: Any, partition: int) -> QueryResult:
        """The failure of a store behind the request's position bound."""
        return QueryResult.for_failure(
            FailureReason.NOT_UP_TO_BOUND,
            f"For store partition {partition}, the current position {position} is not yet up to the bound {bound}")

    def is_success(self) -> bool:
        """Whether the partition answered."""
        return self._failure is None

    def is_failure(self) -> bool:
        """Whether the partition failed to answer."""
        return self._failure is not None

    def get_result(self) -> Any:
        """The answer; raises `ValueError` for a failure (as Java's `IllegalArgumentException`)."""
        if self._failure is not None:
            raise ValueError(f"Cannot get result for failed query. Failure is {self._failure.name}: {self._message}")
        return self._result

    def get_failure_reason(self) -> FailureReason:
        """Why the partition failed (`FailureReason`); raises `ValueError` for a success."""
        if self._failure is None:
            raise ValueError(f"Cannot get failure reason of a successful query. Result is {self._result!r}")
        return self._failure

    def get_failure_message(self) -> str:
        """The failure's message; raises `ValueError` for a success."""
        if self._failure is None:
            raise ValueError(f"Cannot get failure message of a successful query. Result is {self._result!r}")
        return self._message or ""

    def get_position(self) -> Position | None:
        """The store's position when it answered (None when no store answered)."""
        return self._position

    def set_position(self, position: Position | None) -> None:
        """Record the store's position with the answer (done by the store)."""
        self._position = position

    def get_execution_info(self) -> list[str]:
        """How the stores answered, when the request enabled execution info."""
        return list(self._execution_info)

    def add_execution_info(self, message: str) -> None:
        """Add a line to the execution info."""
        self._execution_info.append(message)

    def __repr__(self) -> str:
        if self._failure is None:
            return f"QueryResult{{result={self._result!r}, position={self._position}}}"
        return f"QueryResult{{failure={self._failure.name}, message={self._message!r}, position={self._position}}}"


class StateQueryResult:
    """The answers of a `StateQueryRequest` (Kafka Streams' `StateQueryResult`): `partition_results`
    maps each partition that answered (or was asked for and is missing) to its `QueryResult`;
    `global_result` is set instead for a global store."""

    def __init__(self) -> None:
        self.partition_results: dict[int, QueryResult] = {}
        self.global_result: QueryResult | None = None

    def add_result(self, partition: int, result: QueryResult) -> None:
        """Record one partition's answer."""
        self.partition_results[partition] = result

    def set_global_result(self, result: QueryResult) -> None:
        """Record a global store's answer."""
        self.global_result = result

    def get_partition_results(self) -> dict[int, QueryResult]:
        """`{partition: QueryResult}` of every partition that answered or was asked for."""
        return self.partition_results

    def get_global_result(self) -> QueryResult | None:
        """A global store's answer, or None."""
        return self.global_result

    def only_partition_result(self) -> QueryResult:
        """The one successful partition result with a non-None answer (a key lives in one partition);
        raises `ValueError` when there is not exactly one."""
        answering = [r for r in self.partition_results.values() if r.is_success() and r.get_result() is not None]
        if len(answering) != 1:
            raise ValueError(f"The query did not return exactly one partition result: {self.partition_results}")
        return answering[0]

    get_only_partition_result = only_partition_result

    def get_position(self) -> Position:
        """The merged positions of every partition result (the global result's for a global store)."""
        if self.global_result is not None:
            return (self.global_result.get_position() or Position()).copy()
        merged = Position()
        for result in self.partition_results.values():
            merged.merge(result.get_position())
        return merged

    def __repr__(self) -> str:
        return f"StateQueryResult{{partition_results={self.partition_results}, global_result={self.global_result}}}"
