"""What every room of the broker uses and that knows nothing of Kafka's APIs (Kafka's
``server-common``): ``ShutdownableThread``, ``KafkaScheduler``, the timing wheel (``timer``) and
``DelayedOperationPurgatory``, ``RateLimitedLog``, whole-file rewrites (``files``), the
``lifeline`` that ends a broker with its parent, the ``InterBrokerClient`` (one blocking
connection to another broker or the controller, Kafka's ``InterBrokerSendThread``'s role), and
``ProducerIdsBlock`` (a range of producer ids, as the controller hands them out).
See docs/broker/threads.rst and docs/broker/purgatory.rst.

The ground floor: imports nothing of ``kafkacore.broker``.
"""
