"""``ForwardingManager``: the requests a broker passes on to the controller.

CreateTopics and DeleteTopics from clients, and the broker's own topic creations (auto-created
topics, the offsets topic), go to the controller as they came; Kafka wraps them in an Envelope.
See docs/broker/replication.rst.

With a quorum of controllers, a request sent while the active controller changes finds a dead
connection or one that is not active (see
:class:`~kafkacore.broker.server.node_to_controller_channel_manager.NodeToControllerChannelManager`):
it is sent again to the next, for up to ``FORWARD_RETRY_S``.
"""

from __future__ import annotations

import time
from typing import Any

from kafkacore.broker.metadata.metadata_loader import MetadataLoader
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient

#: how long a forwarded request goes round the controllers before the client is told
#: NOT_CONTROLLER (a failover elects a new active controller within a few seconds)
FORWARD_RETRY_S = 10.0
#: the pause between two rounds
FORWARD_BACKOFF_S = 0.1


class ForwardingManager:
    """Sends over ``channel``, the connection to the controller, then refreshes the image."""

    def __init__(self, channel: InterBrokerClient, metadata_loader: MetadataLoader) -> None:
        self.channel = channel
        self.metadata_loader = metadata_loader

    def forward(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send a client's request to the controller as it came (Kafka forwards it in an
        Envelope), then refresh the image so this broker answers with the result at once."""
        deadline = time.monotonic() + FORWARD_RETRY_S
        controllers = getattr(self.channel, "provider", None)
        while True:
            try:
                response = self.channel.send(api_key, version, body)
                break
            except OSError:
                # One controller: as before, the caller answers NOT_CONTROLLER at once.
                if controllers is None or len(controllers.addresses) <= 1 \
                        or time.monotonic() + FORWARD_BACKOFF_S > deadline:
                    raise
                time.sleep(FORWARD_BACKOFF_S)
        try:
            self.metadata_loader.pull_metadata()
        except OSError:
            if controllers is None or len(controllers.addresses) <= 1:
                raise
            # Done on the active controller; the loader's own turn brings the image soon.
        return response
