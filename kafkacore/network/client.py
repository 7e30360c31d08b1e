"""NetworkClient: Java's ``NetworkClient`` and ``Selector`` in one readable Python class.

The Sender thread owns the client: every method except :meth:`NetworkClient.wakeup` must be
called from that one thread (it is not locked).  ``wakeup`` may be called from any thread; it
interrupts a ``poll`` that is blocked waiting for I/O.

Times are milliseconds on the monotonic clock: pass ``now_ms=clock_ms()`` (or leave ``now_ms``
out and the client reads the clock itself).
"""

from __future__ import annotations

import logging
import math
import random
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kafkacore
from kafkacore import errors
from kafkacore.errors import KafkaError
from kafkacore.network.connection import (
    SETTING_UP,
    BrokerConnection,
    ConnectionState,
    InFlightRequest,
)
from kafkacore.network.errors import (
    ConnectionSetupTimeoutError,
    DisconnectError,
    RequestTimeoutError,
    SecurityProtocolMismatchError,
    SslAuthenticationError,
)
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey

#: Connections to one address that ended as a listener of another security.protocol ends
#: them, the last of them a probe that asked the listener, before the client says so.
WRONG_TURNS = 3

#: Requests the connection itself sends while it is set up (answered by the connection).
_SETUP_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
#: Set-up states with no request in flight: socket.connection.setup.timeout.ms bounds them.
_BEFORE_REQUESTS = frozenset({ConnectionState.CONNECTING, ConnectionState.HANDSHAKING})

log = logging.getLogger(__name__)

#: A "much later" delay for things that only I/O can change (bounded, unlike Java's MAX_VALUE).
_LATER_MS = 2**31 - 1

#: At most one "no bootstrap server is reachable" warning per this many seconds.
UNREACHABLE_WARNING_INTERVAL_S = 30.0


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

    #: The request's API key (:class:`kafkacore.protocol.api_keys.ApiKey`).
    api_key: int
    #: The version the request was encoded with (negotiated with the broker).
    api_version: int
    #: The request header's correlation id.
    correlation_id: int
    #: The broker the request went to.
    node_id: int
    #: The decoded response, a dict with snake_case field names (``None`` on error).
    body: dict[str, Any] | None = None
    #: The reason there is no response, a :class:`~kafkacore.network.errors.DisconnectError` (the
    #: connection closed or failed before the response arrived), a
    #: :class:`~kafkacore.network.errors.RequestTimeoutError` (no response within
    #: ``request.timeout.ms``; the connection was closed), or
    #: ``kafkacore.errors.UnsupportedVersionError`` (the broker supports none of our versions).
    error: KafkaError | None = None
    #: Milliseconds from ``send`` to completion.
    latency_ms: int = 0
    #: The request body that was sent (so a callback can tell which batches it carried).
    request_body: dict[str, Any] | None = None

    def response_body(self) -> dict[str, Any]:
        """The decoded response, or its ``error`` raised (Kafka's
        ``ClientResponse.responseBody``).  Neither (an acks=0 produce) is
        :class:`~kafkacore.errors.IllegalStateError`: such a request has no response to read."""
        if self.error is not None:
            raise self.error
        if self.body is None:
            raise errors.IllegalStateError(
                f"{ApiKey(self.api_key).name} v{self.api_version} (correlation id "
                f"{self.correlation_id}) was sent expecting no response: it has no body")
        return self.body

    @property
    def was_disconnected(self) -> bool:
        """True if the connection closed (or timed out) before the response arrived."""
        return isinstance(self.error, (DisconnectError, RequestTimeoutError))

    @property
    def was_timed_out(self) -> bool:
        """True if the request was failed by ``request.timeout.ms``."""
        return isinstance(self.error, RequestTimeoutError)


#: The signature of a request callback.
Callback = Callable[[ClientResponse], None]


class _NodeState:
    """Java's ``ClusterConnectionStates`` entry: reconnect backoff for one node."""

    __slots__ = ("failures", "last_attempt_ms", "backoff_ms", "failed")

    def __init__(self) -> None:
        self.failures = 0  # connection failures/disconnects since the last successful connect
        self.last_attempt_ms = 0  # when we last started connecting or got disconnected
        self.backoff_ms = 0  # current wait before the next attempt
        self.failed = False  # True if the last attempt failed (not a clean close)


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
        connect that takes longer fails.
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
        ssl_context: ssl.SSLContext | None = None,
        sasl_mechanism: Callable[[], SaslMechanism] | None = None,
    ) -> None:
        for name, value, low in (
            ("request_timeout_ms", request_timeout_ms, 0),
            ("reconnect_backoff_ms", reconnect_backoff_ms, 0),
            ("reconnect_backoff_max_ms", reconnect_backoff_max_ms, 0),
            ("socket_connection_setup_timeout_ms", socket_connection_setup_timeout_ms, 1),
            ("connections_max_idle_ms", connections_max_idle_ms, 1),
            ("send_buffer_bytes", send_buffer_bytes, -1),
            ("receive_buffer_bytes", receive_buffer_bytes, -1),
            ("max_in_flight_requests_per_connection", max_in_flight_requests_per_connection, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.metadata = metadata
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = max(reconnect_backoff_max_ms, reconnect_backoff_ms)
        self.socket_connection_setup_timeout_ms = socket_connection_setup_timeout_ms
        self.connections_max_idle_ms = connections_max_idle_ms
        self.send_buffer_bytes = send_buffer_bytes
        self.receive_buffer_bytes = receive_buffer_bytes
        self.max_in_flight = max_in_flight_requests_per_connection
        self.ssl_context = ssl_context
        self.sasl_mechanism = sasl_mechanism
        #: The last TLS or SASL refusal (fatal: not retried); cleared by a good connection.
        self.authentication_error: KafkaError | None = None

        self.bootstrap_addresses = parse_bootstrap_servers(bootstrap_servers)
        if not metadata.fetch().nodes:
            metadata.bootstrap(self.bootstrap_addresses)
        # Why each address we could not reach failed last ("host:port" -> reason); an address
        # leaves when a connection to it comes up.  Read by metadata timeouts' messages.
        self._unreachable: dict[str, str] = {}
        self._last_unreachable_warning = -math.inf
        metadata.connection_report = self.connection_report

        self._selector = selectors.DefaultSelector()
        # The wakeup pipe: another thread writes a byte, the selector wakes up.
        self._wake_r, self._wake_w = socket.socketpair()
        # A byte is in the pipe and poll() has not drained it yet (set by any thread; a plain
        # bool under the GIL: a stale read costs one redundant byte, never a lost wakeup).
        self._wakeup_pending = False
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)

        self._connections: dict[int, BrokerConnection] = {}
        self._node_states: dict[int, _NodeState] = {}
        # Every address we have seen for a node id (bootstrap ids stay reachable after the
        # first metadata response replaces them).
        self._addresses: dict[int, tuple[str, int]] = {}
        self._seen_cluster: Any = None
        self._correlation_id = 0
        # Completions produced outside poll (send to an unsupported version): run in next poll.
        self._pending: list[tuple[InFlightRequest, ClientResponse]] = []
        self._metadata_in_flight = False
        # The Metadata request version our in-flight MetadataRequest answers.
        self._metadata_request_version: int | None = None
        self._closed = False
        #: SO_KEEPALIVE on new connections (librdkafka's socket.keepalive.enable).
        self.socket_keepalive = False
        #: Called (node id, "host:port", ms) for each response a broker throttled.
        self.throttle_listener: Callable[[int, str, int], None] | None = None
        # "host:port" -> ("TLS" or "SASL", how many connections in a row ended as such a
        # listener ends a client that does not speak it; see _wrong_turn); reset by an
        # answer past the set-up, or a probe that found nothing.
        self._wrong_turns: dict[str, tuple[str, int]] = {}
        # Addresses whose wrong turn was logged (once per address: not on every reconnect).
        self._wrong_turns_logged: set[str] = set()

    # -- connection state ---------------------------------------------------------------------

    def ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """True if a request can be sent to ``node_id`` now; if not connected, start connecting.

        Ready means: connected, ApiVersions negotiated, the previous request completely written,
        and fewer than ``max_in_flight_requests_per_connection`` requests in flight.  Like Java's ``ready``, a
        ``False`` answer for a disconnected node starts a connection attempt (unless the node is
        in reconnect backoff), which later ``poll`` calls complete.
        """
        now_ms = _now(now_ms)
        if self.is_ready(node_id, now_ms):
            return True
        if self._can_connect(node_id, now_ms):
            self._initiate_connect(node_id, now_ms)
        return False

    def is_ready(self, node_id: int, now_ms: int | None = None) -> bool:
        """Like :meth:`ready` without starting a connection.

        As in Java, a node is not ready while a metadata refresh is due and not yet sent: the
        refresh goes first (it may say this node no longer leads what we want to send it).
        """
        now_ms = _now(now_ms)
        if not self._metadata_in_flight and self.metadata.time_to_next_update(now_ms) == 0:
            return False
        return self._can_send_request(node_id)

    def _can_send_request(self, node_id: int) -> bool:
        # Java's InFlightRequests.canSendMore: room for one more request, and the previous one
        # completely written.  One request at a time in the send queue is the back-pressure: a
        # broker that reads slowly makes ready() false instead of letting the queue grow.
        conn = self._connections.get(node_id)
        return (
            conn is not None
            and conn.state is ConnectionState.READY
            and not conn.has_queued_sends
            and len(conn.in_flight) < self.max_in_flight
        )

    def connection_delay(self, node_id: int, now_ms: int | None = None) -> int:
        """Milliseconds before it is worth checking ``node_id`` again.

        0 for a disconnected node out of backoff; the remaining backoff for a node in backoff;
        the remaining connection-setup time for a node being connected; a large number (the
        request timeout) for a connected node (whose readiness changes only through I/O, which
        wakes ``poll``).
        """
        now_ms = _now(now_ms)
        conn = self._connections.get(node_id)
        if conn is None or conn.state is ConnectionState.DISCONNECTED:
            st = self._node_states.get(node_id)
            if st is None:
                return 0
            return max(st.last_attempt_ms + st.backoff_ms - now_ms, 0)
        if conn.state in _BEFORE_REQUESTS:
            return max(
                conn.connect_started_ms + self.socket_connection_setup_timeout_ms - now_ms, 0
            )
        return self.request_timeout_ms

    def connection_failed(self, node_id: int) -> bool:
        """True if the last connection attempt to ``node_id`` failed (it is in backoff)."""
        conn = self._connections.get(node_id)
        st = self._node_states.get(node_id)
        return (conn is None or conn.state is ConnectionState.DISCONNECTED) and bool(
            st and st.failed
        )

    def is_connecting(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.state in SETTING_UP

    def disconnect(self, node_id: int) -> None:
        """Close the connection to ``node_id``; its in-flight requests fail with a disconnect."""
        conn = self._connections.get(node_id)
        if conn is None or conn.state is ConnectionState.DISCONNECTED:
            return
        completed: list[tuple[InFlightRequest, ClientResponse]] = []
        self._close_connection(
            conn,
            DisconnectError(f"disconnected from node {node_id}"),
            _now(None),
            completed,
            failed=False,
        )
        self._pending.extend(completed)

    def _can_connect(self, node_id: int, now_ms: int) -> bool:
        conn = self._connections.get(node_id)
        if conn is not None and conn.state is not ConnectionState.DISCONNECTED:
            return False
        if self._address(node_id) is None:
            return False
        st = self._node_states.get(node_id)
        return st is None or now_ms - st.last_attempt_ms >= st.backoff_ms

    def _address(self, node_id: int) -> tuple[str, int] | None:
        self._refresh_addresses()
        return self._addresses.get(node_id)

    def _refresh_addresses(self) -> None:
        cluster = self.metadata.fetch()
        if cluster is not self._seen_cluster:
            self._seen_cluster = cluster
            for node in cluster.nodes:
                self._addresses[node.node_id] = (node.host, node.port)

    def _initiate_connect(self, node_id: int, now_ms: int) -> None:
        host, port = self._addresses[node_id]
        conn = self._connections.get(node_id)
        if conn is None or (conn.host, conn.port) != (host, port):
            conn = BrokerConnection(
                node_id,
                host,
                port,
                client_id=self.client_id,
                send_buffer_bytes=self.send_buffer_bytes,
                receive_buffer_bytes=self.receive_buffer_bytes,
                client_software_name="kafkacore",
                client_software_version=kafkacore.__version__,
                next_correlation_id=self._next_correlation_id,
                ssl_context=self.ssl_context,
                sasl_mechanism=self.sasl_mechanism,
                keepalive=self.socket_keepalive,
            )
            self._connections[node_id] = conn
        suspicion = self._wrong_turns.get(f"{host}:{port}")
        conn.probe = suspicion[0] if suspicion and suspicion[1] >= WRONG_TURNS - 1 else None
        st = self._node_states.setdefault(node_id, _NodeState())
        st.last_attempt_ms = now_ms
        log.debug("connecting to node %s at %s:%s%s", node_id, host, port,
                  f" (a {conn.probe} probe)" if conn.probe else "")
        try:
            conn.connect(now_ms)
        except OSError as exc:
            # Refused at once, or a name that does not resolve: a failed attempt, back off.
            log.debug("connection to node %s failed: %s", node_id, exc)
            self._note_failure(node_id, now_ms)
            self._unreachable_address(host, port, exc)
            return
        self._selector.register(conn.sock, conn.interest(), conn)

    def _unreachable_address(self, host: str, port: int, exc: BaseException) -> None:
        """Remember why ``host:port`` could not be reached; warn (at most once every
        UNREACHABLE_WARNING_INTERVAL_S) when that leaves no bootstrap server reachable."""
        self._unreachable[f"{host}:{port}"] = f"{type(exc).__name__}: {exc}"
        if any(c.state not in _BEFORE_REQUESTS and c.sock is not None
               for c in self._connections.values()):
            return  # some broker answers: metadata can still come
        if not all(f"{h}:{p}" in self._unreachable for h, p in self.bootstrap_addresses):
            return
        now = time.monotonic()
        if now - self._last_unreachable_warning < UNREACHABLE_WARNING_INTERVAL_S:
            return
        self._last_unreachable_warning = now
        log.warning(
            "no bootstrap server is reachable (bootstrap.servers); still trying: %s",
            self.connection_report())

    def connection_report(self) -> str:
        """The addresses we failed to reach and why, ``host:port (reason)``, ``", "``-joined;
        ``""`` when every connection we tried came up.  Safe from any thread."""
        failures = dict(self._unreachable)  # one copy: the I/O thread may be updating it
        return ", ".join(f"{address} ({reason})" for address, reason in failures.items())

    def _note_failure(self, node_id: int, now_ms: int) -> None:
        # Exponential backoff with jitter, as Java's ExponentialBackoff computes it: the exponent
        # stops growing where base * 2^exponent reaches the maximum, a random factor in
        # [0.8, 1.2] spreads clients that failed together, and the maximum is a hard cap.
        st = self._node_states.setdefault(node_id, _NodeState())
        st.last_attempt_ms = now_ms
        st.failed = True
        base = max(self.reconnect_backoff_ms, 1)
        exp_max = (
            math.log2(self.reconnect_backoff_max_ms / base)
            if self.reconnect_backoff_max_ms > base
            else 0.0
        )
        term = base * 2 ** min(st.failures, exp_max)
        st.failures += 1
        st.backoff_ms = min(int(term * random.uniform(0.8, 1.2)), self.reconnect_backoff_max_ms)
        if self.reconnect_backoff_ms == 0:
            st.backoff_ms = 0

    # -- requests ---------------------------------------------------------------------------

    def _next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return self._correlation_id

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
        return self._send(
            node_id, api_key, body, callback, expect_response, api_version, _now(now_ms), False
        )

    def _send(
        self,
        node_id: int,
        api_key: int,
        body: dict[str, Any],
        callback: Callback | None,
        expect_response: bool,
        api_version: int | None,
        now_ms: int,
        internal: bool,
    ) -> int:
        if self._closed:
            raise errors.IllegalStateError("send() on a closed NetworkClient")
        if not self._can_send_request(node_id):
            raise errors.IllegalStateError(
                f"attempt to send a request to node {node_id} which is not ready"
            )
        conn = self._connections[node_id]
        correlation_id = self._next_correlation_id()
        version_range = conn.version_range(api_key)
        if version_range is not None and api_version is None:
            api_version = version_range[1]
        request = InFlightRequest(
            node_id,
            correlation_id,
            api_key,
            api_version if api_version is not None else -1,
            body,
            callback,
            expect_response,
            now_ms,
            internal=internal,
        )
        if version_range is None or not version_range[0] <= request.api_version <= version_range[1]:
            # Java's "version mismatch": reported through the callback, like any failure.
            ours = SUPPORTED_VERSIONS.get(api_key)
            error = errors.UnsupportedVersionError(
                f"node {node_id} supports {conn.broker_versions.get(api_key)} of api {api_key}, "
                f"we support {ours}"
                + (f", {api_version} was asked for" if api_version is not None else "")
            )
            self._pending.append((request, self._response(request, now_ms, error=error)))
            return correlation_id
        conn.enqueue(request, now_ms)  # encodes: bad bodies raise TypeError/ValueError here
        self._update_interest(conn)
        return correlation_id

    def send_and_receive(
        self, node_id: int, api_key: int, body: dict[str, Any], timeout_ms: int
    ) -> ClientResponse:
        """Connect if needed, send one request and poll until it completes (Java's
        ``NetworkClientUtils.sendAndReceive``).  For tools and tests; a producer uses
        ``send`` + ``poll``.  Raises :class:`~kafkacore.errors.KafkaTimeoutError` after
        ``timeout_ms``; returns the response (which may carry an ``error``)."""
        deadline = clock_ms() + timeout_ms
        self.await_ready(node_id, timeout_ms)
        done: list[ClientResponse] = []
        self.send(node_id, api_key, body, callback=done.append)
        while not done:
            remaining = deadline - clock_ms()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(
                    f"no response from node {node_id} within {timeout_ms} ms"
                )
            self.poll(min(remaining, 100))
        return done[0]

    def await_ready(self, node_id: int, timeout_ms: int) -> None:
        """Poll until :meth:`ready` is true for ``node_id`` (Java's
        ``NetworkClientUtils.awaitReady``); raises :class:`~kafkacore.errors.KafkaTimeoutError`."""
        deadline = clock_ms() + timeout_ms
        while not self.ready(node_id):
            remaining = deadline - clock_ms()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"node {node_id} not ready after {timeout_ms} ms")
            self.poll(min(remaining, 100))

    # -- the I/O loop -------------------------------------------------------------------------

    def poll(self, timeout_ms: int, now_ms: int | None = None) -> list[ClientResponse]:
        """Do the I/O: connect, write, read, time out; run callbacks; refresh metadata.

        Blocks at most ``timeout_ms`` (less if metadata is due or a request times out sooner)
        waiting for sockets to become readable/writable or for :meth:`wakeup`.  Returns the
        responses completed in this call (their callbacks have already run).
        """
        if self._closed:
            raise errors.IllegalStateError("poll() on a closed NetworkClient")
        now_ms = _now(now_ms)
        completed: list[tuple[InFlightRequest, ClientResponse]] = self._pending
        self._pending = []

        # 1. A metadata refresh, if one is due (Java's DefaultMetadataUpdater.maybeUpdate).
        metadata_timeout = self._maybe_update_metadata(now_ms)

        # 2. Wait for I/O, but no longer than the next deadline we know of.
        wait_ms = min(max(timeout_ms, 0), metadata_timeout, self._next_deadline_ms(now_ms))
        if completed:
            wait_ms = 0  # callbacks are waiting to run: do not sleep first
        events = self._selector.select(wait_ms / 1000.0)
        now_ms = clock_ms() if wait_ms > 0 else now_ms

        # 3. The I/O itself.
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._drain_wakeup()
                continue
            self._handle_io(conn, mask, now_ms, completed)

        # 4. Deadlines: requests and connects that took too long, idle connections.
        self._handle_timeouts(now_ms, completed)

        # 5. Callbacks, in the order the requests completed.
        responses = []
        for request, response in completed:
            responses.append(response)
            if request.callback is not None:
                try:
                    request.callback(response)
                except Exception:  # a broken callback must not break the I/O loop
                    log.exception("error in the callback of %s", response)
        return responses

    def _handle_io(
        self,
        conn: BrokerConnection,
        mask: int,
        now_ms: int,
        completed: list[tuple[InFlightRequest, ClientResponse]],
    ) -> None:
        try:
            if mask & selectors.EVENT_WRITE:
                was_connecting = conn.state is ConnectionState.CONNECTING
                for request in conn.on_writable(now_ms):
                    if not request.expect_response:
                        completed.append((request, self._response(request, now_ms)))
                if was_connecting:
                    log.debug("connected to node %s", conn.node_id)
                    self._unreachable.pop(f"{conn.host}:{conn.port}", None)
            frames = []
            read = bool(mask & selectors.EVENT_READ) and conn.sock is not None
            if read:
                frames = conn.on_readable(now_ms)
        except (OSError, KafkaError) as exc:
            self._connection_broke(conn, exc, now_ms, completed)
            return
        # Every response that arrived is handled, even if the connection broke right after.
        for i, (request, frame) in enumerate(frames):
            try:
                self._handle_response(conn, request, frame, now_ms, completed)
            except (OSError, KafkaError) as exc:
                # A response we cannot use: it and the ones after it fail, and so does the
                # connection (the byte stream can no longer be trusted).
                error = self._as_disconnect(conn, exc)
                self._fail_requests([r for r, _ in frames[i:]], error, now_ms, completed)
                self._connection_broke(conn, error, now_ms, completed)
                return
        if read and conn.read_error is not None:
            self._connection_broke(conn, conn.read_error, now_ms, completed)
            return
        if conn.sock is not None:
            self._update_interest(conn)

    def _as_disconnect(self, conn: BrokerConnection, exc: BaseException) -> KafkaError:
        if isinstance(exc, (DisconnectError, errors.AuthenticationError)):
            return exc
        error = DisconnectError(f"connection to node {conn.node_id} failed: {exc}")
        error.__cause__ = exc
        return error

    def _connection_broke(
        self,
        conn: BrokerConnection,
        exc: BaseException,
        now_ms: int,
        completed: list[tuple[InFlightRequest, ClientResponse]],
    ) -> None:
        error = self._wrong_turn(conn, self._as_disconnect(conn, exc))
        if isinstance(error, errors.AuthenticationError):
            # Fatal (Java: ClusterConnectionStates.authenticationFailed): tell the metadata
            # waiters and the Sender, who fail at once instead of retrying until their timeout.
            address = f"{conn.host}:{conn.port}"
            if not isinstance(error, SecurityProtocolMismatchError):
                log.error("node %s: %s", conn.node_id, error)
            elif address not in self._wrong_turns_logged:  # once: it recurs on every retry
                self._wrong_turns_logged.add(address)
                log.error("node %s: %s", conn.node_id, error)
            self.authentication_error = error
            self.metadata.fatal_error(error)
        else:
            log.debug("node %s: %s", conn.node_id, error)
        failed = conn.state in SETTING_UP
        if isinstance(error, SecurityProtocolMismatchError):
            # The reason a wait gives; said once above already, not again as "unreachable".
            self._unreachable[f"{conn.host}:{conn.port}"] = f"{type(error).__name__}: {error}"
        elif conn.state in _BEFORE_REQUESTS or conn.state is ConnectionState.CHECKING_API_VERSIONS:
            # Not a Kafka broker that answers us yet: say why, in the reason a wait gives.
            self._unreachable_address(conn.host, conn.port, exc)
        self._close_connection(conn, error, now_ms, completed, failed=failed)

    def _wrong_turn(self, conn: BrokerConnection, error: KafkaError) -> KafkaError:
        """Count connections to one address that ended as a listener of another
        security.protocol ends them (``conn.wrong_turn()``); after WRONG_TURNS - 1 in a row,
        the next connection is a probe that asks the listener (see
        :meth:`BrokerConnection.wrong_turn`).  Only a probe's answer raises
        :class:`SecurityProtocolMismatchError`; ``error`` is returned as it is."""
        address = f"{conn.host}:{conn.port}"
        if conn.probe is not None:
            conn.probe = None
            if not isinstance(error, SecurityProtocolMismatchError):
                self._wrong_turns.pop(address, None)  # it did not answer as suspected
            return error
        kind = conn.wrong_turn()
        if kind is None:
            return error
        seen = self._wrong_turns.get(address, (kind, 0))
        count = seen[1] + 1 if seen[0] == kind else 1
        self._wrong_turns[address] = (kind, count)
        return error

    def _handle_response(
        self,
        conn: BrokerConnection,
        request: InFlightRequest,
        frame: bytes,
        now_ms: int,
        completed: list[tuple[InFlightRequest, ClientResponse]],
    ) -> None:
        if request.internal and request.api_key in _SETUP_APIS:
            if request.api_key == ApiKey.API_VERSIONS:
                conn.handle_api_versions(request, frame, now_ms)
            else:
                conn.handle_sasl(request, frame, now_ms)
            if conn.ready:
                if self.authentication_error is not None and not isinstance(
                        self.authentication_error, SecurityProtocolMismatchError):
                    self.authentication_error = None
                    self.metadata.fatal_error(None)
                st = self._node_states.setdefault(conn.node_id, _NodeState())
                st.failures, st.backoff_ms, st.failed = 0, 0, False
                log.debug("node %s ready: %s", conn.node_id, conn.api_versions)
            return
        _, body = codec.decode_response(request.api_key, request.api_version, frame)
        if self._wrong_turns:
            self._wrong_turns.pop(f"{conn.host}:{conn.port}", None)  # it answers: no wrong turn
        if isinstance(self.authentication_error, SecurityProtocolMismatchError):
            # A SASL listener answers ApiVersions too: only an answer past it clears this.
            self.authentication_error = None
            self.metadata.fatal_error(None)
        throttle_ms = body.get("throttle_time_ms") if isinstance(body, dict) else None
        if throttle_ms and self.throttle_listener is not None:
            self.throttle_listener(conn.node_id, f"{conn.host}:{conn.port}", throttle_ms)
        response = self._response(request, now_ms, body=body)
        if request.internal and request.api_key == ApiKey.METADATA:
            self._handle_metadata_response(response, now_ms)
            return
        completed.append((request, response))

    def _response(
        self,
        request: InFlightRequest,
        now_ms: int,
        *,
        body: dict[str, Any] | None = None,
        error: KafkaError | None = None,
    ) -> ClientResponse:
        return ClientResponse(
            api_key=request.api_key,
            api_version=request.api_version,
            correlation_id=request.correlation_id,
            node_id=request.node_id,
            body=body,
            error=error,
            latency_ms=max(now_ms - request.send_ms, 0),
            request_body=request.body,
        )

    def _close_connection(
        self,
        conn: BrokerConnection,
        error: KafkaError,
        now_ms: int,
        completed: list[tuple[InFlightRequest, ClientResponse]],
        *,
        failed: bool,
    ) -> None:
        if conn.sock is not None:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):  # pragma: no cover - registered whenever sock is set
                pass
        lost = conn.close(error)
        st = self._node_states.setdefault(conn.node_id, _NodeState())
        # Every disconnect counts toward the backoff (as in Java); a clean close is not a
        # "failure" for connection_failed().
        self._note_failure(conn.node_id, now_ms)
        st.failed = failed
        self._fail_requests(lost, error, now_ms, completed)
        # The leader may have moved: a broken connection, or one that cannot be made (a killed
        # leader), is a reason to refresh (Java does too).  Metadata's own backoff bounds it.
        if lost or failed:
            self.metadata.request_update()

    def _fail_requests(
        self,
        requests: list[InFlightRequest],
        error: KafkaError,
        now_ms: int,
        completed: list[tuple[InFlightRequest, ClientResponse]],
    ) -> None:
        """Complete each request with ``error`` (the client's own ones are handled here)."""
        for request in requests:
            if request.internal:
                if request.api_key == ApiKey.METADATA:
                    self._metadata_in_flight = False
                    self.metadata.failed_update(now_ms)
                continue
            completed.append((request, self._response(request, now_ms, error=error)))

    def _update_interest(self, conn: BrokerConnection) -> None:
        if conn.sock is None:
            return
        events = conn.interest()
        key = self._selector.get_key(conn.sock)
        if key.events != events:
            self._selector.modify(conn.sock, events, conn)

    def _next_deadline_ms(self, now_ms: int) -> int:
        """Milliseconds until the earliest request timeout or connection-setup timeout."""
        deadline = _LATER_MS
        for conn in self._connections.values():
            if conn.state in _BEFORE_REQUESTS:
                deadline = min(
                    deadline,
                    conn.connect_started_ms + self.socket_connection_setup_timeout_ms - now_ms,
                )
            oldest = conn.oldest_request_ms()
            if oldest is not None:
                deadline = min(deadline, oldest + self.request_timeout_ms - now_ms)
        return max(deadline, 0)

    def _handle_timeouts(
        self, now_ms: int, completed: list[tuple[InFlightRequest, ClientResponse]]
    ) -> None:
        for conn in list(self._connections.values()):
            if conn.state is ConnectionState.DISCONNECTED:
                continue
            if conn.reauthenticate_at_ms and conn.maybe_reauthenticate(now_ms):
                log.debug("node %s: re-authenticating (KIP-368)", conn.node_id)
                self._update_interest(conn)
            if (
                conn.state in _BEFORE_REQUESTS
                and now_ms - conn.connect_started_ms >= self.socket_connection_setup_timeout_ms
            ):
                error: KafkaError = ConnectionSetupTimeoutError(
                    f"connection to node {conn.node_id} not set up within "
                    f"{self.socket_connection_setup_timeout_ms} ms"
                )
                if conn.state is ConnectionState.HANDSHAKING and conn.probe is None:
                    # TCP worked but no TLS answer came: a PLAINTEXT port waits for the rest
                    # of a "request" as large as our ClientHello's first bytes say.  Fatal.
                    error = SslAuthenticationError(
                        f"TLS to node {conn.node_id} ({conn.host}:{conn.port}): no TLS answer "
                        f"within {self.socket_connection_setup_timeout_ms} ms "
                        "(is this a PLAINTEXT port?)"
                    )
                    self._connection_broke(conn, error, now_ms, completed)
                    continue
                if conn.probe is not None:  # a probe without an answer found nothing
                    self._wrong_turn(conn, error)
                self._close_connection(conn, error, now_ms, completed, failed=True)
            elif (oldest := conn.oldest_request_ms()) is not None and (
                now_ms - oldest >= self.request_timeout_ms
            ):
                # The oldest request waited too long (for its response or, acks=0, to be
                # written).  Responses come in order, so we cannot give up on it alone: the
                # connection goes, and everything in flight on it.
                error = RequestTimeoutError(
                    f"no response from node {conn.node_id} within {self.request_timeout_ms} ms "
                    f"(request.timeout.ms); disconnecting"
                )
                failed = conn.state is not ConnectionState.READY
                self._close_connection(conn, error, now_ms, completed, failed=failed)
            elif (
                not conn.in_flight
                and not conn.has_queued_sends
                and now_ms - conn.last_activity_ms >= self.connections_max_idle_ms
            ):
                log.debug("closing idle connection to node %s", conn.node_id)
                self._close_connection(
                    conn,
                    DisconnectError("idle connection closed"),
                    now_ms,
                    completed,
                    failed=False,
                )
                st = self._node_states[conn.node_id]
                st.failures, st.backoff_ms = 0, 0  # idle close: reconnect freely

    # -- metadata -----------------------------------------------------------------------------

    def _maybe_update_metadata(self, now_ms: int) -> int:
        """Send a MetadataRequest if one is due; returns ms until it is worth checking again."""
        time_to_next = self.metadata.time_to_next_update(now_ms)
        wait_for_in_flight = self.request_timeout_ms if self._metadata_in_flight else 0
        delay = max(time_to_next, wait_for_in_flight)
        if delay > 0:
            return delay
        node_id = self.least_loaded_node(now_ms)
        if node_id is None:
            log.debug("no node available for a metadata request")
            return self.reconnect_backoff_ms
        if self._can_send_request(node_id):
            body, request_version = self.metadata.new_metadata_request(now_ms)
            conn = self._connections[node_id]
            version = conn.api_versions.get(ApiKey.METADATA)
            if version is None:
                self.metadata.failed_update(now_ms)
                return self.reconnect_backoff_ms
            if version < 1 and body["topics"] is not None and not body["topics"]:
                # v0 reads an empty list as "all topics"; we want none.
                self.metadata.failed_update(now_ms)
                return self.reconnect_backoff_ms
            self._metadata_request_version = request_version
            self._metadata_in_flight = True
            self._send(node_id, ApiKey.METADATA, body, None, True, None, now_ms, True)
            return self.request_timeout_ms
        if self._any_node_connecting():
            return self.reconnect_backoff_ms
        if self._can_connect(node_id, now_ms):
            self._initiate_connect(node_id, now_ms)
            return self.reconnect_backoff_ms
        return self.connection_delay(node_id, now_ms) or self.reconnect_backoff_ms

    def _handle_metadata_response(self, response: ClientResponse, now_ms: int) -> None:
        self._metadata_in_flight = False
        body = response.response_body()  # decoded a moment ago: no error, a body
        try:
            self.metadata.update(body, now_ms, request_version=self._metadata_request_version)
        except errors.IllegalStateError:  # metadata closed while the request was in flight
            pass

    def _any_node_connecting(self) -> bool:
        return any(c.state in SETTING_UP for c in self._connections.values())

    # -- questions --------------------------------------------------------------------------

    def least_loaded_node(self, now_ms: int | None = None) -> int | None:
        """The node with the fewest in-flight requests that we can (or could soon) talk to.

        Prefers a ready node with no requests in flight, then any ready or connecting node with
        the fewest, then a disconnected node out of backoff (it will be connected); ``None`` if
        every known node is in backoff.  Used for metadata requests.
        """
        now_ms = _now(now_ms)
        nodes = [n.node_id for n in self.metadata.fetch().nodes]
        if not nodes:
            return None
        offset = random.randrange(len(nodes))  # spread the load over equally good nodes
        best, best_in_flight = None, None
        connecting = None
        can_connect = None
        for i in range(len(nodes)):
            node_id = nodes[(offset + i) % len(nodes)]
            conn = self._connections.get(node_id)
            in_flight = len(conn.in_flight) if conn is not None else 0
            if self._can_send_request(node_id):
                if in_flight == 0:
                    return node_id
                if best_in_flight is None or in_flight < best_in_flight:
                    best, best_in_flight = node_id, in_flight
            elif conn is not None and conn.state in SETTING_UP:
                connecting = node_id
            elif can_connect is None and self._can_connect(node_id, now_ms):
                can_connect = node_id
        if best is not None:
            return best
        if connecting is not None:
            return connecting
        return can_connect

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests sent and not yet answered, to ``node_id`` or to all nodes."""
        if node_id is not None:
            conn = self._connections.get(node_id)
            return len(conn.in_flight) if conn is not None else 0
        # A copy: another thread (a metrics reader) may count while the I/O thread connects.
        return sum(len(c.in_flight) for c in list(self._connections.values()))

    def has_in_flight_requests(self, node_id: int | None = None) -> bool:
        """``in_flight_request_count(node_id) > 0``."""
        return self.in_flight_request_count(node_id) > 0

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The version of ``api_key`` we use with ``node_id`` (``None`` until negotiated, or if
        the broker supports none of our versions)."""
        conn = self._connections.get(node_id)
        if conn is None or not conn.ready:
            return None
        return conn.api_versions.get(api_key)

    def finalized_feature(self, node_id: int, name: str) -> int:
        """The level ``node_id`` says the cluster finalized for feature ``name`` (0 if none,
        or not known yet)."""
        conn = self._connections.get(node_id)
        return conn.finalized_features.get(name, 0) if conn is not None else 0

    def broker_api_versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        """What ``node_id`` said it supports in ApiVersions: api key -> (min, max)."""
        conn = self._connections.get(node_id)
        return dict(conn.broker_versions) if conn is not None else {}

    # -- waking and closing -----------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt a blocked :meth:`poll` (safe from any thread).

        Wakeups are coalesced, as Java's ``Selector.wakeup`` does: while one is pending (written
        and not yet drained by ``poll``), another costs a flag check, not a system call.  A
        producer sending fast calls this for nearly every record while batches queue up.
        """
        if self._wakeup_pending:
            return
        self._wakeup_pending = True
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # the pipe is full: a wakeup is pending anyway
        except OSError:
            pass  # closed: nothing to wake

    def _drain_wakeup(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        # Clear the flag only after draining.  Cleared before, a wakeup landing between the two
        # would set it, its byte would be drained here, and every later wakeup would be skipped
        # with no byte in the pipe: a lost wakeup.  Cleared after, a wakeup skipped while we
        # drain is not lost: this poll is already awake and the Sender's loop looks again.
        self._wakeup_pending = False

    def close(self) -> None:
        """Close every connection (in-flight requests fail with a disconnect) and the wakeup pipe.

        The callbacks of the failed requests run here, on the calling thread.
        """
        if self._closed:
            return
        completed: list[tuple[InFlightRequest, ClientResponse]] = self._pending
        self._pending = []
        now_ms = clock_ms()
        for conn in list(self._connections.values()):
            if conn.state is not ConnectionState.DISCONNECTED:
                self._close_connection(
                    conn, DisconnectError("client closed"), now_ms, completed, failed=False
                )
        self._closed = True
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        for request, response in completed:
            if request.callback is not None:
                try:
                    request.callback(response)
                except Exception:
                    log.exception("error in the callback of %s", response)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> NetworkClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_bootstrap_servers(servers: str | list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """``"a:9092,b:9092"`` (or a list of ``"host:port"``) -> ``[("a", 9092), ("b", 9092)]``."""
    if isinstance(servers, str):
        items = [s.strip() for s in servers.split(",")]
    elif isinstance(servers, (list, tuple)):
        items = [str(s).strip() for s in servers]
    else:
        raise TypeError(f"bootstrap servers must be a str or a list, got {type(servers).__name__}")
    out = []
    for item in items:
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise errors.ConfigError(f"bad bootstrap server {item!r}: expected host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise errors.ConfigError("bootstrap servers: no address given")
    return out


def _now(now_ms: int | None) -> int:
    return clock_ms() if now_ms is None else now_ms
