"""A blocking, by-hand Kafka client for the reactor tests: frames in, frames out."""

from __future__ import annotations

import socket

from kafkacore.protocol import codec

API_VERSIONS = 18


def connect(broker, timeout_s: float = 10.0) -> socket.socket:
    s = socket.create_connection((broker.advertised_host, broker.advertised_port), timeout=timeout_s)
    s.settimeout(timeout_s)
    return s


def api_versions_frame(correlation_id: int, version: int = 0) -> bytes:
    body = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
    payload = b"".join(codec.encode_request(API_VERSIONS, version, correlation_id, "t", body))
    return len(payload).to_bytes(4, "big") + payload


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def recv_frame(s: socket.socket) -> bytes:
    return recv_exactly(s, int.from_bytes(recv_exactly(s, 4), "big"))


def api_versions(s: socket.socket, correlation_id: int = 1, version: int = 0):
    s.sendall(api_versions_frame(correlation_id, version))
    return codec.decode_response(API_VERSIONS, version, recv_frame(s))


def closed_by_peer(s: socket.socket) -> bool:
    """Block (bounded by the socket's timeout) until the broker closes ``s``; True if it did."""
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


class Client:
    """One connection that sends a request and reads its answer, checking its correlation id."""

    def __init__(self, broker, client_id: str = "test") -> None:
        self.sock = socket.create_connection((broker.advertised_host, broker.advertised_port),
                                             timeout=30)
        self.client_id = client_id
        self.correlation_id = 0

    def call(self, api_key, version: int, body: dict):
        self.correlation_id += 1
        payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
            api_key, version, self.correlation_id, self.client_id, body))
        self.sock.sendall(len(payload).to_bytes(4, "big") + payload)
        correlation_id, response = codec.decode_response(api_key, version, recv_frame(self.sock))
        assert correlation_id == self.correlation_id
        return response

    def close(self) -> None:
        self.sock.close()
