"""kafkacore's broker: the request reactor, the APIs and the log on disk (see docs/broker/).

The reactor is :mod:`~kafkacore.broker.network`, :mod:`~kafkacore.broker.request_channel` and
:mod:`~kafkacore.broker.handler`; the APIs :mod:`~kafkacore.broker.apis`; the log
:mod:`kafkacore.broker.log`.
"""

from kafkacore.broker.cluster import Cluster
from kafkacore.broker.config import BrokerConfig
from kafkacore.broker.server import Broker

__all__ = ["Broker", "BrokerConfig", "Cluster"]
