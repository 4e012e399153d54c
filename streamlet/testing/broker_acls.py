"""ACLs for tests against a `LocalKafkaBroker(sasl_users=..., acls=True)`: the set Kafka Streams documents
for an application, and a way to create them.

Kafka Streams' security guide asks, for an application's principal: READ on its input topics, WRITE on
its output topics, and, because every internal topic, the consumer group and (under exactly-once) every
transactional id start with the `application.id`, ALL on the topic, group and transactional-id resources
*prefixed* with it. `streams_application_acls` returns exactly that list, so a test can grant it, or all
of it but one entry, and see what the application does.

ACLs are created with the CreateAcls API through aiokafka's protocol classes (its admin client has no
method for it), over any connection a super-user holds (the broker's PLAINTEXT listener is one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import CreateAclsRequest

from streamlet.errors import StreamsError

# Kafka's wire codes (org.apache.kafka.common.resource.ResourceType, PatternType, acl.AclOperation, ...).
_RESOURCE_TYPES = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5}
_PATTERN_TYPES = {"LITERAL": 3, "PREFIXED": 4}
_OPERATIONS = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
               "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
_ALLOW = 3


@dataclass(frozen=True)
class Acl:
    """One ALLOW entry: `principal` (e.g. "User:alice") may do `operation` on the resource."""

    principal: str
    resource_type: str  # TOPIC | GROUP | CLUSTER | TRANSACTIONAL_ID
    resource_name: str
    operation: str  # READ | WRITE | ALL | ...
    pattern_type: str = "LITERAL"  # LITERAL | PREFIXED
    host: str = "*"

    def __str__(self) -> str:
        pattern = " (prefixed)" if self.pattern_type == "PREFIXED" else ""
        return f"{self.principal} {self.operation} on {self.resource_type} {self.resource_name!r}{pattern}"


def streams_application_acls(principal: str, application_id: str, input_topics: Iterable[str],
                             output_topics: Iterable[str], *, exactly_once: bool = False) -> list[Acl]:
    """The ACLs Kafka Streams documents for an application (see the module docstring)."""
    acls = [Acl(principal, "TOPIC", topic, "READ") for topic in sorted(set(input_topics))]
    acls += [Acl(principal, "TOPIC", topic, "WRITE") for topic in sorted(set(output_topics))]
    acls += [Acl(principal, "TOPIC", application_id, "ALL", "PREFIXED"),
             Acl(principal, "GROUP", application_id, "ALL", "PREFIXED")]
    if exactly_once:
        acls.append(Acl(principal, "TRANSACTIONAL_ID", application_id, "ALL", "PREFIXED"))
    return acls


async def create_acls(admin_kwargs: str | Mapping[str, Any], acls: Iterable[Acl]) -> None:
    """Create `acls` as a super-user: `admin_kwargs` is a bootstrap string (a PLAINTEXT listener) or
    aiokafka admin keyword arguments. Raises StreamsError naming an ACL the broker refused."""
    kwargs = {"bootstrap_servers": admin_kwargs} if isinstance(admin_kwargs, str) else dict(admin_kwargs)
    admin = AIOKafkaAdminClient(**kwargs)
    await admin.start()
    try:
        for acl in acls:
            request = CreateAclsRequest(_RESOURCE_TYPES[acl.resource_type], acl.resource_name,
                                        _PATTERN_TYPES[acl.pattern_type], acl.principal, acl.host,
                                        _OPERATIONS[acl.operation], _ALLOW)
            response = await admin._send_request(request)
            for code, message in response.creation_responses:
                if code != 0:
                    raise StreamsError(f"the broker refused the ACL {acl}: error {code} {message or ''}".strip())
    finally:
        await admin.close()
