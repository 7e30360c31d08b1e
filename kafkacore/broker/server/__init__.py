"""The broker proper (Kafka's ``kafka.server``): ``Broker`` builds every part and wires them.

``broker_server`` (``Broker``), ``kafka_apis`` (``KafkaApis``: the dispatch table) and ``apis``
(its handlers, one module per API family),
``kafka_request_handler`` (the I/O threads), ``replica_manager`` and ``partition`` (appends,
fetches, the ISR), the delayed produce and fetch, ``replica_fetcher``, fetch sessions, client
quotas, the broker's lifecycle and its clients of other brokers and the controller, and the
``faults`` a test injects.

The top floor: it may import every other package of the broker; nothing else imports it (a part
below is handed what it uses by ``Broker``).
"""
