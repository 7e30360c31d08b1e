"""SaslHandshake and SaslAuthenticate on a listener without SASL.

On a SASL listener the network processor's authenticator answers both before any request
reaches ``KafkaApis`` (:mod:`kafkacore.broker.security.authentication`); here they only say
that this listener has none.  See docs/broker/security.rst.
"""

from __future__ import annotations

from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.server.apis.base import KafkaApisBase
from kafkacore.errors import Errors


class SaslApis(KafkaApisBase):
    """Kafka's ``handleSaslHandshakeRequest`` and ``handleSaslAuthenticateRequest``."""

    def handle_sasl_handshake_request(self, request: Request) -> None:
        """On a SASL listener the processor's authenticator answers these (see
        :mod:`kafkacore.broker.security.authentication`); here the listener has no SASL: ILLEGAL_SASL_STATE,
        as Kafka's ``handleSaslHandshakeRequest``."""
        self.respond(request, {"error_code": Errors.ILLEGAL_SASL_STATE, "mechanisms": []})

    def handle_sasl_authenticate_request(self, request: Request) -> None:
        self.respond(request, {
            "error_code": Errors.ILLEGAL_SASL_STATE, "auth_bytes": b"", "session_lifetime_ms": 0,
            "error_message": f"SaslAuthenticate on listener {request.listener_name}, which has "
                             "no SASL"})


__all__ = ["SaslApis"]
