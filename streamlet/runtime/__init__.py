"""The asyncio engine: `KafkaStreams` and what runs inside it.

One `KafkaStreams` client owns a `Supervisor`: a consumer-group member whose task group runs the poll
loop and the task actors (`streamlet.actors`). The supervisor wires and owns its parts, one job each:
the `PollLoop` (`poll_loop`), the `StreamsRebalanceListener` (`rebalance_listener`), the `Committer`
(`committer`: when to commit), `PartitionPositions` (`positions`: where each partition's task
continues), `GroupMembership` (`membership`), and the `TaskManager` (which tasks run here); others read
it through its `MemberView`. Beside them: the commit protocols (`commit_protocol`: at-least-once and
exactly-once v2), standby tasks, global stores, the repartition purger, the state directory and
instance id, and `streamlet run --workers N`'s process pool. Kafka I/O that the Spark engine shares is in
`streamlet.kafka`; the test driver and the local broker are developer tools in `streamlet.testing`.
"""
