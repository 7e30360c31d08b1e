"""NetworkClient: Java's ``NetworkClient`` and ``Selector`` in one readable Python class.

The Sender thread owns the client: every method except :meth:`NetworkClient.wakeup` must be
called from that one thread (it is not locked).  ``wakeup`` may be called from any thread; it
interrupts a ``poll`` that is blocked waiting for I/O.

Times are milliseconds on the monotonic clock: pass ``now_ms=clock_ms()`` (or leave ``now_ms``
out and the client reads the clock itself).

SKELETON: the public API below is stable; the bodies are being written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkacore.errors import KafkaError


def clock_ms() -> int:
    """Milliseconds on the monotonic clock: the time base of every ``now_ms`` argument."""
    return int(time.monotonic() * 1000)


@dataclass
class ClientResponse:
    """What a request's callback receives: a decoded response body, or the reason there is none.

    Exactly one of ``body`` and ``error`` is set, except for a request sent with
    ``expect_response=False`` (acks=0 produce), which completes with both ``None`` once its bytes
    are written.
    """

    #: The request's API key (:class:`kafkacore.protocol.ApiKey`).
    api_key: int
    #: The version the request was encoded with (negotiated with the broker).
    api_version: int
    #: The request header's correlation id.
    correlation_id: int
    #: The broker the request went to.
    node_id: int
    #: The decoded response, a dict with snake_case field names (``None`` on error).
    body: dict[str, Any] | None = None
    #: Why there is no response: a :class:`~kafkacore.network.errors.DisconnectError` (the
    #: connection closed or failed before the response arrived), a
    #: :class:`~kafkacore.network.errors.RequestTimeoutError` (no response within
    #: ``request.timeout.ms``; the connection was closed), or
    #: :class:`kafkacore.errors.UnsupportedVersionError` (the broker supports none of our versions).
    error: KafkaError | None = None
    #: Milliseconds from ``send`` to completion.
    latency_ms: int = 0
    #: The request body that was sent (so a callback can tell which batches it carried).
    request_body: dict[str, Any] | None = None

    @property
    def was_disconnected(self) -> bool:
        """True if the connection closed (or timed out) before the response arrived."""
        raise NotImplementedError

    @property
    def was_timed_out(self) -> bool:
        """True if the request was failed by ``request.timeout.ms``."""
        raise NotImplementedError


#: The signature of a request callback.
Callback = Callable[[ClientResponse], None]


class NetworkClient:
    """Connections to every broker, requests in flight, and metadata refresh.

    :param bootstrap_servers: ``"host:port,host:port"`` or a list of ``"host:port"``; used until
        the first metadata response names the real brokers.
    :param metadata: the :class:`kafkacore.metadata.Metadata` this client keeps up to date (it
        sends a MetadataRequest whenever ``metadata.time_to_next_update`` says so).
    :param client_id: ``client.id``, sent in every request header.
    :param request_timeout_ms: ``request.timeout.ms``: a request without a response after this
        long fails, and its connection is closed (responses arrive in order on a connection, so
        the ones behind it are lost too).
    :param reconnect_backoff_ms: ``reconnect.backoff.ms``: wait this long before reconnecting
        to a node whose connection failed; doubled after each further failure ...
    :param reconnect_backoff_max_ms: ... up to ``reconnect.backoff.max.ms``, with +/-20 % jitter.
    :param socket_connection_setup_timeout_ms: ``socket.connection.setup.timeout.ms``: a TCP
        connect (plus the ApiVersions exchange) that takes longer fails.
    :param connections_max_idle_ms: ``connections.max.idle.ms``: close connections idle longer.
    :param send_buffer_bytes: ``send.buffer.bytes`` (SO_SNDBUF; -1 keeps the OS default).
    :param receive_buffer_bytes: ``receive.buffer.bytes`` (SO_RCVBUF; -1 keeps the OS default).
    :param max_in_flight_requests_per_connection: requests sent but not yet answered, per node.
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        metadata: Any,
        *,
        client_id: str = "kafkacore",
        request_timeout_ms: int = 30000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        socket_connection_setup_timeout_ms: int = 10000,
        connections_max_idle_ms: int = 540000,
        send_buffer_bytes: int = 131072,
        receive_buffer_bytes: int = 32768,
        max_in_flight_requests_per_connection: int = 5,
    ) -> None:
        raise NotImplementedError

    # -- connection state ---------------------------------------------------------------------

    def ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """True if a request can be sent to ``node_id`` now; if not connected, start connecting.

        Ready means: connected, ApiVersions negotiated, and fewer than
        ``max_in_flight_requests_per_connection`` requests in flight.  Like Java's ``ready``, a
        ``False`` answer for a disconnected node starts a connection attempt (unless the node is
        in reconnect backoff), which later ``poll`` calls complete.
        """
        raise NotImplementedError

    def is_ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """Like :meth:`ready` without starting a connection."""
        raise NotImplementedError

    def connection_delay(self, node_id: int, now_ms: int | None = None) -> int:
        """Milliseconds before it is worth checking ``node_id`` again.

        0 for a disconnected node out of backoff; the remaining backoff for a node in backoff;
        the remaining connection-setup time for a node being connected; a large number (the
        request timeout) for a connected node (whose readiness changes only through I/O, which
        wakes ``poll``).
        """
        raise NotImplementedError

    def connection_failed(self, node_id: int) -> bool:
        """True if the last connection attempt to ``node_id`` failed (it is in backoff)."""
        raise NotImplementedError

    def disconnect(self, node_id: int) -> None:
        """Close the connection to ``node_id``; its in-flight requests fail with a disconnect."""
        raise NotImplementedError

    # -- requests ---------------------------------------------------------------------------

    def send(
        self,
        node_id: int,
        api_key: int,
        body: dict[str, Any],
        *,
        callback: Callback | None = None,
        expect_response: bool = True,
        api_version: int | None = None,
        now_ms: int | None = None,
    ) -> int:
        """Queue a request for ``node_id``; returns its correlation id.  The bytes go out in ``poll``.

        The caller must have seen :meth:`ready` return True for the node (else
        :class:`~kafkacore.errors.IllegalStateError`).  The client encodes ``body`` with the
        highest version both sides support (or ``api_version`` if given, which must be in the
        negotiated range).  A Produce body's ``records`` are sent as they are (bytes or
        memoryview), never copied.

        ``callback(response)`` runs inside a later ``poll`` (on the poll thread), exactly once:
        with the decoded response, or with an error (disconnect, request timeout).  With
        ``expect_response=False`` (acks=0 produce) it runs as soon as the request is written.
        """
        raise NotImplementedError

    def poll(self, timeout_ms: int, now_ms: int | None = None) -> list[ClientResponse]:
        """Do the I/O: connect, write, read, time out; run callbacks; refresh metadata.

        Blocks at most ``timeout_ms`` (less if metadata is due or a request times out sooner)
        waiting for sockets to become readable/writable or for :meth:`wakeup`.  Returns the
        responses completed in this call (their callbacks have already run).
        """
        raise NotImplementedError

    def wakeup(self) -> None:
        """Interrupt a blocked :meth:`poll` (safe from any thread)."""
        raise NotImplementedError

    # -- questions --------------------------------------------------------------------------

    def least_loaded_node(self, now_ms: int | None = None) -> int | None:
        """The node with the fewest in-flight requests that we can (or could soon) talk to.

        Prefers a ready node with no requests in flight, then any ready or connecting node with
        the fewest, then a disconnected node out of backoff (it will be connected); ``None`` if
        every known node is in backoff.  Used for metadata requests.
        """
        raise NotImplementedError

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests sent and not yet answered, to ``node_id`` or to all nodes."""
        raise NotImplementedError

    def has_in_flight_requests(self, node_id: int | None = None) -> bool:
        """``in_flight_request_count(node_id) > 0``."""
        raise NotImplementedError

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The version of ``api_key`` we use with ``node_id`` (``None`` until negotiated, or if
        the broker supports none of our versions)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close every connection (in-flight requests fail with a disconnect) and the wakeup pipe."""
        raise NotImplementedError
