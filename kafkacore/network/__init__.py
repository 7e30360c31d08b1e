"""Connections to brokers: framing, requests in flight, version negotiation, the I/O loop."""

from kafkacore.network.client import ClientResponse, NetworkClient, clock_ms

__all__ = ["ClientResponse", "NetworkClient", "clock_ms"]
