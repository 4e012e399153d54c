"""Start-up check: the internal topics the cluster already holds for this application are the topology's.

Why this exists: an application taken over from Kafka Streams (or from an earlier version of itself)
finds its state and in-flight records in internal topics named after its operators:
`<application.id>-<store>-changelog`, `<application.id>-<name>-repartition`, the foreign-key join's
`...-subscription-registration-topic` and `...-subscription-response-topic`. A topology that names an
operator differently (a generated `KSTREAM-AGGREGATE-STATE-STORE-0000000003` where the Java
application said `Materialized.as("counts")`, or generated names numbered differently because the DSL
calls differ) does not fail: it creates new, empty topics and carries on from the group's committed
offsets, so its stores start empty and the records waiting in the old repartition topics are never
read. Kafka Streams does not check this either. Refusing to start, naming the first topic that differs
and how to name the operator, turns silent data loss into a message.

The rule (setting `internal.topics.check`):

* `existing` (the default): every internal topic the cluster holds for the application id must be
  one of the topology's. A first start (the cluster holds none, or the group has no committed
  offsets) passes, and so does a topology upgrade that only adds operators; a topology that lacks
  one of the cluster's topics (a renamed or removed operator) is refused.
* `exact`: as `existing`, and, once the cluster holds any internal topic of the application, each of
  the topology's must be there too. For the first start after a move, when every store should find
  the other application's changelog (a Java store without logging, or a source table Kafka Streams'
  `topology.optimization` read from its input topic, has none: its state would not move).
* `none`: no check (a topology upgrade that drops an operator and keeps its old topics on purpose).

Which topics count as the application's: Kafka Streams' own test of internal names (the reset tool's):
the `<application.id>-` prefix and one of the suffixes above. Another application whose id begins with
this one's and a `-` (`orders` and `orders-audit`) has topics that pass that test; those of an
application with an existing consumer group of that longer id are left out. And the check refuses
only an application that has run before: when its group has no committed offsets, nothing continues
from the topics it finds (they are another application's or left over), so it starts with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from streamlet.config import INTERNAL_TOPICS_CHECKS
from streamlet.errors import StreamsError

log = logging.getLogger(__name__)

CHECK_SETTING = "internal.topics.check"
EXISTING, EXACT, NONE = INTERNAL_TOPICS_CHECKS
INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic")
"""How Kafka Streams' internal topic names end (changelog, repartition, foreign-key subscription and response)."""
_SHOWN = 3  # topics named in full per list of a message


class InternalTopicsMismatchError(StreamsError):
    """The cluster holds internal topics of this application id (changelogs, repartition topics) that the
    topology does not have, or, under `internal.topics.check=exact`, lacks some the topology has: most
    often the topology names an operator differently from the Kafka Streams application it takes over,
    so its state and in-flight records would be left behind. The message names the first difference;
    name the operators as the other application does (`Materialized.as`, `Grouped.as`, `Named.as`,
    `TableJoined.as`), or see `internal.topics.check`."""


def looks_internal(application_id: str, topic: str) -> bool:
    """True for a name Kafka Streams would have given an internal topic of `application_id`."""
    return topic.startswith(f"{application_id}-") and topic.endswith(INTERNAL_SUFFIXES)


def _kind(topic: str) -> str:
    return next(suffix for suffix in INTERNAL_SUFFIXES if topic.endswith(suffix))


def _some(topics: list[str]) -> str:
    shown = ", ".join(repr(t) for t in topics[:_SHOWN])
    return shown + (f" and {len(topics) - _SHOWN} more" if len(topics) > _SHOWN else "")


_HOW_TO_NAME = (
    "Name the operators as the application that created those topics does: Materialized.as(...) for a "
    "store (its changelog is <application.id>-<store>-changelog), Grouped.as / Repartitioned.as for a "
    "repartition topic, TableJoined.as for a foreign-key join's topics; generated names "
    "(KSTREAM-AGGREGATE-STATE-STORE-0000000003) count the DSL's nodes, so they match only when the "
    "topology is built with the same calls in the same order. Compare `streamlet describe` with the Java "
    "topology's describe()."
)


def mismatch(application_id: str, expected: Iterable[str], existing: Iterable[str], mode: str,
             other_applications: Iterable[str] = ()) -> str | None:
    """What is wrong with the cluster's internal topics `existing` (every topic name of the cluster will
    do) for a topology whose internal topics are `expected`, under check `mode`; None when nothing is.
    `other_applications`: ids (consumer groups) of other applications, whose topics are left out."""
    if mode == NONE:
        return None
    expected = set(expected)
    others = [f"{other}-" for other in other_applications
              if other != application_id and other.startswith(f"{application_id}-")]
    held = {t for t in existing if looks_internal(application_id, t) and not t.startswith(tuple(others))}
    if not held:
        return None  # a first start: nothing to take over
    unknown = sorted(held - expected)
    absent = sorted(t for t in expected - held if t.endswith(INTERNAL_SUFFIXES))
    if unknown:
        first = unknown[0]
        same_kind = [t for t in absent if _kind(t) == _kind(first)]
        instead = (f" This topology has instead {_some(same_kind)}, which the cluster does not hold: the same "
                   f"operator under another name?" if same_kind else "")
        more = f" ({len(unknown) - 1} more such topic(s): {_some(unknown[1:])}.)" if len(unknown) > 1 else ""
        return (f"the cluster holds the internal topic {first!r} of application {application_id!r}, which this "
                f"topology does not have: its records (a store's state, records in flight) would be left "
                f"behind.{instead}{more} {_HOW_TO_NAME} If the topic is left over from an operator this "
                f"application no longer has, delete it (e.g. with Kafka's kafka-streams-application-reset tool, "
                f"all instances stopped), or set {CHECK_SETTING}={NONE}.")
    if mode == EXACT and absent:
        first = absent[0]
        more = f" ({len(absent) - 1} more: {_some(absent[1:])}.)" if len(absent) > 1 else ""
        return (f"this topology has the internal topic {first!r}, which the cluster does not hold although it "
                f"holds {len(held)} other internal topic(s) of application {application_id!r}: the application "
                f"that ran before had no such topic, so what this one keeps there would start empty.{more} "
                f"{_HOW_TO_NAME} If the operator is new, start with {CHECK_SETTING}={EXISTING} (the default).")
    return None


async def check_internal_topics(admin: Any, application_id: str, expected: Iterable[str], mode: str) -> None:
    """Refuse to start (`InternalTopicsMismatchError`) when the cluster's internal topics of
    `application_id` do not fit the topology's `expected` ones under `mode` (see the module docstring).
    `admin`: a started aiokafka admin client."""
    if mode == NONE:
        return
    expected = set(expected)
    topics = set(await admin.list_topics())
    problem = mismatch(application_id, expected, topics, mode)
    if problem is not None:
        # Only now worth the requests: are some of those topics another application's (a longer id)?
        problem = mismatch(application_id, expected, topics, mode, await _group_ids(admin))
    if problem is not None and not await _has_committed(admin, application_id):
        log.warning("not checking the internal topics the cluster holds under the prefix %r: application %r "
                    "has no committed offsets, so nothing would be continued from them (%s)",
                    f"{application_id}-", application_id, problem)
        problem = None
    if problem is not None:
        raise InternalTopicsMismatchError(problem)
    added = sorted(t for t in expected - topics)
    held = [t for t in topics if looks_internal(application_id, t)]
    if held and added:
        log.info("internal topic(s) %s are new to application %r (the cluster holds %d others): created now, "
                 "what they keep starts empty", _some(added), application_id, len(held))


async def _group_ids(admin: Any) -> list[str]:
    """The cluster's consumer groups (those this client may describe); none when they cannot be listed."""
    try:
        return [group for group, *_ in await admin.list_consumer_groups()]
    except Exception as exc:  # e.g. no DESCRIBE on groups: then no topic is taken for another application's
        log.debug("could not list the consumer groups: %s", exc)
        return []


async def _has_committed(admin: Any, group: str) -> bool:
    """Whether `group` has committed offsets; True when that cannot be read (the check then applies)."""
    try:
        return bool(await admin.list_consumer_group_offsets(group))
    except Exception as exc:  # a coordinator not there yet, an ACL: do not let the check pass on it
        log.debug("could not read the committed offsets of group %r: %s", group, exc)
        return True
