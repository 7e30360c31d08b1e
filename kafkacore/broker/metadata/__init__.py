"""The cluster's metadata on a broker: the metadata log's records (``metadata_log``), their
replay into the broker's state (``metadata_loader``) and what the APIs read (``metadata_cache``,
Kafka's ``KRaftMetadataCache``), each partition's ``partition_state``, and the client quotas'
model that the controller and every broker's image both replay
(``client_quota_control_manager``).  See docs/broker/controller.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.config``, ``kafkacore.broker.security`` (the ACLs it loads),
``kafkacore.raft.line_file`` (the metadata log's lines, read as the quorum's log reads its own),
the protocol and the errors; the replica manager it publishes to is handed to it (an
``ImagePublisher``).
"""
