"""``KafkaApisBase``: what every handler of :class:`~kafkacore.broker.server.kafka_apis.KafkaApis`
shares (Kafka's ``AuthHelper`` and ``RequestHandlerHelper`` with the collaborators ``KafkaApis``
is built with).

The collaborators are declared here, so that each family's handlers (the other modules of this
package, mixins of ``KafkaApis``) say what they use; ``KafkaApis.__init__`` sets them.  Here
too: the answer with a test's injected error, forwarding to the controller, and the look-ups of
topics, partitions and brokers that handlers of several families make.  Answers no request.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker.log import LogConfig
from kafkacore.broker.network.api_request_handler import ApiRequestHandler
from kafkacore.broker.network.faults import FaultInjector, set_error_codes
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.errors import Errors

if TYPE_CHECKING:
    from kafkacore.broker.config.dynamic_broker_config import DynamicBrokerConfig
    from kafkacore.broker.config.kafka_config import BrokerConfig
    from kafkacore.broker.group.group_coordinator import GroupCoordinator
    from kafkacore.broker.log.log_manager import LogManager
    from kafkacore.broker.metadata.metadata_cache import MetadataCache
    from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
    from kafkacore.broker.server.client_quota_manager import QuotaManagers
    from kafkacore.broker.server.fetch_session import FetchManager
    from kafkacore.broker.server.forwarding_manager import ForwardingManager
    from kafkacore.broker.server.replica_manager import ReplicaManager
    from kafkacore.broker.server_common.coordinator_collaborators import ProducerIdGenerator
    from kafkacore.broker.transaction.transaction_coordinator import TransactionCoordinator

log = logging.getLogger(__name__)

#: "authorized operations" not computed (Kafka's ``Int.MinValue`` sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
INT32_MAX = 2**31 - 1
ZERO_UUID = uuid.UUID(int=0)


def body_of(request: Request) -> dict[str, Any]:
    """The request's parsed body.  ``KafkaApis.handle`` answers a request the parser left
    without one (UNSUPPORTED_VERSION) before any handler runs; a handler reached otherwise
    raises ``InvalidRequestError`` (answered UNKNOWN_SERVER_ERROR by the handler thread)."""
    if request.body is None:
        raise errors.InvalidRequestError(
            f"API {request.api_key} v{request.api_version} reached its handler unparsed")
    return request.body


class KafkaApisBase(ApiRequestHandler):
    """The collaborators and shared helpers of ``KafkaApis``' handlers."""

    config: BrokerConfig
    broker_id: int
    cluster_id: str
    #: (host, port) this broker gives clients that came in on a listener (Metadata's brokers)
    advertised_address: Callable[[str | None], tuple[str, int]]
    #: the errors a test asked for (docs/broker/faults.rst)
    faults: FaultInjector
    metadata_cache: MetadataCache
    log_manager: LogManager
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    producer_id_manager: ProducerIdGenerator
    #: Produce's and Fetch's byte rates (client_quota_manager.py)
    quotas: QuotaManagers
    #: the incremental fetch sessions (fetch_session.py)
    fetch_manager: FetchManager
    authorizer: StandardAuthorizer | None
    dynamic_config: DynamicBrokerConfig
    #: the ForwardingManager once this broker has joined a cluster; None alone
    _forwarding: Callable[[], ForwardingManager | None]

    @property
    def forwarding_manager(self) -> ForwardingManager | None:
        """Where this broker sends what the controller decides (None: alone, it decides)."""
        return self._forwarding()

    @property
    def in_cluster(self) -> bool:
        """A broker of a cluster (topics, configs and quotas are the controller's)."""
        return self._forwarding() is not None

    def respond(self, request: Request, body: dict[str, Any]) -> None:
        """Send ``body`` fitted to ``request``'s version, with the error a test injected."""
        if request.injected_error:
            body = set_error_codes(body, request.injected_error)
        super().respond(request, body)

    def forward_to_controller(self, request: Request,
                              refused: tuple[str, list[dict[str, Any]]] | None = None) -> bool:
        """In a cluster, topics are the controller's: send it the request as it came and pass
        its answer back (Kafka's request forwarding).  False when this broker is alone.
        ``refused``: (the response's list, entries) for what this broker refused to forward."""
        manager = self.forwarding_manager
        if manager is None:
            return False
        try:
            response = manager.forward(request.api_key, request.api_version, body_of(request))
        except OSError as exc:
            log.info("forwarding API %d to the controller failed: %s", request.api_key, exc)
            self.send_error_response(request, Errors.NOT_CONTROLLER)
            return True
        if refused is not None:
            response[refused[0]] = [*response[refused[0]], *refused[1]]
        self.respond(request, response)
        return True

    # -- topics and partitions -------------------------------------------------------------------

    def topic_config(self, configs: dict[str, str]) -> LogConfig:
        """A topic's :class:`~kafkacore.broker.log.LogConfig` (the replica manager's)."""
        return self.replica_manager.topic_config(configs)

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> tuple[Any, bool]:
        """Record the topic (persisted first), then create its partitions' logs."""
        config = self.topic_config(configs)
        topic, created = self.metadata_cache.add_topic(name, partitions, configs)
        if created:
            self.log_manager.get_or_create_logs(
                [(name, p, config, topic.topic_id) for p in range(partitions)])
        return topic, created

    def get_partition_log(self, topic: str, partition: int) -> Any:
        """The partition's log, or None when the topic or the partition does not exist (the
        replica manager's)."""
        return self.replica_manager.get_partition_log(topic, partition)

    def partition_exists(self, topic: str, partition: int) -> bool:
        meta = self.metadata_cache.get(topic)
        return meta is not None and 0 <= partition < meta.partitions

    def topic_id(self, name: str | None) -> uuid.UUID:
        """The topic's id; the zero id for a topic not known (or no name)."""
        meta = None if name is None else self.metadata_cache.get(name)
        return ZERO_UUID if meta is None else meta.topic_id

    def may_create_topic(self, request: Request, name: str) -> bool:
        """CREATE on the cluster, or on the topic (Kafka: either one will do)."""
        return (self.authorize(request, AclOperation.CREATE, ResourceType.CLUSTER)
                or self.authorize_topic(request, AclOperation.CREATE, name))

    # -- brokers and leaders ---------------------------------------------------------------------

    def live_brokers(self, listener_name: str | None = None) -> dict[int, tuple[str, int]]:
        """Broker id -> (host, port) of every live broker (just this one, alone, at the address
        of the listener asked).  In a cluster, brokers register one listener's address."""
        me = {self.broker_id: self.advertised_address(listener_name)}
        rm = self.replica_manager
        if rm.standalone or not rm.brokers:
            return me
        return dict(rm.brokers)

    def metadata_partition(self, topic: str, p: int) -> dict[str, Any]:
        """A partition's leader, epoch, replicas and ISR as Metadata gives them: the
        controller's image, or this broker's own view where it leads (its ISR is the newest)."""
        rm = self.replica_manager
        me = self.broker_id
        if rm.standalone:
            return {"error_code": Errors.NONE, "partition_index": p, "leader_id": me,
                    "leader_epoch": 0, "replica_nodes": [me], "isr_nodes": [me],
                    "offline_replicas": []}
        state = rm.image_topics.get(topic, {}).get(p)
        if state is None:
            return {"error_code": Errors.LEADER_NOT_AVAILABLE, "partition_index": p,
                    "leader_id": -1, "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [],
                    "offline_replicas": []}
        leader, epoch, isr = state.leader, state.leader_epoch, state.isr
        local = rm.partitions.get((topic, p))
        if local is not None and local.is_leader and local.leader_epoch >= epoch:
            leader, epoch, isr = me, local.leader_epoch, local.isr
        return {"error_code": Errors.NONE if leader >= 0 else Errors.LEADER_NOT_AVAILABLE,
                "partition_index": p, "leader_id": leader, "leader_epoch": epoch,
                "replica_nodes": list(state.replicas), "isr_nodes": list(isr),
                # a replica whose broker is fenced, or this broker's own if it cannot host
                # it (its log could not be created: ReplicaManager.offline_partitions)
                "offline_replicas": [r for r in state.replicas if r not in rm.brokers or (
                    r == me and (topic, p) in rm.offline_partitions)]}


__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "INT32_MAX", "ZERO_UUID", "KafkaApisBase", "body_of"]
