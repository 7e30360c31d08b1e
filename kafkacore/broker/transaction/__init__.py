"""The transaction coordinator (KIP-98): Kafka's ``TransactionCoordinator``,
``TransactionStateManager`` (the ``__transaction_state`` topic) and
``TransactionMarkerChannelManager`` (COMMIT and ABORT markers to the partition leaders), and
``RPCProducerIdManager`` (in a cluster, producer ids from the controller's blocks, KIP-730).
See docs/broker/transactions.rst and docs/broker/controller.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.metadata``, ``kafkacore.broker.network`` (the faults its connections obey),
``kafkacore.broker.group`` (the offsets a marker settles), the protocol and the errors; the
replica manager and the internal topics' creation it is handed, as the Protocols of
``server_common.coordinator_collaborators``.
"""
