"""The broker's request reactor: watch two processors share connections and answer in order.

Run it from the repository's root:

    python tutorials/40_request_reactor.py

Needs: nothing but kafkacore: it starts its own kafkacore broker in this process.
"""

import socket
from typing import Any

from kafkacore.broker import Broker
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return bytes(out)


def api_versions_frame(correlation_id: int) -> bytes:
    payload = b"".join(codec.encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "tour", {}))
    return len(payload).to_bytes(4, "big") + payload


def read_response(s: socket.socket) -> tuple[int, dict[str, Any]]:
    size = int.from_bytes(recv_exactly(s, 4), "big")
    return codec.decode_response(ApiKey.API_VERSIONS, 0, recv_exactly(s, size))


with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as broker:
    print(f"broker listening on {broker.bootstrap_servers}")

    # 1. Four connections: the Acceptor hands them out round-robin, 0, 1, 0, 1.
    connections = [
        socket.create_connection((broker.advertised_host, broker.advertised_port), timeout=10)
        for _ in range(4)
    ]
    for i, s in enumerate(connections):
        s.sendall(api_versions_frame(i))
        correlation_id, body = read_response(s)
        assert correlation_id == i and body["error_code"] == Errors.NONE
    socket_server = broker.socket_server
    assert socket_server is not None  # set once the broker has started
    per_processor = [p["accepted"] for p in socket_server.statistics()]
    print(f"connections accepted by each processor: {per_processor}")
    assert per_processor == [2, 2]
    for p in socket_server.processors:
        print(f"  processor {p.id}: {p.connection_ids()}")

    # 2. By hand: the ApiVersions answer lists the APIs this broker handles.
    s = connections[0]
    s.sendall(api_versions_frame(100))
    correlation_id, body = read_response(s)
    print(f"ApiVersions answer to request {correlation_id}: {body['api_keys']}")
    assert {"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 4} in body["api_keys"]

    # 3. Ten requests at once on one connection.  The processor reads one, mutes the connection
    #    until its answer is written, then reads the next: the answers come back in order even
    #    though two handler threads work in parallel.
    s.sendall(b"".join(api_versions_frame(200 + i) for i in range(10)))
    order = [read_response(s)[0] for _ in range(10)]
    print(f"pipelined answers arrived in the order {order}")
    assert order == list(range(200, 210))

    # 4. Garbage on one connection closes that connection, and only that one.
    connections[1].sendall(b"\x00\x00\x00\x08notkafka")
    assert connections[1].recv(10) == b""
    connections[2].sendall(api_versions_frame(300))
    assert read_response(connections[2])[0] == 300
    print("garbage closed its own connection; the others are still served")
    for c in connections:
        c.close()
