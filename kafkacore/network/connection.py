"""One TCP connection to one broker: framing, the send queue, in-flight requests, ApiVersions.

This is the client's half of the conversation that Kafka's ``SocketServer`` handles on the broker's side (see the broker's reactor chapter).
There, an Acceptor hands each new socket to a Processor, which reads 4-byte size prefixes and
whole requests off it (``BoundedByteBufferReceive``) and writes responses back in order.  Here, a
:class:`BrokerConnection` writes size-prefixed requests and reads size-prefixed responses, and the
order is the contract that holds the two sides together: a broker answers the requests of one
connection in the order they arrived, so the oldest request in flight is always the one the next
response belongs to.  We check that with the correlation id; a mismatch means the byte stream is
out of step and the connection is beyond repair.

A connection knows nothing of selectors or of other connections:
:class:`~kafkacore.network.client.NetworkClient` calls :meth:`BrokerConnection.on_writable` and
:meth:`BrokerConnection.on_readable` when the selector says so, and asks :meth:`interest` which
events to wait for.
"""

from __future__ import annotations

import enum
import errno
import logging
import os
import selectors
import socket
import ssl
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore import errors
from kafkacore.errors import Errors
from kafkacore.network import sasl
from kafkacore.network.errors import (
    CorrelationIdMismatchError,
    DisconnectError,
    SecurityProtocolMismatchError,
    SslAuthenticationError,
)
from kafkacore.network.tls import describe_ssl_error
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey

log = logging.getLogger(__name__)

# The first byte of a TLS record a server sends first: an alert (21) or a handshake (22);
# the second is 3, TLS's major version.
_TLS_RECORD_TYPES = (21, 22)
_SIZE = struct.Struct(">i")
#: At most this many buffers go into one ``sendmsg`` call (Linux's IOV_MAX is 1024).
_IOV_MAX = 1024
#: A response larger than this is taken as a corrupt size prefix, not as a real response.
MAX_RESPONSE_SIZE = 512 * 1024 * 1024
#: Read at most this many bytes per ``recv`` call.
_RECV_CHUNK = 256 * 1024
#: Bytes joined per SSL write (TLS cuts them into 16 KiB records).
_TLS_CHUNK = 256 * 1024
#: Errors of ``send``/``recv`` that mean "try again later", not "broken".
_WOULD_BLOCK = (BlockingIOError, InterruptedError)


class ConnectionState(enum.Enum):
    """Java's ``ConnectionState``, plus the ApiVersions step of ``ClusterConnectionStates``."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"  # TCP connect in progress (non-blocking)
    HANDSHAKING = "handshaking"  # TLS handshake in progress (non-blocking)
    CHECKING_API_VERSIONS = "checking_api_versions"  # connected, ApiVersions in flight
    AUTHENTICATING = "authenticating"  # SaslHandshake / SaslAuthenticate in flight
    READY = "ready"  # versions negotiated (and authenticated): requests may be sent


#: The states between "connect() called" and READY.
SETTING_UP = frozenset(
    {
        ConnectionState.CONNECTING,
        ConnectionState.HANDSHAKING,
        ConnectionState.CHECKING_API_VERSIONS,
        ConnectionState.AUTHENTICATING,
    }
)


@dataclass(eq=False)
class InFlightRequest:
    """A request that was queued on a connection and has not completed yet."""

    node_id: int
    correlation_id: int
    api_key: int
    api_version: int
    body: dict[str, Any]
    callback: Callable[[Any], None] | None
    expect_response: bool
    send_ms: int
    #: Sent by the client itself (ApiVersions, Metadata): its response is handled internally.
    internal: bool = False
    #: Set when the last byte has been handed to the kernel.
    written: bool = False


@dataclass(eq=False)
class _Send:
    """The buffers of one request still to be written (front buffer possibly half written)."""

    request: InFlightRequest
    buffers: deque = field(default_factory=deque)


class BrokerConnection:
    """A non-blocking socket to one broker and everything queued or in flight on it.

    Not thread-safe: only the thread that polls the
    :class:`~kafkacore.network.client.NetworkClient` touches it.
    """

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str | None,
        send_buffer_bytes: int = 131072,
        receive_buffer_bytes: int = 32768,
        client_software_name: str = "kafkacore",
        client_software_version: str = "0",
        next_correlation_id: Callable[[], int] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        sasl_mechanism: Callable[[], sasl.SaslMechanism] | None = None,
        keepalive: bool = False,
    ) -> None:
        self.node_id = node_id
        self.keepalive = keepalive
        # What the peer did on this connection, for wrong_turn(): any byte back, and how many
        # responses (ApiVersions included).
        self._received_any = False
        self._answers = 0
        #: "TLS" or "SASL" while this connection is a probe (see wrong_turn): it asks the
        #: listener in that protocol's first words whether it speaks it; None normally.
        self.probe: str | None = None
        self.host = host
        self.port = port
        self.client_id = client_id
        self.send_buffer_bytes = send_buffer_bytes
        self.receive_buffer_bytes = receive_buffer_bytes
        self.client_software_name = client_software_name
        self.client_software_version = client_software_version
        self._next_correlation_id = next_correlation_id or _counter()
        self.state = ConnectionState.DISCONNECTED
        self.sock: socket.socket | None = None
        #: When connect() started (monotonic ms), for socket.connection.setup.timeout.ms.
        self.connect_started_ms = 0
        #: Last time bytes moved either way, for connections.max.idle.ms.
        self.last_activity_ms = 0
        #: api key -> version we use with this broker (after ApiVersions); absent = unsupported.
        self.api_versions: dict[int, int] = {}
        #: api key -> (min, max) the broker announced.
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self.finalized_features: dict[str, int] = {}
        # Requests whose bytes are not all written yet, oldest first.
        self._sends: deque[_Send] = deque()
        # Requests written (or being written) that wait for a response, oldest first.
        self.in_flight: deque[InFlightRequest] = deque()
        # Bytes received and not yet cut into frames.
        self._rbuf = bytearray()
        # Why the connection closed (for the requests failed by close()).
        self.close_error: errors.KafkaError | None = None
        # A problem found by the last on_readable(), after the responses it returned.
        self.read_error: errors.KafkaError | None = None
        # The resolved addresses of host:port, and which one the next connect() tries.
        self._resolved: list[tuple[Any, Any, int, Any]] = []
        self._next_address = 0
        #: TLS (security.protocol SSL / SASL_SSL): the context, and during the handshake which
        #: event the SSL object waits for.
        self.ssl_context = ssl_context
        self._handshake_wants = selectors.EVENT_WRITE
        #: SASL (SASL_*): a factory of fresh mechanisms, the current one, and when the broker
        #: wants us to authenticate again (KIP-368; 0: never).
        self.sasl_mechanism = sasl_mechanism
        self._sasl: sasl.SaslMechanism | None = None
        self.reauthenticate_at_ms = 0

    # -- connecting ----------------------------------------------------------------------------

    def connect(self, now_ms: int) -> None:
        """Start a non-blocking TCP connect; :meth:`on_writable` finishes it."""
        if self.state is not ConnectionState.DISCONNECTED:
            raise errors.IllegalStateError(f"connect() on a {self.state.value} connection")
        self.close_error = None
        self.read_error = None
        self._received_any = False
        self._answers = 0
        self.connect_started_ms = now_ms
        self.last_activity_ms = now_ms
        # A name may resolve to several addresses (localhost: ::1 and 127.0.0.1).  Like Java, we
        # try them in turn, one per attempt, and resolve again once all have been tried.
        if self._next_address >= len(self._resolved):
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            self._resolved = [(f, t, p, a) for f, t, p, _, a in infos]
            self._next_address = 0
        family, type_, proto, address = self._resolved[self._next_address]
        sock = socket.socket(family, type_, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.keepalive:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if self.send_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
            if self.receive_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes)
            code = sock.connect_ex(address)
        except OSError:
            sock.close()
            self._next_address += 1
            raise
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            sock.close()
            self._next_address += 1
            raise ConnectionRefusedError(code, f"connect to {address}: {os.strerror(code)}")
        self.sock = sock
        self.state = ConnectionState.CONNECTING
        if code == 0:  # connected at once (loopback can do that)
            self._connected(now_ms)

    def _connected(self, now_ms: int) -> None:
        if self.probe == "TLS" and not isinstance(self.sock, ssl.SSLSocket):
            # A ClientHello that accepts any certificate: only "does it speak TLS?" matters.
            if self.sock is None:
                raise errors.IllegalStateError(f"{self}: the connection is closed")
            self.sock = _probe_context().wrap_socket(self.sock, do_handshake_on_connect=False)
            self.state = ConnectionState.HANDSHAKING
            self._handshake(now_ms)
            return
        if self.ssl_context is not None and not isinstance(self.sock, ssl.SSLSocket):
            # TLS first: wrap the connected socket and shake hands without blocking (Java's
            # SslTransportLayer.handshake(), driven by the selector like any other I/O).
            if self.sock is None:
                raise errors.IllegalStateError(f"{self}: the connection is closed")
            self.sock = self.ssl_context.wrap_socket(
                self.sock, server_hostname=self.host, do_handshake_on_connect=False
            )
            self.state = ConnectionState.HANDSHAKING
            self._handshake(now_ms)
            return
        # The first request on every connection asks which versions the broker speaks.
        self.state = ConnectionState.CHECKING_API_VERSIONS
        self._send_api_versions(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1], now_ms)

    def _handshake(self, now_ms: int) -> None:
        if not isinstance(self.sock, ssl.SSLSocket):
            raise errors.IllegalStateError(f"{self}: no TLS socket to shake hands on")
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._handshake_wants = selectors.EVENT_READ
            return
        except ssl.SSLWantWriteError:
            self._handshake_wants = selectors.EVENT_WRITE
            return
        except ssl.SSLError as exc:
            if self.probe == "TLS":
                if "ALERT" in str(exc.reason or ""):  # it answered in TLS: a TLS listener
                    self._tls_verdict()
                raise DisconnectError(f"node {self.node_id}: no TLS here either ({exc})") from None
            raise SslAuthenticationError(
                f"TLS to node {self.node_id} ({self.host}:{self.port}): {describe_ssl_error(exc)}"
            ) from None
        except OSError as exc:
            if self.probe == "TLS":
                raise DisconnectError(f"node {self.node_id}: no TLS here either ({exc})") from None
            # The peer closed or reset during the handshake: typically a PLAINTEXT port that
            # read our ClientHello as a (far too large) request and hung up.
            raise SslAuthenticationError(
                f"TLS to node {self.node_id} ({self.host}:{self.port}): the broker closed the "
                f"connection during the TLS handshake (is this a PLAINTEXT port?): {exc}"
            ) from None
        if self.probe == "TLS":
            self._tls_verdict()
        self.last_activity_ms = now_ms
        self.state = ConnectionState.CHECKING_API_VERSIONS
        self._send_api_versions(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1], now_ms)

    def _tls_verdict(self) -> None:
        raise SecurityProtocolMismatchError(
            f"{self.host}:{self.port} closed our plaintext connections without a byte of answer "
            "and answers a TLS handshake: the listener wants security.protocol SSL (or "
            f"SASL_SSL), and this client uses {self.security_protocol}", wanted="SSL")

    def _send_api_versions(self, version: int, now_ms: int) -> None:
        body = {}
        if version >= 3:
            body = {
                "client_software_name": self.client_software_name,
                "client_software_version": self.client_software_version,
            }
        request = InFlightRequest(
            self.node_id,
            self._next_correlation_id(),
            ApiKey.API_VERSIONS,
            version,
            body,
            None,
            True,
            now_ms,
            internal=True,
        )
        self.enqueue(request, now_ms)

    # -- what to wait for ------------------------------------------------------------------------

    def interest(self) -> int:
        """The selector events this connection waits for (0 if disconnected)."""
        if self.sock is None:
            return 0
        if self.state is ConnectionState.CONNECTING:
            return selectors.EVENT_WRITE
        if self.state is ConnectionState.HANDSHAKING:
            return self._handshake_wants
        events = selectors.EVENT_READ
        if self._sends:
            events |= selectors.EVENT_WRITE
        return events

    def fileno(self) -> int:
        return self.sock.fileno() if self.sock is not None else -1

    @property
    def ready(self) -> bool:
        return self.state is ConnectionState.READY

    # -- writing ---------------------------------------------------------------------------------

    def enqueue(self, request: InFlightRequest, now_ms: int) -> None:
        """Encode ``request`` and queue its bytes; it counts as in flight from now on."""
        chunks = codec.encode_request(
            request.api_key,
            request.api_version,
            request.correlation_id,
            self.client_id,
            request.body,
        )
        size = sum(_nbytes(c) for c in chunks)
        send = _Send(request)
        send.buffers.append(_SIZE.pack(size))  # the 4-byte frame size: its own tiny buffer
        send.buffers.extend(chunks)
        self._sends.append(send)
        if request.expect_response:
            self.in_flight.append(request)

    def on_writable(self, now_ms: int) -> list[InFlightRequest]:
        """Finish a connect or write what we can; returns requests that are now fully written."""
        if self.state is ConnectionState.CONNECTING:
            if self.sock is None:
                raise errors.IllegalStateError(f"{self}: the connection is closed")
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code != 0:
                raise ConnectionRefusedError(code, f"connect to {self.host}:{self.port} failed")
            self._connected(now_ms)
        if self.state is ConnectionState.HANDSHAKING:
            self._handshake(now_ms)
            if self.state is ConnectionState.HANDSHAKING:
                return []
        return self._write(now_ms)

    def _write(self, now_ms: int) -> list[InFlightRequest]:
        # Gather buffers from the queued requests, in order, into one sendmsg call (the kernel
        # copies them into the socket's send buffer: "gather" I/O, no joining in Python), and
        # repeat until the queue is empty or the kernel takes less than we offered.
        written: list[InFlightRequest] = []
        if self.sock is None:
            raise errors.IllegalStateError(f"{self}: the connection is closed")
        if isinstance(self.sock, ssl.SSLSocket):
            return self._write_tls(now_ms, written)
        while self._sends:
            iov: list[Any] = []
            offered = 0
            for send in self._sends:
                for buf in send.buffers:
                    iov.append(buf)
                    offered += _nbytes(buf)
                    if len(iov) >= _IOV_MAX:
                        break
                if len(iov) >= _IOV_MAX:
                    break
            try:
                n = self.sock.sendmsg(iov)
            except _WOULD_BLOCK:
                break
            if n > 0:
                self.last_activity_ms = now_ms
            self._consume(n, written)
            if n < offered:
                break  # a partial write: the send buffer is full; wait for EVENT_WRITE
        return written

    def _write_tls(self, now_ms: int, written: list[InFlightRequest]) -> list[InFlightRequest]:
        # An SSL socket has no sendmsg: the buffers are joined (one copy) and then encrypted
        # into TLS records (a second copy): the price of TLS, on top of the cipher's CPU.
        if not isinstance(self.sock, ssl.SSLSocket):
            raise errors.IllegalStateError(f"{self}: TLS write on a plain socket")
        while self._sends:
            chunk = bytearray()
            for send in self._sends:
                for buf in send.buffers:
                    chunk += buf
                    if len(chunk) >= _TLS_CHUNK:
                        break
                if len(chunk) >= _TLS_CHUNK:
                    break
            try:
                n = self.sock.send(chunk)
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, *_WOULD_BLOCK):
                break
            if n > 0:
                self.last_activity_ms = now_ms
            self._consume(n, written)
            if n < len(chunk):
                break
        return written

    def _consume(self, n: int, written: list[InFlightRequest]) -> None:
        """Drop ``n`` sent bytes from the front of the queue, noting requests fully written."""
        while self._sends:
            send = self._sends[0]
            while send.buffers:
                buf = send.buffers[0]
                size = _nbytes(buf)
                if n < size:
                    if n > 0:
                        # Half written: keep the rest as a view (no copy of the remainder).
                        view = buf if isinstance(buf, memoryview) else memoryview(buf)
                        send.buffers[0] = view[n:]
                    return
                n -= size
                send.buffers.popleft()
            self._sends.popleft()
            send.request.written = True
            written.append(send.request)

    # -- reading ---------------------------------------------------------------------------------

    def on_readable(self, now_ms: int) -> list[tuple[InFlightRequest, bytes]]:
        """Read what is there; returns (request, response frame) for each complete response.

        Responses that arrived before a problem (the peer closed, a corrupt size, a correlation
        id out of step) are still returned; the problem is left in ``read_error`` for the
        caller, who closes the connection after handling them.
        """
        if self.sock is None:
            raise errors.IllegalStateError(f"{self}: the connection is closed")
        self.read_error = None
        tls = isinstance(self.sock, ssl.SSLSocket)
        if self.state is ConnectionState.HANDSHAKING:
            self._handshake(now_ms)
            if self.state is ConnectionState.HANDSHAKING:
                return []
        # TLS hands out at most one record (16 KiB) per recv: read until it wants more bytes,
        # or data would stay decrypted in the SSL object where the selector cannot see it.
        for _ in range(256 if tls else 16):  # bounded: other connections get their turn
            try:
                data = self.sock.recv(_RECV_CHUNK)
            except (*_WOULD_BLOCK, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError as exc:
                self.read_error = DisconnectError(
                    f"reading from node {self.node_id}: {exc}{self._tls_hint(tls)}")
                break
            if not data:
                self.read_error = DisconnectError(
                    f"node {self.node_id} closed the connection{self._tls_hint(tls)}")
                break
            self.last_activity_ms = now_ms
            self._received_any = True
            self._rbuf += data
            if len(data) < _RECV_CHUNK and not tls:
                break
        completed: list[tuple[InFlightRequest, bytes]] = []
        pos = 0
        buf = self._rbuf
        try:
            while len(buf) - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if (not tls and self.state is ConnectionState.CHECKING_API_VERSIONS
                        and buf[pos] in _TLS_RECORD_TYPES and buf[pos + 1] == 3):
                    # A TLS record header where the size of a small ApiVersions answer goes:
                    # no Kafka answer starts so, so this needs no second look.
                    raise SecurityProtocolMismatchError(
                        f"{self.host}:{self.port} answered ApiVersions with TLS bytes: the "
                        "listener wants security.protocol SSL (or SASL_SSL), and this client "
                        f"uses {self.security_protocol}", wanted="SSL")
                if size < 4 or size > MAX_RESPONSE_SIZE:
                    raise DisconnectError(
                        f"node {self.node_id} sent a frame of invalid size {size}"
                    )
                if len(buf) - pos - 4 < size:
                    break
                frame = bytes(buf[pos + 4 : pos + 4 + size])
                pos += 4 + size
                completed.append((self._match(frame), frame))
                self._answers += 1
        except DisconnectError as exc:
            self.read_error = exc
        if pos:
            del buf[:pos]
        return completed

    @property
    def security_protocol(self) -> str:
        """This connection's security.protocol, as Kafka names it."""
        tls = self.ssl_context is not None
        if self.sasl_mechanism is not None:
            return "SASL_SSL" if tls else "SASL_PLAINTEXT"
        return "SSL" if tls else "PLAINTEXT"

    def wrong_turn(self) -> str | None:
        """For a connection the peer just ended: "TLS" or "SASL" if it ended the way a
        listener of that kind ends a client that does not speak it; else None.

        A TLS listener hangs up on a plaintext ApiVersions without a byte of answer; a SASL
        listener answers ApiVersions and hangs up on the next request, which was not
        SaslHandshake.  A proxy in front of a dead broker, or a broker going down, can end
        connections the same way, so this is only a suspicion: the client then makes its
        next connection a probe (:attr:`probe`), and only the listener's answer to it, a TLS
        handshake or a SaslHandshake answer, is a verdict."""
        if self.sasl_mechanism is not None or self.probe is not None:
            return None  # SASL spoken (its errors say what went wrong), or a probe's end
        if (self.ssl_context is None and self.state is ConnectionState.CHECKING_API_VERSIONS
                and not self._received_any):
            return "TLS"
        if self.state is ConnectionState.READY and self._answers == 1 and self.in_flight:
            return "SASL"
        return None

    def _tls_hint(self, tls: bool) -> str:
        """For a plaintext connection dropped before ApiVersions was answered: a TLS listener
        does that to the bytes of a request it cannot read as a handshake."""
        if tls or self.state is not ConnectionState.CHECKING_API_VERSIONS:
            return ""
        return (" before answering ApiVersions (if this is a TLS listener, set "
                "security.protocol to SSL or SASL_SSL)")

    def _match(self, frame: bytes) -> InFlightRequest:
        # Responses come back in request order: the frame must answer the oldest request.
        if not self.in_flight:
            raise CorrelationIdMismatchError(
                f"node {self.node_id} sent a response with no request in flight"
            )
        request = self.in_flight[0]
        got = codec.peek_correlation_id(frame)
        if got != request.correlation_id:
            raise CorrelationIdMismatchError(
                f"node {self.node_id}: response correlation id {got} does not match the oldest "
                f"request in flight ({request.correlation_id})"
            )
        self.in_flight.popleft()
        return request

    # -- ApiVersions -----------------------------------------------------------------------------

    def handle_api_versions(self, request: InFlightRequest, frame: bytes, now_ms: int) -> None:
        """Negotiate versions from the broker's ApiVersions answer; the connection becomes READY.

        A broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION with a
        v0 body listing what it does support; like Java, we retry once with the highest version
        of ApiVersions it named.  Any other error closes the connection.
        """
        body: dict[str, Any] | None
        try:
            _, body = codec.decode_response(ApiKey.API_VERSIONS, request.api_version, frame)
        except codec.ProtocolError:
            body = None
        if body is None or body["error_code"] == Errors.UNSUPPORTED_VERSION:
            # The broker wrote its error in the v0 layout, which every broker can write.
            _, body = codec.decode_response(ApiKey.API_VERSIONS, 0, frame)
            if body["error_code"] == Errors.UNSUPPORTED_VERSION:
                theirs = {k["api_key"]: k["max_version"] for k in body["api_keys"]}
                retry = min(theirs.get(ApiKey.API_VERSIONS, 0), request.api_version - 1)
                if request.api_version > 0 and retry >= 0:
                    log.debug(
                        "node %s: ApiVersions v%s unsupported, retrying with v%s",
                        self.node_id,
                        request.api_version,
                        retry,
                    )
                    self._send_api_versions(retry, now_ms)
                    return
        if body["error_code"]:
            raise errors.for_code(body["error_code"])(f"ApiVersions to node {self.node_id} failed")
        self.broker_versions = {
            k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]
        }
        # KIP-584: the feature levels the cluster has finalized (transaction.version, ...).
        self.finalized_features = {
            f["name"]: f["max_version_level"] for f in body.get("finalized_features") or ()
        }
        self.api_versions = {}
        for key, (ours_low, ours_high) in SUPPORTED_VERSIONS.items():
            theirs = self.broker_versions.get(key)
            if theirs is None:
                continue
            low, high = max(ours_low, theirs[0]), min(ours_high, theirs[1])
            if low <= high:
                self.api_versions[key] = high  # the highest version both sides speak
        if self.sasl_mechanism is not None:
            self._start_sasl(now_ms)
        elif self.probe == "SASL" and ApiKey.SASL_HANDSHAKE in self.api_versions:
            # Ask as a SASL client would: a SASL listener answers with its mechanisms, any
            # other Kafka listener with ILLEGAL_SASL_STATE.
            self.state = ConnectionState.AUTHENTICATING
            self._send_internal(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, now_ms)
        else:
            self.state = ConnectionState.READY

    # -- SASL ------------------------------------------------------------------------------------

    def _start_sasl(self, now_ms: int) -> None:
        # Java's SaslClientAuthenticator: SaslHandshake names the mechanism, then each token of
        # the mechanism travels in a SaslAuthenticate request (KIP-152).
        if self.sasl_mechanism is None:
            raise errors.IllegalStateError(f"{self}: SASL started without a sasl.mechanism")
        if ApiKey.SASL_AUTHENTICATE not in self.api_versions:
            raise errors.IllegalSaslStateError(
                f"node {self.node_id} does not speak SaslAuthenticate (a broker older than 1.0?)"
            )
        self._sasl = self.sasl_mechanism()
        self.state = ConnectionState.AUTHENTICATING
        self._send_internal(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": self._sasl.name}, now_ms)

    def _send_internal(self, api_key: int, version: int, body: dict, now_ms: int) -> None:
        request = InFlightRequest(
            self.node_id,
            self._next_correlation_id(),
            api_key,
            version,
            body,
            None,
            True,
            now_ms,
            internal=True,
        )
        self.enqueue(request, now_ms)

    def handle_sasl(self, request: InFlightRequest, frame: bytes, now_ms: int) -> None:
        """Take the broker's SaslHandshake / SaslAuthenticate answer and send the next token.

        A refusal raises an :class:`~kafkacore.errors.AuthenticationError`: retrying would
        only be refused again, so the client treats it as fatal.
        """
        _, body = codec.decode_response(request.api_key, request.api_version, frame)
        code = body["error_code"]
        if self.probe == "SASL" and self._sasl is None:
            if code in (Errors.NONE, Errors.UNSUPPORTED_SASL_MECHANISM):
                wanted = "SASL_SSL" if self.ssl_context is not None else "SASL_PLAINTEXT"
                raise SecurityProtocolMismatchError(
                    f"{self.host}:{self.port} closed our connections after ApiVersions and "
                    f"answers SaslHandshake (mechanisms {', '.join(body['mechanisms'])}): the "
                    f"listener wants security.protocol {wanted}, and this client uses "
                    f"{self.security_protocol}", wanted=wanted)
            raise DisconnectError(f"node {self.node_id}: no SASL here either")
        if self._sasl is None:
            raise errors.IllegalStateError(f"{self}: a SASL answer with no SASL exchange started")
        if request.api_key == ApiKey.SASL_HANDSHAKE:
            if code:
                raise errors.for_code(code)(
                    f"node {self.node_id} does not enable SASL mechanism {self._sasl.name}; "
                    f"it offers {body['mechanisms']}"
                )
            token: bytes | None = self._sasl.initial_response()
        else:
            if code:
                # The broker's message ("Authentication failed: Invalid username or password")
                # names no secret; ours neither.
                raise errors.for_code(code)(
                    f"SASL {self._sasl.name} authentication with node {self.node_id} failed: "
                    f"{body['error_message'] or 'no reason given'}"
                )
            lifetime = body.get("session_lifetime_ms", 0)
            token = self._sasl.evaluate_challenge(body["auth_bytes"] or b"")
            if token is None and self._sasl.complete:
                self._authenticated(lifetime, now_ms)
                return
        if token is not None:
            version = self.api_versions[ApiKey.SASL_AUTHENTICATE]
            self._send_internal(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token}, now_ms)

    def _authenticated(self, session_lifetime_ms: int, now_ms: int) -> None:
        # KIP-368: re-authenticate before the session ends, at 85-95% of its lifetime (Java's
        # SaslClientAuthenticator picks a random point there so that clients spread out).
        if session_lifetime_ms > 0:
            fraction = 0.85 + 0.10 * (os.urandom(1)[0] / 255)
            self.reauthenticate_at_ms = now_ms + int(session_lifetime_ms * fraction)
        else:
            self.reauthenticate_at_ms = 0
        self._sasl = None
        self.state = ConnectionState.READY

    def maybe_reauthenticate(self, now_ms: int) -> bool:
        """Start re-authentication if the session is due and nothing is in flight (KIP-368)."""
        if (
            self.state is ConnectionState.READY
            and self.reauthenticate_at_ms
            and now_ms >= self.reauthenticate_at_ms
            and not self.in_flight
            and not self._sends
        ):
            self._start_sasl(now_ms)
            return True
        return False

    def version_range(self, api_key: int) -> tuple[int, int] | None:
        """The versions of ``api_key`` both sides support, or ``None``."""
        ours = SUPPORTED_VERSIONS.get(api_key)
        theirs = self.broker_versions.get(api_key)
        if ours is None or theirs is None:
            return None
        low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
        return (low, high) if low <= high else None

    # -- closing ---------------------------------------------------------------------------------

    def close(self, error: errors.KafkaError | None = None) -> list[InFlightRequest]:
        """Close the socket; returns every request that will now never complete (to be failed)."""
        self.close_error = error
        if self.state is ConnectionState.CONNECTING:
            self._next_address += 1  # this address failed: the next attempt tries another
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:  # pragma: no cover - close() of a socket cannot fail on Linux
                pass
        self.sock = None
        self.state = ConnectionState.DISCONNECTED
        lost: list[InFlightRequest] = list(self.in_flight)
        seen = {id(r) for r in lost}
        for send in self._sends:  # queued but not (fully) written, and not awaiting a response
            if id(send.request) not in seen:
                lost.append(send.request)
        lost.sort(key=lambda r: r.correlation_id)
        self.in_flight.clear()
        self._sends.clear()
        self._rbuf = bytearray()
        self.read_error = None
        self.api_versions = {}
        self.broker_versions = {}
        self._sasl = None
        self.reauthenticate_at_ms = 0
        return lost

    @property
    def has_queued_sends(self) -> bool:
        return bool(self._sends)

    def oldest_request_ms(self) -> int | None:
        """When the oldest unfinished request was queued: awaiting a response, or (an acks=0
        produce) still not fully written.  ``None`` if there is none."""
        times = []
        if self.in_flight:
            times.append(self.in_flight[0].send_ms)
        if self._sends:
            times.append(self._sends[0].request.send_ms)
        return min(times) if times else None

    def __repr__(self) -> str:
        return (
            f"BrokerConnection(node={self.node_id}, {self.host}:{self.port}, {self.state.value}, "
            f"in_flight={len(self.in_flight)})"
        )


def _nbytes(buf: Any) -> int:
    return buf.nbytes if isinstance(buf, memoryview) else len(buf)


def _counter() -> Callable[[], int]:
    state = [0]

    def next_id() -> int:
        state[0] = (state[0] + 1) & 0x7FFFFFFF
        return state[0]

    return next_id


_PROBE_CONTEXT: ssl.SSLContext | None = None


def _probe_context() -> ssl.SSLContext:
    """A TLS client context that checks nothing: a probe only asks whether the listener
    speaks TLS, and sends no data over it."""
    global _PROBE_CONTEXT
    if _PROBE_CONTEXT is None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        _PROBE_CONTEXT = context
    return _PROBE_CONTEXT
