"""The broker's settings (Kafka's ``KafkaConfig``, here ``BrokerConfig``), stock Kafka
properties files, dynamic configs, the GROUP resources' configs (``group_config``), the kinds of
config resource (``config_resource``) and the config APIs' helpers.  See docs/broker/configs.rst.

May import: ``kafkacore.broker.log`` (a topic's ``LogConfig``), ``kafkacore.broker.network``
and ``kafkacore.broker.security`` (the config APIs' requests and ACL checks),
``kafkacore.broker.server_common``, the protocol and the errors.  Where the configs are kept
(the metadata cache) and the request handling it answers through are handed to it
(``ConfigRepository``, ``ConfigApis``).
"""
