"""kafkacore's broker, laid out as Kafka's modules are (see docs/broker/layout.rst).

Each package says in its ``__init__`` what lives there and what it may import; from the ground up:

- :mod:`kafkacore.broker.server_common`: threads, the scheduler, the timing wheel, the purgatory,
  small files (Kafka's ``server-common``); imports nothing of the broker;
- :mod:`kafkacore.broker.log`: the log on disk, its indexes, producer state, the cleaner
  (Kafka's ``storage``);
- :mod:`kafkacore.broker.network`: the request reactor, ``SocketServer`` to ``RequestChannel``
  (Kafka's ``kafka.network``);
- :mod:`kafkacore.broker.security`: TLS, SASL and the authorizer;
- :mod:`kafkacore.broker.config`: ``KafkaConfig`` (here ``BrokerConfig``), dynamic and topic configs;
- :mod:`kafkacore.broker.metadata`: the metadata log, its loader and the broker's ``MetadataCache``;
- :mod:`kafkacore.broker.group`: both group coordinators (Kafka's ``group-coordinator``);
- :mod:`kafkacore.broker.transaction`: the transaction coordinator;
- :mod:`kafkacore.broker.controller`: the controller;
- :mod:`kafkacore.broker.server`: ``ReplicaManager``, ``KafkaApis`` and ``Broker``, which builds
  the rest and hands each part what it uses (Kafka's ``kafka.server``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkacore.broker.config.kafka_config import BrokerConfig

if TYPE_CHECKING:
    from kafkacore.broker.server.broker_server import Broker

__all__ = ["Broker", "BrokerConfig"]


def __getattr__(name: str) -> Any:
    # Broker on first use, not at import: ``kafkacore-broker`` (kafkacore.broker.__main__) must
    # be able to say in one line that the broker's extra is missing before the group coordinator
    # imports RE2.
    if name == "Broker":
        from kafkacore.broker.server.broker_server import Broker
        return Broker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
