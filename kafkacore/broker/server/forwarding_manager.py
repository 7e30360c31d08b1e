"""``ForwardingManager``: the requests a broker passes on to the controller.

CreateTopics and DeleteTopics from clients, and the broker's own topic creations (auto-created
topics, the offsets topic), go to the controller as they came; Kafka wraps them in an Envelope.
See docs/broker/replication.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.metadata.metadata_loader import MetadataLoader
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient


class ForwardingManager:
    """Sends over ``channel``, the connection to the controller, then refreshes the image."""

    def __init__(self, channel: InterBrokerClient, metadata_loader: MetadataLoader) -> None:
        self.channel = channel
        self.metadata_loader = metadata_loader

    def forward(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send a client's request to the controller as it came (Kafka forwards it in an
        Envelope), then refresh the image so this broker answers with the result at once."""
        response = self.channel.send(api_key, version, body)
        self.metadata_loader.pull_metadata()
        return response
