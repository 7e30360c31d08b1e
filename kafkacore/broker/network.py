"""SocketServer: the broker's network layer, in the shape of Kafka's ``SocketServer.scala``.

One :class:`Acceptor` thread accepts connections and hands them round-robin to N
:class:`Processor` threads (``num.network.threads``).  Each processor owns a selector and its
connections: it reads complete size-delimited requests, decodes their header and body, puts them
on the shared :class:`~kafkacore.broker.request_channel.RequestChannel` and **mutes** the
connection (stops reading it) until the response to that request has been queued and written.
Handler threads (:mod:`kafkacore.broker.handler`) take requests from the channel and put
responses on the processor's own response queue, waking its selector.
"""

from __future__ import annotations

import collections
import logging
import queue
import selectors
import socket
import struct
import threading
import time
from typing import Any

from kafkacore import errors
from kafkacore.broker.config import BrokerConfig
from kafkacore.broker.faults import FaultInjector
from kafkacore.broker.request_channel import Request, RequestChannel, Response, ResponseAction
from kafkacore.protocol import codec

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_API_KEY_VERSION = struct.Struct(">hh")
#: The most bytes one recv() asks for: a large request is read in pieces of this size.
_RECV_CHUNK = 256 * 1024
#: How long select() sleeps at most; bounds how late idle connections are noticed.
_POLL_S = 0.3


class TooManyConnectionsError(errors.KafkaError, OSError):
    """``max.connections`` or ``max.connections.per.ip`` would be exceeded."""


class ConnectionQuotas:
    """Counts open connections, in total and per client address (Kafka's ``ConnectionQuotas``).

    The acceptor calls :meth:`inc` before handing a connection on; the processor that closes it
    calls :meth:`dec`.  Guarded by ``_lock`` (acceptor and processors are different threads).
    """

    def __init__(self, max_connections: int, max_per_ip: int, overrides: dict[str, int]) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}  # guarded by _lock
        self._total = 0  # guarded by _lock

    def inc(self, address: str) -> None:
        with self._lock:
            limit = self.overrides.get(address, self.max_per_ip)
            count = self._counts.get(address, 0)
            if count >= limit:
                raise TooManyConnectionsError(
                    f"too many connections from {address} (max.connections.per.ip={limit})"
                )
            if self._total >= self.max_connections:
                raise TooManyConnectionsError(
                    f"too many connections (max.connections={self.max_connections})"
                )
            self._counts[address] = count + 1
            self._total += 1

    def dec(self, address: str) -> None:
        with self._lock:
            count = self._counts.get(address, 0)
            if count <= 1:
                self._counts.pop(address, None)
            else:
                self._counts[address] = count - 1
            self._total = max(0, self._total - 1)

    def get(self, address: str) -> int:
        with self._lock:
            return self._counts.get(address, 0)

    @property
    def total(self) -> int:
        with self._lock:
            return self._total


class KafkaChannel:
    """One client connection, owned by one processor (read and written only by its thread)."""

    __slots__ = (
        "id", "sock", "address", "buffer", "expected", "muted", "sends", "last_active",
        "events",
    )

    def __init__(self, connection_id: str, sock: socket.socket, address: tuple[str, int]) -> None:
        self.id = connection_id
        self.sock = sock
        self.address = address
        self.buffer = bytearray()  #: the part of the current frame read so far
        self.expected: int | None = None  #: the current frame's size, once its 4 bytes are in
        self.muted = False  #: a request of this connection is being handled: do not read
        self.sends: collections.deque[memoryview] = collections.deque()  #: unwritten response
        self.last_active = time.monotonic()
        self.events = 0  #: what the selector watches for (0: not registered)


def parse_request(frame: bytes) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Decode a request frame: (header, body).  ``body`` is None for a version we cannot read.

    An API key or version outside our declarations still has a readable header (its first fields
    never change, and the client id keeps its two-byte length even in flexible headers), so
    :class:`~kafkacore.broker.apis.KafkaApis` can answer it with a reason.  Anything else that
    does not decode raises :class:`~kafkacore.protocol.codec.ProtocolError` or ``ValueError``.
    """
    if len(frame) < 8:
        raise codec.ProtocolError(f"a request of {len(frame)} bytes is shorter than its header")
    api_key, api_version = _API_KEY_VERSION.unpack_from(frame, 0)
    message = codec.REQUESTS.get(api_key)
    if message is not None and api_version in message.valid:
        return codec.decode_request(frame)
    header, _ = codec.decode(codec.REQUEST_HEADER_MESSAGE, 1, frame)
    return header, None


class Processor(threading.Thread):
    """A network thread: its own selector, its own connections (Kafka's ``Processor``).

    Each turn of :meth:`run` does what Kafka's does, in the same order:
    ``configure_new_connections`` (from the acceptor), ``process_new_responses`` (from the
    handlers), ``poll`` (select; read requests, write responses), ``close_excess_idle``.
    """

    def __init__(self, processor_id: int, config: BrokerConfig, channel: RequestChannel,
                 quotas: ConnectionQuotas, faults: FaultInjector | None = None) -> None:
        super().__init__(name=f"kafkacore-network-thread-{processor_id}", daemon=True)
        self.id = processor_id
        #: Faults switched on by tests (see docs/broker/faults.rst): isolation and latency are
        #: done here, between the handlers and the sockets.
        self.faults = faults if faults is not None else FaultInjector()
        #: Responses held back by an injected latency: (time received, response), oldest first.
        self._held: collections.deque[tuple[float, Response]] = collections.deque()
        self.channel = channel
        self.quotas = quotas
        self.max_request_size: int = config["socket.request.max.bytes"]
        self.idle_s: float = config["connections.max.idle.ms"] / 1000.0
        self._selector = selectors.DefaultSelector()
        self._wakeup_r, self._wakeup_w = socket.socketpair()
        self._wakeup_r.setblocking(False)
        self._wakeup_w.setblocking(False)
        self._selector.register(self._wakeup_r, selectors.EVENT_READ, None)
        self._new_connections: queue.SimpleQueue[tuple[socket.socket, str]] = queue.SimpleQueue()
        self._responses: queue.SimpleQueue[Response] = queue.SimpleQueue()
        #: connection id -> channel, least recently active first (for the idle check).
        self._channels: collections.OrderedDict[str, KafkaChannel] = collections.OrderedDict()
        self._running = True
        self._next_index = 0
        self._stats = collections.Counter[str]()
        channel.add_processor(self)
        self.faults.attach(self.name, self.wakeup)

    # -- other threads call these ---------------------------------------------------------------

    def accept(self, sock: socket.socket, host: str) -> None:
        """The acceptor hands over a new connection (from ``host``, counted in the quotas)."""
        self._new_connections.put((sock, host))
        self.wakeup()

    def enqueue_response(self, response: Response) -> None:
        """A handler's response (see :class:`RequestChannel`)."""
        self._responses.put(response)
        self.wakeup()

    def wakeup(self) -> None:
        try:
            self._wakeup_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (a wakeup is pending anyway) or we are closing

    def shutdown(self) -> None:
        self._running = False
        self.wakeup()

    def statistics(self) -> dict[str, int]:
        """Counters of this processor (read from other threads; each value is one int)."""
        while True:
            try:  # the processor may add a key meanwhile: copy again
                stats = dict(self._stats)
                break
            except RuntimeError:
                continue
        stats["connections"] = len(self._channels)
        return stats

    # -- the processor's own thread -------------------------------------------------------------

    def run(self) -> None:
        try:
            while self._running:
                self.configure_new_connections()
                self.process_new_responses()
                self.enforce_isolation()
                self.poll(self.release_held_responses())
                self.close_excess_idle()
        except Exception:  # pragma: no cover - a bug; say so loudly rather than die silently
            log.exception("processor %d failed", self.id)
        finally:
            for ch in list(self._channels.values()):
                self.close(ch, "the broker is shutting down", level=logging.DEBUG)
            self.channel.remove_processor(self.id)
            self.faults.detach(self.name)
            self._selector.close()
            self._wakeup_r.close()
            self._wakeup_w.close()

    def configure_new_connections(self) -> None:
        while True:
            try:
                sock, host = self._new_connections.get_nowait()
            except queue.Empty:
                return
            try:
                local = sock.getsockname()
                remote = sock.getpeername()
            except OSError:  # the client has already gone
                self.quotas.dec(host)
                sock.close()
                continue
            connection_id = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{self._next_index}"
            self._next_index += 1
            ch = KafkaChannel(connection_id, sock, (host, remote[1]))
            self._channels[connection_id] = ch
            self._stats["accepted"] += 1
            self._update_interest(ch)

    def process_new_responses(self) -> None:
        while True:
            try:
                response = self._responses.get_nowait()
            except queue.Empty:
                return
            if self.faults.latency_ms > 0 or self._held:
                # An injected latency: held, in order, until due (release_held_responses).
                self._held.append((time.monotonic(), response))
                continue
            self.process_response(response)

    def process_response(self, response: Response) -> None:
        ch = self._channels.get(response.request.connection_id)
        if ch is None:  # closed while its request was being handled
            return
        if response.action is ResponseAction.SEND:
            assert response.payload is not None
            for chunk in response.payload:
                view = memoryview(chunk).cast("B")
                if len(view):
                    ch.sends.append(view)
            self._stats["responses"] += 1
            self._update_interest(ch)
        elif response.action is ResponseAction.NO_OP:
            self._unmute(ch)
        else:
            self.close(ch, response.reason)

    def release_held_responses(self) -> float:
        """Queue the held responses that are due; returns how long poll() may sleep."""
        delay_s = self.faults.latency_ms / 1000.0
        now = time.monotonic()
        while self._held and self._held[0][0] + delay_s <= now:
            self.process_response(self._held.popleft()[1])
        if self._held:
            return max(0.0, min(_POLL_S, self._held[0][0] + delay_s - now))
        return _POLL_S

    def enforce_isolation(self) -> None:
        """While the broker is isolated: close every connection, read nothing, write nothing."""
        if not self.faults.isolated:
            return
        for ch in list(self._channels.values()):
            self.close(ch, "the broker is isolated (an injected fault)", level=logging.DEBUG)
        self._held.clear()
        self.faults.isolation_enforced(self.name)

    def poll(self, timeout_s: float = _POLL_S) -> None:
        for key, mask in self._selector.select(timeout_s):
            ch = key.data
            if ch is None:
                try:
                    while self._wakeup_r.recv(4096):
                        pass
                except (BlockingIOError, OSError):
                    pass
                continue
            if mask & selectors.EVENT_WRITE:
                self._write(ch)
            if mask & selectors.EVENT_READ and ch.id in self._channels and not ch.muted:
                self._read(ch)

    def close_excess_idle(self) -> None:
        """Close connections idle longer than ``connections.max.idle.ms``, oldest first."""
        deadline = time.monotonic() - self.idle_s
        stale = []
        for ch in self._channels.values():
            if ch.last_active > deadline:
                break  # ordered by activity: the rest are younger
            stale.append(ch)
        for ch in stale:
            if ch.muted or ch.sends:  # a request is being handled: not idle
                self._touch(ch)
                continue
            self._stats["idle_closed"] += 1
            self.close(ch, f"idle for more than {self.idle_s * 1000:.0f} ms",
                       level=logging.DEBUG)

    # -- reading and writing ---------------------------------------------------------------------

    def _read(self, ch: KafkaChannel) -> None:
        """Read at most one frame: never past its end, so a pipelining client's next requests
        stay in the kernel (and, once its buffers fill, in the client) while this one is handled.
        """
        while True:
            need = 4 - len(ch.buffer) if ch.expected is None else ch.expected - len(ch.buffer)
            try:
                data = ch.sock.recv(min(need, _RECV_CHUNK))
            except BlockingIOError:
                return
            except OSError as exc:
                self.close(ch, f"read failed: {exc}", level=logging.DEBUG)
                return
            if not data:
                why = "the client closed the connection"
                if ch.buffer:
                    why += f" in the middle of a request ({len(ch.buffer)} bytes read)"
                self.close(ch, why, level=logging.DEBUG)
                return
            self._touch(ch)
            self._stats["bytes_read"] += len(data)
            ch.buffer += data
            if ch.expected is None:
                if len(ch.buffer) < 4:
                    continue
                size = _SIZE.unpack(ch.buffer)[0]
                ch.buffer.clear()
                if size < 0 or size > self.max_request_size:
                    self._stats["invalid_requests"] += 1
                    self.close(ch, f"request size {size} is not within 0 and "
                                   f"socket.request.max.bytes={self.max_request_size}")
                    return
                ch.expected = size
            if len(ch.buffer) == ch.expected:
                frame = bytes(ch.buffer)
                ch.buffer = bytearray()
                ch.expected = None
                self._complete_receive(ch, frame)
                return

    def _complete_receive(self, ch: KafkaChannel, frame: bytes) -> None:
        try:
            header, body = parse_request(frame)
        except Exception as exc:  # any bad bytes: this connection goes, nobody else notices
            self._stats["invalid_requests"] += 1
            self.close(ch, f"could not parse a request of {len(frame)} bytes: {exc}")
            return
        request = Request(self.id, ch.id, header, body, ch.address, len(frame))
        # The muting rule: no more reads from this connection until the response is queued
        # and written, so at most one of its requests is in the handlers at a time and the
        # responses leave in the order the requests came (handlers run in parallel).
        ch.muted = True
        self._update_interest(ch)
        self._stats["requests"] += 1
        self._stats[f"requests.api_key.{request.api_key}"] += 1
        while self._running:
            try:
                self.channel.send_request(request, timeout_s=_POLL_S)
                return
            except queue.Full:
                # Handlers are behind: this processor waits, and so do its clients (Kafka's
                # queued.max.requests back-pressure).  Keep the wakeup pipe drained meanwhile.
                continue

    def _write(self, ch: KafkaChannel) -> None:
        while ch.sends:
            try:
                sent = ch.sock.sendmsg(list(ch.sends)[:64])
            except BlockingIOError:
                return
            except OSError as exc:
                self.close(ch, f"write failed: {exc}", level=logging.DEBUG)
                return
            self._stats["bytes_written"] += sent
            self._touch(ch)
            while sent:
                head = ch.sends[0]
                if sent >= len(head):
                    sent -= len(head)
                    ch.sends.popleft()
                else:
                    ch.sends[0] = head[sent:]  # a partial write: keep the rest for next time
                    sent = 0
                    return
        self._unmute(ch)

    def _unmute(self, ch: KafkaChannel) -> None:
        ch.muted = False
        self._update_interest(ch)

    def _touch(self, ch: KafkaChannel) -> None:
        ch.last_active = time.monotonic()
        self._channels.move_to_end(ch.id)

    def _update_interest(self, ch: KafkaChannel) -> None:
        events = 0
        if not ch.muted:
            events |= selectors.EVENT_READ
        if ch.sends:
            events |= selectors.EVENT_WRITE
        if events == ch.events:
            return
        if ch.events == 0:
            self._selector.register(ch.sock, events, ch)
        elif events == 0:
            self._selector.unregister(ch.sock)
        else:
            self._selector.modify(ch.sock, events, ch)
        ch.events = events

    def close(self, ch: KafkaChannel, reason: str, level: int = logging.INFO) -> None:
        if self._channels.pop(ch.id, None) is None:
            return
        log.log(level, "closing connection %s: %s", ch.id, reason)
        if ch.events:
            self._selector.unregister(ch.sock)
            ch.events = 0
        ch.sock.close()
        ch.sends.clear()
        self.quotas.dec(ch.address[0])
        self._stats["closed"] += 1

    def connection_ids(self) -> list[str]:
        return list(self._channels)


class Acceptor(threading.Thread):
    """Accepts connections and hands them round-robin to the processors (Kafka's ``Acceptor``)."""

    def __init__(self, host: str, port: int, processors: list[Processor],
                 quotas: ConnectionQuotas, config: BrokerConfig,
                 faults: FaultInjector | None = None) -> None:
        super().__init__(name="kafkacore-acceptor", daemon=True)
        self.processors = processors
        self.faults = faults
        self.quotas = quotas
        self._send_buffer: int = config["socket.send.buffer.bytes"]
        self._receive_buffer: int = config["socket.receive.buffer.bytes"]
        self.server_socket = socket.create_server((host, port), backlog=1024, reuse_port=False)
        self.server_socket.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server_socket, selectors.EVENT_READ)
        self._running = True
        self._current = 0
        self.refused = 0
        #: Connections accepted and closed at once while the broker was isolated.
        self.isolated_refused = 0

    @property
    def port(self) -> int:
        return int(self.server_socket.getsockname()[1])

    def run(self) -> None:
        try:
            while self._running:
                if self._selector.select(_POLL_S):
                    try:
                        self._accept_all()
                    except Exception:  # pragma: no cover - a bug: log it, keep accepting
                        log.exception("acceptor error")
        finally:
            self._selector.close()
            self.server_socket.close()

    def _accept_all(self) -> None:
        while self._running:
            try:
                sock, address = self.server_socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. too many open files: log, keep accepting later
                log.warning("accept failed: %s", exc)
                return
            host = address[0]
            if self.faults is not None and self.faults.isolated:
                self.isolated_refused += 1
                sock.close()  # an injected fault: accepted and closed, never served
                continue
            try:
                self.quotas.inc(host)
            except TooManyConnectionsError as exc:
                self.refused += 1
                log.info("refusing a connection from %s: %s", address, exc)
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            if self._receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
            processor = self.processors[self._current % len(self.processors)]
            self._current += 1
            processor.accept(sock, host)

    def shutdown(self) -> None:
        self._running = False


class SocketServer:
    """The acceptor, the processors and the connection quotas of one listener."""

    def __init__(self, config: BrokerConfig, channel: RequestChannel,
                 faults: FaultInjector | None = None) -> None:
        self.config = config
        self.request_channel = channel
        self.faults = faults if faults is not None else FaultInjector()
        self.connection_quotas = ConnectionQuotas(
            config["max.connections"],
            config["max.connections.per.ip"],
            config["max.connections.per.ip.overrides"],
        )
        self.processors = [
            Processor(i, config, channel, self.connection_quotas, self.faults)
            for i in range(config["num.network.threads"])
        ]
        self.acceptor = Acceptor(
            config.listener_host, config.listener_port, self.processors,
            self.connection_quotas, config, self.faults,
        )

    @property
    def bound_port(self) -> int:
        """The port listened on (the one the OS chose when the listener says port 0)."""
        return self.acceptor.port

    def startup(self) -> None:
        for p in self.processors:
            p.start()
        self.acceptor.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.acceptor.shutdown()
        if self.acceptor.is_alive():
            self.acceptor.join(timeout_s)
        else:
            self.acceptor.server_socket.close()
        for p in self.processors:
            p.shutdown()
        for p in self.processors:
            if p.is_alive():
                p.join(timeout_s)

    def statistics(self) -> list[dict[str, int]]:
        """One dict of counters per processor (connections, accepted, requests, ...)."""
        return [p.statistics() for p in self.processors]
