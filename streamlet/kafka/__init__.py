"""The Kafka layer both engines share: everything that talks to Kafka but knows nothing of asyncio actors.

The asyncio runtime (`streamlet.runtime`) and the Spark engine (`streamlet.spark`) read and write the
same topics with the same rules, so that an application can move between them with its state. What
makes that true lives here, once:

- `client_settings`: Kafka's own setting names (security included) turned into aiokafka arguments, per
  client role, and starting and stopping clients;
- `topic_manager`: checking the user's topics and creating the internal ones (repartition, changelog),
  with Kafka Streams' names;
- `assignor`: the task-aware assignor and its subscription/assignment wire format;
- `fenced_offsets`: the KIP-447 offset requests aiokafka does not speak (exactly-once v2);
- `commit_metadata`: Kafka Streams' metadata of committed offsets (partition time, processor metadata);
- `transactions`: the exactly-once commit sequence (begin, acknowledgements, offsets, commit);
- `record_sender` and `batch_pump`: task output handed to aiokafka's producer in batches;
- `changelog_reader` and `restore_records`: rebuilding stores from their changelogs;
- `error_remedies`: which fatal errors' tracebacks are noise (their message says it all);
- `broker_wait_log`: saying in the log when the app waits for an unreachable broker;
- `maven_jars`: the Java jars both engines and the tools fetch once from Maven Central.

Nothing here imports `streamlet.runtime`, `streamlet.spark` or `streamlet.testing`.
"""
