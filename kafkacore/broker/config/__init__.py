"""The broker's settings (Kafka's ``KafkaConfig``, here ``BrokerConfig``), stock Kafka
properties files, dynamic configs and what the config APIs change (their handlers are
``kafkacore.broker.server.apis.configs``).  See docs/broker/configs.rst.

May import: ``kafkacore.broker.log`` (a topic's ``LogConfig``), ``kafkacore.broker.group``'s
``group_config``, ``kafkacore.broker.server_common``, the protocol and the errors.
"""
