"""``ApiRequestHandler``: what every request handler of a Kafka process does the same way.

The broker's :class:`~kafkacore.broker.server.kafka_apis.KafkaApis` and the controller's
:class:`~kafkacore.broker.controller.controller_apis.ControllerApis` both answer ApiVersions
from their table of handlers, refuse versions they do not speak, and send error responses and
answers fitted to the request's version (Kafka's ``ApiRequestHandler`` and
``RequestHandlerHelper``).  See docs/broker/apis.rst.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkacore.broker.network.request_channel import Request, RequestChannel
from kafkacore.broker.security.authorizer.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
)
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


class ApiRequestHandler:
    """The shared part of a process's request handling; subclasses fill in ``handlers``."""

    #: api key -> handler; ApiVersions lists exactly these keys.
    handlers: dict[int, Callable[[Request], None]]

    #: The ACLs' judge (None: authorization is off and every request is allowed, Kafka's
    #: default); see docs/broker/security.rst.
    authorizer: Any = None

    def __init__(self, request_channel: RequestChannel) -> None:
        self.request_channel = request_channel
        #: api key -> supported_versions(api key), worked out at the first request of each
        #: (every request's version is checked against it)
        self._versions: dict[int, tuple[int, int]] = {}

    # -- authorization (Kafka's AuthHelper) ------------------------------------------------------

    def authorize(self, request: Request, operation: AclOperation, resource_type: ResourceType,
                  name: str = CLUSTER_NAME) -> bool:
        """May the request's principal do ``operation`` on the resource?  Always, without an
        authorizer.  Each handler asks what Kafka's ``KafkaApis`` asks (docs/broker/security.rst)."""
        if self.authorizer is None:
            return True
        return bool(self.authorizer.authorize(request.principal, request.client_address[0],
                                              operation, resource_type, name))

    def authorize_topic(self, request: Request, operation: AclOperation, name: str | None) -> bool:
        return self.authorize(request, operation, ResourceType.TOPIC, name or "")

    def authorized_operations(self, request: Request, resource_type: ResourceType,
                              name: str = CLUSTER_NAME) -> int:
        """The bit field ``1 << operation`` of every operation of the resource's type that the
        principal may do (Metadata's and DescribeGroups' "authorized operations", KIP-430)."""
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type]
                   if self.authorize(request, op, resource_type, name))

    #: The oldest version Kafka 4 answers where our declarations reach further back (KIP-896).
    #: These versions carry message format 0 and 1 (magic 0/1 batches), which Kafka 3 converted
    #: on the way in and out; Kafka 4 and we keep only format 2, so we do not advertise them.
    OLDEST_VERSIONS: Mapping[int, int] = {
        ApiKey.PRODUCE: 3,
        ApiKey.FETCH: 4,
        ApiKey.LIST_OFFSETS: 1,
    }

    def supported_versions(self, api_key: int) -> tuple[int, int]:
        """The versions of ``api_key`` we advertise and answer: those the codec declares, from
        Kafka 4's oldest on."""
        versions = self._versions.get(api_key)
        if versions is None:
            valid = codec.REQUESTS[api_key].valid
            if api_key == ApiKey.SASL_HANDSHAKE:
                # v0 sends the tokens as raw frames (before KIP-152): not read
                versions = 1, valid.high
            else:
                versions = max(valid.low, self.OLDEST_VERSIONS.get(api_key, 0)), valid.high
            self._versions[api_key] = versions
        return versions

    def handle_unparsed_api_versions_request(self, request: Request) -> None:
        """KIP-511: an ApiVersions version we do not know is answered in v0, with
        UNSUPPORTED_VERSION and our list, so the client can pick a version we speak."""
        request.api_version = 0  # (the header keeps the version the client sent)
        self.request_channel.send_response(
            request, self._api_versions_body(Errors.UNSUPPORTED_VERSION))

    def handle_error(self, request: Request, exc: BaseException) -> None:
        """A handler raised: answer with UNKNOWN_SERVER_ERROR (or close if we cannot)."""
        self.send_error_response(request, Errors.UNKNOWN_SERVER_ERROR)

    def send_error_response(self, request: Request, error_code: int) -> None:
        """The API's generic error response: its top-level error code set, everything else empty.

        A response with no top-level error code, or a version we cannot encode, closes the
        connection with the reason logged (what Kafka does with a request it cannot parse).
        """
        body = self.error_response_body(request, error_code)
        if body is None:
            self.request_channel.close_connection(
                request, f"API {request.api_key} v{request.api_version}: error {error_code} "
                         "has no response to carry it")
            return
        self.request_channel.send_response(request, body)

    def error_response_body(self, request: Request, error_code: int) -> dict[str, Any] | None:
        message = codec.RESPONSES.get(request.api_key)
        if message is None or request.api_version not in message.valid:
            return None
        body = message.body.defaults(request.api_version)
        if "error_code" not in body:
            return None
        body["error_code"] = error_code
        return body

    def respond(self, request: Request, body: dict[str, Any]) -> None:
        """Send ``body``, built with every field of the newest version, as ``request``'s version
        (see :func:`fit_to_version`)."""
        if request.api_key == ApiKey.PRODUCE and self.request_channel.send_produce_response(
                request, body):
            return  # compiled, the bytes of the fitted body (one per produce: the hot path)
        if request.api_key == ApiKey.FETCH and self.request_channel.send_fetch_response(
                request, body):
            return  # compiled too (every consumer's and follower's poll)
        message = codec.RESPONSES[request.api_key]
        self.request_channel.send_response(
            request, fit_to_version(message.body, request.api_version, body))

    # -- ApiVersions ---------------------------------------------------------------------------

    def _api_versions_body(self, error_code: int) -> dict[str, Any]:
        return {
            "error_code": error_code,
            "api_keys": [
                {"api_key": key, "min_version": low, "max_version": high}
                for key in sorted(self.handlers)
                for low, high in [self.supported_versions(key)]
            ],
            "throttle_time_ms": 0,
        }

    #: Feature name -> (lowest, highest) level this process supports, each finalized at its
    #: highest (KIP-584).  ``transaction.version`` 2 is KIP-890 part 2: a client that sees it
    #: finalized ends each transaction with EndTxn v5 (an epoch bump per transaction) and adds
    #: partitions with Produce v12 and TxnOffsetCommit v5 (docs/broker/transactions.rst).
    FEATURES: Mapping[str, tuple[int, int]] = {"transaction.version": (0, 2)}

    def handle_api_versions_request(self, request: Request) -> None:
        body = self._api_versions_body(Errors.NONE)
        if request.api_version >= 3:
            body["supported_features"] = [
                {"name": name, "min_version": low, "max_version": high}
                for name, (low, high) in self.FEATURES.items()]
            body["finalized_features_epoch"] = 0
            body["finalized_features"] = [
                {"name": name, "min_version_level": high, "max_version_level": high}
                for name, (_low, high) in self.FEATURES.items()]
        self.request_channel.send_response(request, body)


def fit_to_version(struct: Any, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without the fields (at any depth) that ``version`` of ``struct`` lacks.

    Those fields only add information (a leader epoch, a log start offset) that older clients
    neither expect nor read; the codec refuses them otherwise, to catch a handler sending
    something a client could not see.
    """
    plan = _FIT_PLANS.get((struct, version))
    if plan is None:
        plan = _FIT_PLANS[(struct, version)] = _fit_plan(struct, version)
    out: dict[str, Any] = {}
    for key, v in value.items():
        how = plan.get(key, _KEEP)  # a misspelt field is kept, so that the codec names it
        if how is _DROP:
            continue
        if how is not _KEEP and v is not None:
            sub, is_array = how
            v = [fit_to_version(sub, version, e) for e in v] if is_array else (
                fit_to_version(sub, version, v))
        out[key] = v
    return out


_KEEP = ("keep",)
_DROP = ("drop",)
#: (struct, version) -> field name -> _KEEP, _DROP or (its struct, is an array): what
#: fit_to_version does with each field, worked out once (it runs for every response).
_FIT_PLANS: dict[tuple[Any, int], dict[str, Any]] = {}


def _fit_plan(struct: Any, version: int) -> dict[str, Any]:
    plan: dict[str, Any] = {}
    for name, f in struct.by_name.items():
        if version not in f.versions:
            plan[name] = _DROP
        elif f.struct is not None:
            plan[name] = (f.struct, f.is_array)
        else:
            plan[name] = _KEEP
    return plan
