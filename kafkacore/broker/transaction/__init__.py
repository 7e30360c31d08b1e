"""The transaction coordinator (KIP-98): Kafka's ``TransactionCoordinator``,
``TransactionStateManager`` (the ``__transaction_state`` topic) and
``TransactionMarkerChannelManager`` (COMMIT and ABORT markers to the partition leaders).
See docs/broker/transactions.rst."""
