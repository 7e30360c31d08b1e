"""A blocking client one broker thread uses to talk to another broker or the controller.

Kafka's ``BrokerBlockingSender`` (the replica fetcher's) and ``NodeToControllerChannelManager``
(heartbeats, AlterPartition) in one small class: one TCP connection, one request in flight,
every wait bounded by a socket timeout.  When the broker is isolated on purpose
(:class:`~kafkacore.broker.network.faults.FaultInjector`), the connection is closed and not re-opened
until the broker is healed.
"""

from __future__ import annotations

import itertools
import socket
import threading
from collections.abc import Callable
from typing import Any

from kafkacore import errors
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 2


class InterBrokerClient:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0,
                 faults: Any = None, sasl: Callable[[], SaslMechanism] | None = None) -> None:
        self.host, self.port = host, port
        #: Makes the SASL mechanism each new connection authenticates with (the inter-broker
        #: listener's credentials), or None on a listener without SASL.
        self.sasl = sasl
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.faults = faults
        self._sock: socket.socket | None = None
        # Lock order: leaf, held across one round trip: take it holding no lock of order 1-7.
        self._lock = threading.Lock()
        self._correlation = itertools.count(1)

    def _isolated(self) -> bool:
        return bool(self.faults is not None and self.faults.isolated)

    def send(self, api_key: int, version: int, body: dict[str, Any],
             timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request and wait (bounded) for its response; ``OSError`` on any failure,
        after which the connection is closed (the next call reconnects)."""
        with self._lock:
            if self._isolated():
                self._close_locked()
                raise ConnectionError(f"isolated: not connecting to {self.host}:{self.port}")
            try:
                if self._sock is None:
                    self._sock = socket.create_connection((self.host, self.port),
                                                          timeout=self.timeout_s)
                    self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    if self.sasl is not None:
                        self._authenticate(self.sasl())
                sock = self._sock
                sock.settimeout(timeout_s if timeout_s is not None else self.timeout_s)
                response = self._exchange(api_key, version, body)
                if self._isolated():  # isolated while waiting: drop the answer and the link
                    raise ConnectionError("isolated")
                return response
            except (OSError, ValueError) as exc:
                self._close_locked()
                if isinstance(exc, OSError):
                    raise
                raise ConnectionError(str(exc)) from exc

    def _exchange(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        sock = self._sock
        if sock is None:
            raise errors.IllegalStateError("an exchange on a closed inter-broker connection")
        correlation_id = next(self._correlation)
        payload = b"".join(bytes(c) for c in codec.encode_request(
            api_key, version, correlation_id, self.client_id, body))
        sock.sendall(len(payload).to_bytes(4, "big") + payload)
        size = int.from_bytes(_recv_exactly(sock, 4), "big")
        frame = _recv_exactly(sock, size)
        got, response = codec.decode_response(api_key, version, frame)
        if got != correlation_id:
            raise ConnectionError(f"correlation id {got}, expected {correlation_id}")
        return response

    def _authenticate(self, mechanism: SaslMechanism) -> None:
        """SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate (KIP-152).  A
        refusal is an ``OSError`` too: the caller backs off and reconnects, as on any failure."""
        answer = self._exchange(ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION,
                                {"mechanism": mechanism.name})
        if answer["error_code"] != Errors.NONE:
            raise ConnectionError(f"SASL {mechanism.name} refused by {self.host}:{self.port}: "
                                  f"{errors.for_code(answer['error_code']).__name__}")
        token: bytes | None = mechanism.initial_response()
        while token is not None:
            answer = self._exchange(ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION,
                                    {"auth_bytes": token})
            if answer["error_code"] != Errors.NONE:
                raise ConnectionError(f"SASL authentication with {self.host}:{self.port} "
                                      f"failed: {answer.get('error_message')}")
            try:
                token = mechanism.evaluate_challenge(answer["auth_bytes"] or b"")
            except errors.KafkaError as exc:  # e.g. a SCRAM server signature that is wrong
                raise ConnectionError(f"SASL with {self.host}:{self.port}: {exc}") from exc

    def _close_locked(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def close(self) -> None:
        """Close the connection; may be called from another thread to abort a wait."""
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            self._close_locked()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)
