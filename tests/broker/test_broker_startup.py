"""A broker of a cluster answers clients only once it has the cluster's metadata.

Kafka's ``BrokerServer`` binds its listeners early and enables request processing after the
broker has caught up with the metadata log; ours does the same (``Broker.start``), so a client
that reaches a starting (or restarted) broker is never told of a cluster with no brokers and no
topics.  In-process controller and broker; the client is our by-hand reactor client.
"""

from __future__ import annotations

import socket
import threading

from reactor_client import recv_frame
from waits import wait_until

from kafkacore.broker.controller.controller_server import ControllerServer
from kafkacore.broker.server.broker_server import Broker
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import free_port

METADATA_VERSION = 12


def _metadata_frame(correlation_id: int) -> bytes:
    body = {"topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
        ApiKey.METADATA, METADATA_VERSION, correlation_id, "startup-test", body))
    return len(payload).to_bytes(4, "big") + payload


def _connected(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=60)
    except OSError:
        return None


def test_a_client_that_connects_before_the_metadata_is_answered_with_it(tmp_path):
    controller_port, broker_port = free_port(), free_port()
    broker = Broker({
        "node.id": 1, "process.roles": "broker", "log.dirs": str(tmp_path / "b1"),
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        # no controller there yet: the broker cannot have the cluster's metadata
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "broker.heartbeat.interval.ms": "100",
    })
    failures: list[BaseException] = []

    def start_broker() -> None:
        try:
            broker.start()
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    starter = threading.Thread(target=start_broker, daemon=True)
    starter.start()
    controller = None
    client = None
    try:
        # The listener is bound while the broker waits for its controller: a client connects
        # (into the listen backlog) and asks for the cluster.
        wait_until(lambda: broker.lifecycle is not None, "the broker registering")
        client = wait_until(lambda: _connected(broker_port), "the broker's listener bound")
        client.sendall(_metadata_frame(7))
        # Without a controller the broker has no image, and none of its network threads runs:
        # nothing can have read that request.
        assert broker.socket_server is not None
        assert not broker.lifecycle.metadata_loader.image_received.is_set()
        assert not any(p.is_alive() for p in broker.socket_server.processors)
        controller = ControllerServer({
            "node.id": 0, "process.roles": "controller", "log.dirs": str(tmp_path / "c"),
            "listeners": f"PLAINTEXT://127.0.0.1:{controller_port}"}).start()
        # The answer comes once the broker has its image: it names the broker itself.
        correlation_id, body = codec.decode_response(
            ApiKey.METADATA, METADATA_VERSION, recv_frame(client))
        assert correlation_id == 7
        assert [b["node_id"] for b in body["brokers"]] == [1]
        starter.join(60)
        assert not failures, failures
        assert broker.lifecycle.metadata_loader.image_received.is_set()
    finally:
        if client is not None:
            client.close()
        starter.join(60)
        broker.stop()
        if controller is not None:
            controller.stop()
