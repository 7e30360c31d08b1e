"""A Kafka-compatible broker built from Kafka's own parts: the request reactor
(:mod:`~kafkacore.broker.network`, :mod:`~kafkacore.broker.request_channel`,
:mod:`~kafkacore.broker.handler`), the APIs (:mod:`~kafkacore.broker.apis`) and the log."""

from kafkacore.broker.config import BrokerConfig
from kafkacore.broker.server import Broker

__all__ = ["Broker", "BrokerConfig"]
