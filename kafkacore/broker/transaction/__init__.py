"""The transaction coordinator (KIP-98): Kafka's ``TransactionCoordinator``,
``TransactionStateManager`` (the ``__transaction_state`` topic) and
``TransactionMarkerChannelManager`` (COMMIT and ABORT markers to the partition leaders).
See docs/broker/transactions.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.metadata``, the protocol and the errors; the replica manager and the
inter-broker channel it uses it is handed.
"""
