"""``RaftControllerNodeProvider``: which controller a broker talks to.

``controller.quorum.bootstrap.servers`` may list several controllers (a quorum).  Only the
active one answers a broker's registration, heartbeats, forwarded requests and metadata
fetches; the others answer ``NOT_CONTROLLER`` (or close the connection, for a request whose
answer has no error code).  The provider holds the list and a position in it, shared by the
broker's connections to the controller
(:class:`~kafkacore.broker.server.node_to_controller_channel_manager.NodeToControllerChannelManager`):
the first connection that finds its controller gone or not active moves everyone to the next,
and they go round until one answers.  The log is replicated, so the metadata offsets the broker
fetched from one controller are the same records on the next.  (Kafka's provider learns the
leader from the quorum itself, as an observer of the Raft log; ours tries them in turn.)
"""

from __future__ import annotations

import threading

from kafkacore import errors


def parse_bootstrap_servers(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]``; ``ConfigError`` on anything else."""
    addresses = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise errors.ConfigError("controller.quorum.bootstrap.servers: expected host:port, "
                                     f"got {item!r}")
        addresses.append((host, int(port)))
    if not addresses:
        raise errors.ConfigError("controller.quorum.bootstrap.servers: no controller given")
    return addresses


class RaftControllerNodeProvider:
    """The controllers a broker knows and the one it believes active (thread-safe)."""

    def __init__(self, addresses: list[tuple[str, int]]) -> None:
        if not addresses:
            raise ValueError("no controller to talk to")
        self.addresses = list(addresses)
        self._lock = threading.Lock()  # lock order: leaf
        self._position = 0

    def current(self) -> tuple[int, tuple[str, int]]:
        """(the position, the address of the controller believed active)."""
        with self._lock:
            return self._position, self.addresses[self._position % len(self.addresses)]

    def failed(self, position: int) -> None:
        """The controller at ``position`` is gone or not active: move to the next one (unless
        another connection already moved)."""
        with self._lock:
            if position == self._position:
                self._position += 1
