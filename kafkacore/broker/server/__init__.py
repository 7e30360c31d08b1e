"""The broker proper (Kafka's ``kafka.server``): ``Broker`` builds every part and wires them.

``broker_server`` (``Broker``), ``kafka_apis`` (``KafkaApis``: the dispatch table) and ``apis``
(its handlers, one module per API family), ``replica_manager`` and ``partition`` (appends,
fetches, the ISR), the delayed produce and fetch, ``replica_fetcher``, fetch sessions, client
quotas, the internal topics' creation (``auto_topic_creation_manager``), and the broker's
lifecycle and its channels to the controller (``broker_lifecycle_manager``,
``alter_partition_manager``, ``forwarding_manager``), which go to whichever controller of a
quorum is active (``raft_controller_node_provider``, ``node_to_controller_channel_manager``).
``kafka_raft_server`` (``KafkaRaftServer``) is a combined node of a quorum: a controller (the
voter) and a ``Broker`` in one process (``process.roles=broker,controller``).

The top floor: it may import every other package of the broker; nothing else imports it (a part
below is handed what it uses by ``Broker``, each constructor naming its collaborators).
"""
