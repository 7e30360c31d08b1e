"""The broker's settings (Kafka's ``KafkaConfig``, here ``BrokerConfig``), stock Kafka
properties files, dynamic configs, the GROUP resources' configs (``group_config``), the kinds of
config resource (``config_resource``) and what the config APIs change (their handlers are
``kafkacore.broker.server.apis.configs``).  See docs/broker/configs.rst.

May import: ``kafkacore.broker.log`` (a topic's ``LogConfig``),
``kafkacore.broker.server_common``, the protocol and the errors.  Where a change lands (the
metadata cache, the logs, the dynamic config) it is handed (``ConfigHolder``).
"""
