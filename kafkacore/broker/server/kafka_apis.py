"""KafkaApis: the broker's request handlers, called by the handler threads (Kafka's ``KafkaApis``).

``KafkaApis`` is built with the parts it uses (its constructor lists them) and holds the
dispatch table: API key -> handler.  The handlers live by API family in
:mod:`kafkacore.broker.server.apis` (one module per family, a mixin of this class each; the
table below names the module of every key), each named after its counterpart in Kafka's
``KafkaApis.scala``; what they share is :class:`~kafkacore.broker.server.apis.base.KafkaApisBase`.
See docs/broker/apis.rst.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkacore.broker.network.faults import FaultInjector, InjectedError, produce_error_body
from kafkacore.broker.network.request_channel import Request, RequestChannel
from kafkacore.broker.security.authorizer.acl_apis import AclApis
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.broker.server.apis.cluster import ClusterApis
from kafkacore.broker.server.apis.configs import ConfigAdminManager, ConfigHelper
from kafkacore.broker.server.apis.consumer_groups import ConsumerGroupApis
from kafkacore.broker.server.apis.fetch import FetchApis
from kafkacore.broker.server.apis.groups import GroupApis
from kafkacore.broker.server.apis.metadata import MetadataApis
from kafkacore.broker.server.apis.offsets import OffsetsApis
from kafkacore.broker.server.apis.produce import ProduceApis
from kafkacore.broker.server.apis.quotas import QuotaApis
from kafkacore.broker.server.apis.sasl import SaslApis
from kafkacore.broker.server.apis.topics import TopicApis
from kafkacore.broker.server.apis.transactions import TransactionApis
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

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


class KafkaApis(MetadataApis, ClusterApis, TopicApis, ProduceApis, FetchApis, OffsetsApis,
                GroupApis, ConsumerGroupApis, TransactionApis, ConfigHelper, ConfigAdminManager,
                QuotaApis, SaslApis, KafkaApisBase):
    """One handler per API, each in its family's module of :mod:`kafkacore.broker.server.apis`."""

    def __init__(
        self, *,
        request_channel: RequestChannel,
        config: BrokerConfig,
        broker_id: int,
        cluster_id: str,
        advertised_address: Callable[[str | None], tuple[str, int]],
        faults: FaultInjector,
        metadata_cache: MetadataCache,
        log_manager: LogManager,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator,
        transaction_coordinator: TransactionCoordinator,
        producer_id_manager: ProducerIdGenerator,
        quotas: QuotaManagers,
        fetch_manager: FetchManager,
        authorizer: StandardAuthorizer | None,
        dynamic_config: DynamicBrokerConfig,
        forwarding_manager: Callable[[], ForwardingManager | None],
    ) -> None:
        """``forwarding_manager``: the ForwardingManager once this broker has joined a cluster
        (it is made then), None alone; ``advertised_address``: (host, port) of a listener."""
        super().__init__(request_channel)
        self.config = config
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.advertised_address = advertised_address
        self.faults = faults
        self.metadata_cache = metadata_cache
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.group_coordinator = group_coordinator
        self.transaction_coordinator = transaction_coordinator
        self.producer_id_manager = producer_id_manager
        self.quotas = quotas
        self.fetch_manager = fetch_manager
        self.authorizer = authorizer
        self.dynamic_config = dynamic_config
        self._forwarding = forwarding_manager
        acls = AclApis(self, authorizer, forwarding_manager)
        #: api key -> handler; ApiVersions lists exactly these keys.
        self.handlers: dict[int, Callable[[Request], None]] = {
            # api_request_handler.py (every Kafka process answers it the same way)
            ApiKey.API_VERSIONS: self.handle_api_versions_request,
            # apis/metadata.py
            ApiKey.METADATA: self.handle_metadata_request,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.handle_describe_topic_partitions_request,
            # apis/cluster.py
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster_request,
            ApiKey.DESCRIBE_QUORUM: self.handle_describe_quorum_request,
            ApiKey.DESCRIBE_LOG_DIRS: self.handle_describe_log_dirs_request,
            # apis/topics.py
            ApiKey.CREATE_TOPICS: self.handle_create_topics_request,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics_request,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions_request,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders_request,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS:
                self.handle_alter_partition_reassignments_request,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.handle_list_partition_reassignments_request,
            # apis/produce.py
            ApiKey.PRODUCE: self.handle_produce_request,
            # apis/fetch.py
            ApiKey.FETCH: self.handle_fetch_request,
            # apis/offsets.py
            ApiKey.LIST_OFFSETS: self.handle_list_offsets_request,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch_request,
            ApiKey.DELETE_RECORDS: self.handle_delete_records_request,
            # apis/groups.py
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator_request,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit_request,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch_request,
            ApiKey.JOIN_GROUP: self.handle_join_group_request,
            ApiKey.SYNC_GROUP: self.handle_sync_group_request,
            ApiKey.HEARTBEAT: self.handle_heartbeat_request,
            ApiKey.LEAVE_GROUP: self.handle_leave_group_request,
            ApiKey.DESCRIBE_GROUPS: self.handle_describe_groups_request,
            ApiKey.LIST_GROUPS: self.handle_list_groups_request,
            ApiKey.DELETE_GROUPS: self.handle_delete_groups_request,
            ApiKey.OFFSET_DELETE: self.handle_offset_delete_request,
            # apis/consumer_groups.py
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.handle_consumer_group_heartbeat_request,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.handle_consumer_group_describe_request,
            # apis/transactions.py
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id_request,
            ApiKey.ADD_PARTITIONS_TO_TXN: self.handle_add_partitions_to_txn_request,
            ApiKey.ADD_OFFSETS_TO_TXN: self.handle_add_offsets_to_txn_request,
            ApiKey.END_TXN: self.handle_end_txn_request,
            ApiKey.TXN_OFFSET_COMMIT: self.handle_txn_offset_commit_request,
            ApiKey.WRITE_TXN_MARKERS: self.handle_write_txn_markers_request,
            ApiKey.DESCRIBE_PRODUCERS: self.handle_describe_producers_request,
            ApiKey.DESCRIBE_TRANSACTIONS: self.handle_describe_transactions_request,
            ApiKey.LIST_TRANSACTIONS: self.handle_list_transactions_request,
            # apis/configs.py
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs_request,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs_request,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs_request,
            # apis/quotas.py
            ApiKey.DESCRIBE_CLIENT_QUOTAS: self.handle_describe_client_quotas_request,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas_request,
            # security/authorizer/acl_apis.py (the controller answers them with the same code)
            ApiKey.CREATE_ACLS: acls.handle_create_acls_request,
            ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls_request,
            ApiKey.DELETE_ACLS: acls.handle_delete_acls_request,
            # apis/sasl.py (on a listener without SASL)
            ApiKey.SASL_HANDSHAKE: self.handle_sasl_handshake_request,
            ApiKey.SASL_AUTHENTICATE: self.handle_sasl_authenticate_request,
        }

    def handle(self, request: Request) -> None:
        api_key = request.api_key
        if request.body is None and api_key == ApiKey.API_VERSIONS:
            self.handle_unparsed_api_versions_request(request)
            return
        handler = self.handlers.get(api_key)
        if handler is None:
            self.request_channel.close_connection(
                request, f"unknown or unsupported API key {api_key} (client "
                         f"{request.header.get('client_id')!r})")
            return
        low, high = self.supported_versions(api_key)
        if request.body is None or not low <= request.api_version <= high:
            self.send_error_response(request, Errors.UNSUPPORTED_VERSION)
            return
        injected = self.faults.next_error(api_key)
        if injected is not None and self.answer_injected_error(request, injected):
            return
        handler(request)

    #: APIs that change nothing (Metadata's auto-creation aside): an injected error is set in
    #: the answer the handler builds, so the error lands in the per-partition fields.
    READ_ONLY_APIS = frozenset({ApiKey.METADATA, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                                ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR,
                                ApiKey.DESCRIBE_CONFIGS})

    def answer_injected_error(self, request: Request, injected: InjectedError) -> bool:
        """Answer ``request`` with an error a test asked for (``broker.faults.fail_next``).

        Returns False when the handler must still run: it then builds its answer and
        :meth:`respond` puts the error in it (Produce after the append, the read-only APIs,
        and APIs whose answer has no top-level error code).  See docs/broker/faults.rst.
        """
        request_body = body_of(request)
        code = injected.error_code
        if request.api_key == ApiKey.PRODUCE and not injected.after_append:
            if request_body["acks"] == 0:
                self.request_channel.close_connection(request, "acks=0 produce failed "
                                                               "(an injected fault)")
            else:
                self.respond(request, produce_error_body(request_body, code))
            return True
        if request.api_key not in self.READ_ONLY_APIS and not injected.after_append:
            body = self.error_response_body(request, code)
            if body is not None:
                self.request_channel.send_response(request, body)
                return True
        request.injected_error = code
        return False


__all__ = ["KafkaApis"]
