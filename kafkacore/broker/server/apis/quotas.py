"""DescribeClientQuotas and AlterClientQuotas (KIP-546): the byte-rate quotas of users and
client ids.

Described from this broker's image of the quotas (Kafka's brokers answer it themselves);
altered by the controller in a cluster (forwarded) or by this broker alone, as
ClientQuotaRecords in the metadata log.  The quotas in force are
:mod:`kafkacore.broker.server.client_quota_manager`'s.  See docs/broker/quotas.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore import errors
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.errors import Errors


class QuotaApis(KafkaApisBase):
    """Kafka's ``handleDescribeClientQuotasRequest`` and ``handleAlterClientQuotasRequest``."""

    def handle_describe_client_quotas_request(self, request: Request) -> None:
        """From this broker's image of the quotas (Kafka's brokers answer it themselves)."""
        body = body_of(request)
        answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                  "error_message": None, "entries": None}
        if not self.authorize(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
            answer["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
        else:
            try:
                answer["entries"] = self.metadata_cache.describe_client_quotas(
                    body["components"], body["strict"])
            except errors.BrokerResponseError as exc:
                answer.update(error_code=exc.errno, error_message=exc.error_message)
        self.respond(request, answer)

    def handle_alter_client_quotas_request(self, request: Request) -> None:
        """ALTER_CONFIGS on the cluster; then made by the controller (or here, alone), as
        ClientQuotaRecords in the metadata log."""
        body = body_of(request)
        if not self.authorize(request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0, "entries": [
                {"error_code": Errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                 "entity": e["entity"]} for e in body["entries"]]})
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "entries": self.metadata_cache
                               .alter_client_quotas(body["entries"], body["validate_only"])})


__all__ = ["QuotaApis"]
