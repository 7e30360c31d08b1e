"""DescribeCluster and DescribeLogDirs: the admin client's view of the brokers and of this
broker's log directories.  (ApiVersions, which every Kafka process answers the same way, is
:class:`~kafkacore.broker.network.api_request_handler.ApiRequestHandler`'s.)
See docs/broker/apis.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import AUTHORIZED_OPERATIONS_OMITTED, KafkaApisBase, body_of
from kafkacore.errors import Errors


class ClusterApis(KafkaApisBase):
    """DescribeCluster (Kafka's ``handleDescribeCluster``) and DescribeLogDirs."""

    #: DescribeCluster's EndpointType (KIP-919): a broker answers for the brokers.
    ENDPOINT_TYPE_BROKER = 1

    def handle_describe_cluster_request(self, request: Request) -> None:
        """The admin client's view of the cluster: the live brokers and a controller id, as
        Metadata gives them, without topics.  Anyone may ask; the cluster's authorized
        operations need DESCRIBE on the cluster (0 otherwise), as in Kafka's ``KafkaApis``."""
        body = body_of(request)
        response: dict[str, Any] = {
            "throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
            "endpoint_type": self.ENDPOINT_TYPE_BROKER, "cluster_id": self.cluster_id,
            "controller_id": -1, "brokers": [],
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        if body.get("endpoint_type", self.ENDPOINT_TYPE_BROKER) != self.ENDPOINT_TYPE_BROKER:
            response.update(error_code=Errors.MISMATCHED_ENDPOINT_TYPE,
                            error_message="this is a broker's endpoint, not a controller's")
            self.respond(request, response)
            return
        live = self.live_brokers(request.listener_name)
        response.update(
            brokers=[{"broker_id": node, "host": host, "port": port, "rack": None,
                      "is_fenced": False} for node, (host, port) in sorted(live.items())],
            # Clients cannot reach a KRaft controller: Kafka 4 names a live broker here.
            controller_id=min(live))
        if body["include_cluster_authorized_operations"]:
            response["cluster_authorized_operations"] = (
                self.authorized_operations(request, ResourceType.CLUSTER)
                if self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER) else 0)
        self.respond(request, response)

    # -- DescribeLogDirs --------------------------------------------------------------------------

    def handle_describe_log_dirs_request(self, request: Request) -> None:
        """This broker's log dirs and the partitions in them (DESCRIBE on the cluster)."""
        body = body_of(request)
        asked = body["topics"]
        if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0,
                                   "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   "results": []})
            return
        wanted = None if asked is None else {(t["topic"], p) for t in asked
                                             for p in t["partitions"]}
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "results": self.replica_manager.describe_log_dirs(wanted)})


__all__ = ["ClusterApis"]
