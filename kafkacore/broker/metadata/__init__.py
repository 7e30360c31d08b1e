"""The cluster's metadata on a broker: the metadata log's records (``metadata_log``), their
replay into the broker's state (``metadata_loader``) and what the APIs read (``metadata_cache``,
Kafka's ``KRaftMetadataCache``).  See docs/broker/controller.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.config``, the protocol and the errors.
"""
