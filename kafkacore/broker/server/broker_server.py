"""Broker: the parts wired together (Kafka's ``KafkaServer`` / ``BrokerServer``)."""

from __future__ import annotations

import collections
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkacore.broker.config.dynamic_broker_config import DynamicBrokerConfig
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.group.consumer_group_coordinator import ConsumerGroupCoordinator
from kafkacore.broker.group.group_coordinator import GroupCoordinator
from kafkacore.broker.group.group_metadata_manager import (
    OFFSETS_TOPIC,
    GroupMetadataManager,
)
from kafkacore.broker.log import LogConfig, LogManager, ProducerIdManager
from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.log_manager import LogManagerIntervals
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.metadata.metadata_loader import MetadataLoader
from kafkacore.broker.metadata.quorum_description import elect_self
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.network.kafka_request_handler import KafkaRequestHandlerPool
from kafkacore.broker.network.request_channel import RequestChannel
from kafkacore.broker.network.socket_server import SocketServer
from kafkacore.broker.security.authentication import build_listener_security, inter_broker_sasl
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.broker.server.auto_topic_creation_manager import AutoTopicCreationManager
from kafkacore.broker.server.broker_lifecycle_manager import BrokerLifecycleManager
from kafkacore.broker.server.client_quota_manager import QuotaManagers
from kafkacore.broker.server.fetch_session import FetchManager, FetchSessionCache
from kafkacore.broker.server.forwarding_manager import ForwardingManager
from kafkacore.broker.server.kafka_apis import KafkaApis
from kafkacore.broker.server.replica_manager import ReplicaManager
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.kafka_scheduler import KafkaScheduler
from kafkacore.broker.transaction.rpc_producer_id_manager import RPCProducerIdManager
from kafkacore.broker.transaction.transaction_coordinator import TransactionCoordinator
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.errors import IllegalStateError

log = logging.getLogger(__name__)


class Broker:
    """One broker in this process.

    >>> with Broker({"num.network.threads": "2"}) as broker:   # doctest: +SKIP
    ...     print(broker.bootstrap_servers)
    127.0.0.1:40123
    """

    def __init__(self, config: BrokerConfig | Mapping[str, Any] | None = None) -> None:
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        self.broker_id: int = self.config["node.id"]
        self.cluster_id: str = self.config["cluster.id"]
        self.request_channel = RequestChannel(self.config["queued.max.requests"])
        #: Faults switched on by tests (kafkacore.broker.network.faults); none by default.
        self.faults = FaultInjector()
        #: Each listener's TLS context and SASL users, checked now (a bad keystore or user list
        #: is a ConfigError here, before anything starts).
        self.listener_security = build_listener_security(self.config)
        #: In a cluster: how this broker's clients of other brokers (the replica fetchers)
        #: authenticate on the inter-broker listener (None: that listener has no SASL).
        self.inter_broker_sasl = inter_broker_sasl(self.config) \
            if self.config["process.roles"] == "broker" else None
        self.socket_server: SocketServer | None = None
        self.log_manager: Any = None
        #: the broker's KafkaScheduler: the log's periodic tasks (kafka_scheduler.py)
        self.kafka_scheduler: Any = None
        self.metadata_cache: Any = None
        self.quotas: Any = None  #: the QuotaManagers (Produce's and Fetch's byte rates)
        self.group_coordinator: Any = None
        self.transaction_coordinator: Any = None
        self.producer_id_manager: Any = None
        self.apis: Any = None
        #: The StandardAuthorizer (authorizer.class.name), or None: every request allowed.
        self.authorizer: Any = None
        self.replica_manager: Any = None
        #: the incremental fetch sessions (fetch_session.py)
        self.fetch_manager: Any = None
        #: the controller's side of this broker (None in a cluster of one)
        self.lifecycle: Any = None
        self.forwarding_manager: Any = None
        self.auto_topic_creation_manager: AutoTopicCreationManager | None = None
        self._handlers: KafkaRequestHandlerPool | None = None
        self._started = False

    @property
    def advertised_host(self) -> str:
        return self.config.advertised_host

    @property
    def advertised_port(self) -> int:
        """The advertised port; with port 0 in both listener settings, the one bound."""
        if self.config.advertised_port == 0 and self.socket_server is not None:
            return self.socket_server.bound_port
        return self.config.advertised_port

    def advertised_address(self, listener: str | None) -> tuple[str, int]:
        """(host, port) given to clients that came in on ``listener`` (Kafka answers Metadata
        with the brokers' endpoints of the request's listener); port 0: the one bound."""
        endpoint = self.config.advertised.get(listener)
        if endpoint is None:
            return self.advertised_host, self.advertised_port
        port = endpoint.port
        if port == 0 and self.socket_server is not None:
            port = self.socket_server.bound_port_of(listener)
        return endpoint.host, port

    def bootstrap_servers_of(self, listener: str) -> str:
        """``host:port`` of the listener named ``listener`` (e.g. ``"SASL_SSL"``)."""
        host, port = self.advertised_address(listener.upper())
        return f"{host}:{port}"

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.advertised_host}:{self.advertised_port}"

    def statistics(self) -> dict[str, Any]:
        """Counters since start, for tests and benchmarks: ``network`` (every processor's, added
        up: requests by API key, bytes read and written) and ``fetch_sessions``."""
        if self.socket_server is None:
            raise IllegalStateError("the broker has not started")
        network: collections.Counter[str] = collections.Counter()
        for processor in self.socket_server.statistics():
            network.update(processor)
        return {"network": dict(network), "fetch_sessions": self.fetch_manager.statistics()}

    def start(self) -> Broker:
        if self._started:
            return self
        first_dir = self.config.log_dirs[0]
        self.metadata_cache = MetadataCache(first_dir)
        if self.config["process.roles"] == "":
            # Alone, this broker is its own controller: each start is an election it wins.
            self.metadata_cache.leader_epoch = elect_self(first_dir, self.broker_id)
        self.quotas = QuotaManagers(self.config["quota.window.num"],
                                    self.config["quota.window.size.seconds"])
        self.quotas.update(self.metadata_cache.client_quotas.quotas)
        self.metadata_cache.on_client_quotas = self.quotas.update
        self.dynamic_config = DynamicBrokerConfig(self.config, self.broker_id,
                                                  self.metadata_cache.broker_configs())
        self.authorizer = StandardAuthorizer.from_config(self.config)
        # In a cluster the controller hands out the producer ids, in blocks; a broker alone
        # reserves its own blocks in a file (docs/broker/controller.rst).
        if self.config["process.roles"] == "broker":
            self.producer_id_manager = RPCProducerIdManager(self.broker_id,
                                                            self._controller_channel)
        else:
            self.producer_id_manager = ProducerIdManager(first_dir)
        self.kafka_scheduler = KafkaScheduler(self.config["background.threads"])
        self.kafka_scheduler.startup()
        self.log_manager = _make_log_manager(self.config, self.dynamic_config,
                                             self.kafka_scheduler, self.metadata_cache)
        self.replica_manager = ReplicaManager(
            self.config, self.broker_id, log_manager=self.log_manager,
            metadata_cache=self.metadata_cache, scheduler=self.kafka_scheduler,
            faults=self.faults, inter_broker_sasl=self.inter_broker_sasl,
            lifecycle=lambda: self.lifecycle)
        #: the coordinators' internal topics, made on their first use (in a cluster: by the
        #: controller, through the forwarding manager the broker has once it joined)
        self.auto_topic_creation_manager = AutoTopicCreationManager(
            self.metadata_cache, self.replica_manager, lambda: self.forwarding_manager)
        group_manager = GroupMetadataManager(
            self.config, self.broker_id, metadata_cache=self.metadata_cache,
            log_manager=self.log_manager, replicas=self.replica_manager,
            topic_creator=self.auto_topic_creation_manager)
        self.replica_manager.add_leadership_listener(
            OFFSETS_TOPIC, lambda leading: group_manager.on_leadership(set(leading)))
        self.group_coordinator = GroupCoordinator(
            group_manager,
            group_min_session_timeout_ms=self.config["group.min.session.timeout.ms"],
            group_max_session_timeout_ms=self.config["group.max.session.timeout.ms"],
            group_initial_rebalance_delay_ms=self.config["group.initial.rebalance.delay.ms"],
            group_max_size=self.config["group.max.size"],
            broker_id=self.broker_id,
            consumer_groups=_consumer_group_coordinator(self.config, group_manager,
                                                        self.metadata_cache),
        )
        self.group_coordinator.startup()
        self.socket_server = SocketServer(self.config, self.request_channel, self.faults,
                                          self.listener_security)
        self.transaction_coordinator = TransactionCoordinator(
            self.config, self.broker_id, producer_id_manager=self.producer_id_manager,
            metadata_cache=self.metadata_cache, log_manager=self.log_manager,
            replicas=self.replica_manager, group_manager=group_manager,
            topic_creator=self.auto_topic_creation_manager, faults=self.faults,
            inter_broker_sasl=self.inter_broker_sasl)
        # each partition's leader epoch is its coordinator epoch
        self.replica_manager.add_leadership_listener(
            TRANSACTION_STATE_TOPIC, self.transaction_coordinator.txn_manager.on_leadership)
        self.fetch_manager = FetchManager(FetchSessionCache(
            self.config["max.incremental.fetch.session.cache.slots"],
            self.config["min.incremental.fetch.session.eviction.ms"]))
        self.apis = KafkaApis(
            request_channel=self.request_channel, config=self.config, broker_id=self.broker_id,
            cluster_id=self.cluster_id, advertised_address=self.advertised_address,
            faults=self.faults, metadata_cache=self.metadata_cache, log_manager=self.log_manager,
            replica_manager=self.replica_manager, group_coordinator=self.group_coordinator,
            transaction_coordinator=self.transaction_coordinator,
            producer_id_manager=self.producer_id_manager, quotas=self.quotas,
            fetch_manager=self.fetch_manager, authorizer=self.authorizer,
            dynamic_config=self.dynamic_config,
            # made when this broker joins a cluster, after the APIs
            forwarding_manager=lambda: self.forwarding_manager)
        # After the APIs: loading may write markers at once, through the replica manager.
        self.transaction_coordinator.startup()
        self._handlers = KafkaRequestHandlerPool(
            self.request_channel, self.apis, self.config["num.io.threads"]
        )
        self._handlers.start()
        self._started = True
        if self.config["process.roles"] == "broker":
            # Kafka's BrokerServer binds its listeners early and enables request processing
            # only once the broker has caught up with the metadata log: a client that connects
            # meanwhile (to a restarted broker's address) waits in the listen backlog instead
            # of being told of a cluster with no brokers and no topics.
            self.replica_manager.startup()
            self.producer_id_manager.start()  # asks for its first block once registered
            self._join_cluster()
            self.socket_server.startup()
        else:
            self.socket_server.startup()
            self.replica_manager.startup()
        log.info("broker %d started, listening on %s", self.broker_id, self.bootstrap_servers)
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.socket_server is None or self._handlers is None:
            raise IllegalStateError("the broker has not started")
        if isinstance(self.producer_id_manager, RPCProducerIdManager):
            self.producer_id_manager.shutdown()
        if self.lifecycle is not None:
            self.lifecycle.shutdown()
        self.socket_server.shutdown()
        self._handlers.shutdown()
        self.transaction_coordinator.shutdown()
        self.replica_manager.shutdown()
        self.group_coordinator.shutdown()
        if self.kafka_scheduler is not None:
            self.kafka_scheduler.shutdown()
        shutdown = getattr(self.log_manager, "shutdown", None)
        if shutdown is not None:
            shutdown()
        if self.config.log_dirs_are_temporary:
            for d in self.config.log_dirs:
                shutil.rmtree(d, ignore_errors=True)
        log.info("broker %d stopped", self.broker_id)

    def _join_cluster(self, timeout_s: float = 60.0) -> None:
        """Register with the controller and wait (bounded) for its first image, so that the
        broker answers clients with the cluster's leaders from its first request on."""
        self.lifecycle = BrokerLifecycleManager(
            self.config, self.broker_id, self.cluster_id,
            advertised_address=self.advertised_address, faults=self.faults,
            metadata_loader=self.new_metadata_loader)
        self.forwarding_manager = ForwardingManager(self.lifecycle.controller_channel,
                                                    self.lifecycle.metadata_loader)
        self.lifecycle.start()
        if not self.lifecycle.metadata_loader.image_received.wait(timeout_s):
            self.stop()
            raise TimeoutError(f"broker {self.broker_id}: no metadata from the controller at "
                               f"{self.config['controller.quorum.bootstrap.servers']} within "
                               f"{timeout_s} s")

    def _controller_channel(self) -> tuple[InterBrokerClient, int] | None:
        """The connection to the controller that forwarded requests take, and this broker's
        epoch; None until it is registered."""
        lifecycle = self.lifecycle
        if lifecycle is None or lifecycle.broker_epoch < 0:
            return None
        return lifecycle.controller_channel, lifecycle.broker_epoch

    def new_metadata_loader(self, client: InterBrokerClient | None) -> MetadataLoader:
        """A :class:`~kafkacore.broker.metadata.metadata_loader.MetadataLoader` that pulls over
        ``client`` (a connection to the controller) and publishes into this broker's parts."""
        return MetadataLoader(
            client, self.broker_id, interval_ms=self.config["broker.heartbeat.interval.ms"],
            metadata_cache=self.metadata_cache, log_manager=self.log_manager,
            dynamic_config=self.dynamic_config, replicas=self.replica_manager,
            authorizer=self.authorizer)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Broker(id={self.broker_id}, {self.bootstrap_servers})"


def _make_log_manager(c: BrokerConfig, dynamic_config: DynamicBrokerConfig,
                      scheduler: KafkaScheduler, metadata_cache: MetadataCache) -> LogManager:
    """The storage: a :class:`kafkacore.broker.log.LogManager` over ``log.dirs``, with the
    broker-wide log settings as every topic's default, recovered at start-up."""
    default = dynamic_config.default_log_config()
    dirs: list[str | Path] = list(c.log_dirs)
    intervals = LogManagerIntervals(
        retention_check_ms=c["log.retention.check.interval.ms"],
        flush_check_ms=c["log.flush.scheduler.interval.ms"],
        flush_recovery_offset_checkpoint_ms=c["log.flush.offset.checkpoint.interval.ms"],
        flush_start_offset_checkpoint_ms=c["log.flush.start.offset.checkpoint.interval.ms"],
        producer_id_expiration_check_ms=c["producer.id.expiration.check.interval.ms"],
        initial_task_delay_ms=c["log.initial.task.delay.ms"],
        dir_probe_ms=c["log.dir.failure.probe.interval.ms"],
    )
    manager = LogManager(dirs, default, scheduler=scheduler, intervals=intervals,
                         cleaner_config=CleanerConfig.from_broker_config(c))
    topic_configs = {
        t.name: LogConfig.from_properties(t.configs, base=default)
        for t in metadata_cache.topics()
    }
    manager.startup(topic_configs)

    def topic_configs_of(name: str) -> dict[str, str]:
        meta = metadata_cache.get(name)
        return {} if meta is None else meta.configs

    dynamic_config.log_listeners.append(
        lambda default: manager.reconfigure_default_log_config(default, topic_configs_of))
    return manager


def _consumer_group_coordinator(config: BrokerConfig, group_manager: GroupMetadataManager,
                                metadata_cache: MetadataCache) -> ConsumerGroupCoordinator:
    """The KIP-848 half of the group coordinator, with ``group.consumer.*`` (checked by
    :class:`~kafkacore.broker.config.kafka_config.BrokerConfig`)."""
    return ConsumerGroupCoordinator(
        group_manager, metadata_cache,
        heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
        session_timeout_ms=config["group.consumer.session.timeout.ms"],
        max_size=config["group.consumer.max.size"],
        assignors=tuple(n.strip() for n in config["group.consumer.assignors"].split(",")
                        if n.strip()),
        migration_policy=config["group.consumer.migration.policy"])
