"""``NodeToControllerChannelManager``: a broker's connection to the active controller.

An :class:`~kafkacore.broker.server_common.inter_broker_client.InterBrokerClient` whose address
is the one the shared
:class:`~kafkacore.broker.server.raft_controller_node_provider.RaftControllerNodeProvider`
names: on a dead connection, or an answer whose error code is ``NOT_CONTROLLER`` (or a
forwarded DescribeQuorum's ``NOT_LEADER_OR_FOLLOWER``: that controller is not the Raft leader,
hence not the active one), it tells the provider (which moves to the next controller) and fails the call as a connection failure
(``ConnectionError``), which every caller already retries: the lifecycle manager at its next
heartbeat, the metadata loader at its next pull, forwarding at once (Kafka's
``NodeToControllerChannelManager`` retries its queue the same way).  With one controller it
is an ``InterBrokerClient`` to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.broker.server.raft_controller_node_provider import RaftControllerNodeProvider
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol.api_keys import ApiKey


def _not_the_raft_leader(api_key: int, response: dict[str, Any]) -> bool:
    """A DescribeQuorum answered by a voter that does not lead (it names no other error)."""
    return api_key == ApiKey.DESCRIBE_QUORUM and any(
        p.get("error_code") == Errors.NOT_LEADER_OR_FOLLOWER
        for t in response.get("topics") or () for p in t.get("partitions") or ())


class NodeToControllerChannelManager(InterBrokerClient):
    def __init__(self, provider: RaftControllerNodeProvider, client_id: str,
                 timeout_s: float = 30.0, faults: Any = None,
                 sasl: Callable[[], SaslMechanism] | None = None) -> None:
        self.provider = provider
        self._position, (host, port) = provider.current()
        super().__init__(host, port, client_id, timeout_s, faults, sasl=sasl)

    def send(self, api_key: int, version: int, body: dict[str, Any],
             timeout_s: float | None = None) -> dict[str, Any]:
        position, (host, port) = self.provider.current()
        if position != self._position:
            with self._lock:  # the next exchange connects to the controller now named
                self._close_locked()
                self.host, self.port, self._position = host, port, position
        try:
            response = super().send(api_key, version, body, timeout_s)
        except OSError:
            self.provider.failed(position)
            raise
        if response.get("error_code") == Errors.NOT_CONTROLLER \
                or _not_the_raft_leader(api_key, response):
            self.provider.failed(position)
            raise ConnectionError(f"controller {host}:{port} is not the active controller")
        return response
