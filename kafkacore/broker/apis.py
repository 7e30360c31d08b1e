"""KafkaApis: one method per API, called by the request handlers (Kafka's ``KafkaApis``).

This first version answers ApiVersions and refuses what it cannot answer with Kafka's error
codes; the other APIs are added on top of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore.broker.request_channel import Request
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.server import Broker

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNSUPPORTED_VERSION = 35


class KafkaApis:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.request_channel = broker.request_channel
        #: api key -> handler; ApiVersions lists exactly these keys.
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.API_VERSIONS: self.handle_api_versions_request,
        }

    def supported_versions(self, api_key: int) -> tuple[int, int]:
        """The versions of ``api_key`` we answer: all those the codec declares."""
        valid = codec.REQUESTS[api_key].valid
        return valid.low, valid.high

    def handle(self, request: Request) -> None:
        api_key = request.api_key
        if api_key == ApiKey.API_VERSIONS and request.body is None:
            # KIP-511: an ApiVersions version we do not know is answered in v0, with
            # UNSUPPORTED_VERSION and our list, so the client can pick a version we speak.
            request.header["request_api_version"] = 0
            self.request_channel.send_response(request, self._api_versions_body(
                UNSUPPORTED_VERSION))
            return
        handler = self.handlers.get(api_key)
        if handler is None:
            self.request_channel.close_connection(
                request, f"unknown or unsupported API key {api_key} (client "
                         f"{request.header.get('client_id')!r})")
            return
        low, high = self.supported_versions(api_key)
        if request.body is None or not low <= request.api_version <= high:
            self.send_error_response(request, UNSUPPORTED_VERSION)
            return
        handler(request)

    def handle_error(self, request: Request, exc: BaseException) -> None:
        """A handler raised: answer with UNKNOWN_SERVER_ERROR (or close if we cannot)."""
        self.send_error_response(request, UNKNOWN_SERVER_ERROR)

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

    def handle_api_versions_request(self, request: Request) -> None:
        self.request_channel.send_response(request, self._api_versions_body(NONE))
