"""The group coordinator (Kafka's ``group-coordinator`` module): classic groups
(``group_coordinator``, ``group_metadata``, their ``__consumer_offsets`` state in
``group_metadata_manager``) and KIP-848 consumer groups (``consumer_group_coordinator``,
``consumer_group``, ``consumer_group_records``), the assignors and the embedded consumer
protocol.  See docs/broker/groups.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.config`` (the assignors' names), ``kafkacore.broker.metadata``, the protocol
and the errors; what it needs of the rest (appending to ``__consumer_offsets``, the partition's
leader, creating the topic) it is handed, as the Protocols of
``server_common.coordinator_collaborators``.
"""
