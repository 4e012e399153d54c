"""Interactive queries the Kafka Streams way: read-only views of local stores, and where every key lives.

`KafkaStreams.store(StoreQueryParameters.from_name_and_type(name, QueryableStoreTypes.key_value_store()))`
returns a view of this instance's copies of a store; `KafkaStreams.query_metadata_for_key` and
`metadata_for_all_streams_clients` say which instance (its `application.server`) holds which keys, so
that a service can forward a query to the owner. `streamlet.http` serves both over HTTP.
"""

from streamlet.queries.iqv2 import (
    KeyQuery,
    MultiVersionedKeyQuery,
    PositionBound,
    RangeQuery,
    ReadOnlyRecord,
    ResultOrder,
    StateQueryRequest,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from streamlet.queries.key_value_view import ReadOnlyKeyValueView
from streamlet.queries.parameters import QueryableStoreType, QueryableStoreTypes, StoreQueryParameters
from streamlet.queries.query_result import FailureReason, QueryResult, StateQueryResult
from streamlet.queries.session_view import ReadOnlySessionView
from streamlet.queries.versioned_view import ReadOnlyVersionedView
from streamlet.queries.window_view import ReadOnlyWindowView
from streamlet.stores.position import Position

__all__ = [
    "FailureReason",
    "KeyQuery",
    "MultiVersionedKeyQuery",
    "Position",
    "PositionBound",
    "QueryResult",
    "QueryableStoreType",
    "QueryableStoreTypes",
    "RangeQuery",
    "ReadOnlyKeyValueView",
    "ReadOnlyRecord",
    "ReadOnlySessionView",
    "ReadOnlyVersionedView",
    "ReadOnlyWindowView",
    "ResultOrder",
    "StateQueryRequest",
    "StateQueryResult",
    "StoreQueryParameters",
    "TimestampedKeyQuery",
    "TimestampedKeyWithHeadersQuery",
    "TimestampedRangeQuery",
    "TimestampedRangeWithHeadersQuery",
    "TimestampedWindowKeyWithHeadersQuery",
    "TimestampedWindowRangeWithHeadersQuery",
    "VersionedKeyQuery",
    "WindowKeyQuery",
    "WindowRangeQuery",
]
