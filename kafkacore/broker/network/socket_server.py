"""SocketServer: the broker's network layer, in the shape of Kafka's ``SocketServer.scala``.

One :class:`Acceptor` thread accepts connections and hands them round-robin to N
:class:`Processor` threads (``num.network.threads``).  Each processor owns a selector and its
connections: it reads complete size-delimited requests, decodes their header and body, puts them
on the shared :class:`~kafkacore.broker.network.request_channel.RequestChannel` and **mutes** the
connection (stops reading it) until the response to that request has been queued and written.
Handler threads (:mod:`kafkacore.broker.network.kafka_request_handler`) take requests from the channel and put
responses on the processor's own response queue, waking its selector.

There is one acceptor per listener (``listeners=NAME://host:port,...``).  A connection to an SSL
or SASL_SSL listener first goes through its TLS handshake, and one to a SASL listener through its
SASL exchange, both inside the processor's loop without blocking it (Kafka's ``KafkaChannel``
with its ``SslTransportLayer`` and ``SaslServerAuthenticator``); see docs/broker/security.rst.
"""

from __future__ import annotations

import errno
import logging
import queue
import selectors
import socket
import ssl
import threading
import time
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig, EndPoint
from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.network.memory_pool import MemoryPool
from kafkacore.broker.network.processor_core import (
    POLL_S,
    READ,
    RECV_CHUNK,
    WRITE,
    KafkaChannel,
    ProcessorCore,
)
from kafkacore.broker.network.request_channel import (
    RequestChannel,
    payload_size,
)
from kafkacore.broker.network.selector import Poller, Wakeup
from kafkacore.broker.security.authentication import (
    ListenerSecurity,
    Outcome,
    SaslServerAuthenticator,
    SaslState,
    build_listener_security,
    certificate_principal,
)
from kafkacore.broker.security.authentication_executor import AuthenticationExecutor
from kafkacore.broker.server_common.rate_limited_log import RateLimitedLog
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: The acceptor's back-off after a failed accept (out of file descriptors): first and longest.
ACCEPT_BACKOFF_MIN_S = 0.05
ACCEPT_BACKOFF_MAX_S = 1.0
#: At most one "accept failed" warning per this many seconds.
ACCEPT_ERROR_LOG_INTERVAL_S = 10.0


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
        # Lock order: leaf.
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


class Processor(ProcessorCore, ShutdownableThread):
    """A network thread: its own selector, its own connections (Kafka's ``Processor``).

    Each turn of :meth:`run` does what Kafka's does, in the same order:
    ``configure_new_connections`` (from the acceptor), ``process_new_responses`` (from the
    handlers), ``poll`` (select; read requests, write responses), ``close_excess_idle``.
    What runs for every request is compiled, in its base
    :class:`~kafkacore.broker.network.processor_core.ProcessorCore` (with the connection,
    :class:`~kafkacore.broker.network.processor_core.KafkaChannel`); the rest is here.
    """

    def __init__(self, processor_id: int, config: BrokerConfig, channel: RequestChannel,
                 quotas: ConnectionQuotas, faults: FaultInjector | None = None,
                 memory_pool: MemoryPool | None = None,
                 authentication_executor: AuthenticationExecutor | None = None) -> None:
        super().__init__(f"kafkacore-network-thread-{processor_id}")
        # (the fields of the per-request path are declared, and explained, in ProcessorCore)
        self.id = processor_id
        #: Runs SaslAuthenticate steps off this thread (None: here, on the network thread).
        self.authentication_executor = authentication_executor
        self.memory_pool = memory_pool if memory_pool is not None else MemoryPool(
            config["queued.max.request.bytes"])
        # Isolation and injected latency are done here, between the handlers and the sockets.
        self.faults = faults if faults is not None else FaultInjector()
        self.channel = channel
        self.quotas = quotas
        self.max_request_size = config["socket.request.max.bytes"]
        self.idle_s = config["connections.max.idle.ms"] / 1000.0
        self.sasl_max_receive_size = config["sasl.server.max.receive.size"]
        self.failed_auth_delay_s: float = (
            config["connection.failed.authentication.delay.ms"] / 1000.0)
        self._poller = Poller()
        self._wakeup = Wakeup()
        self._wakeup_fd = self._wakeup.fd
        self._poller.register(self._wakeup_fd, READ)
        self._next_index = 0
        #: Refused and failed connections: a WARNING each, one line per kind per interval.
        self._refusals = RateLimitedLog(log)
        channel.add_processor(self)
        self.faults.attach(self.name, self.wakeup)

    # -- other threads call these ---------------------------------------------------------------

    def accept(self, sock: socket.socket, host: str,
               security: ListenerSecurity | None = None) -> None:
        """The acceptor hands over a new connection (from ``host``, counted in the quotas)."""
        self._new_connections.put((sock, host, security))
        self.wakeup()

    def wakeup(self) -> None:
        self._wakeup.wake()

    def statistics(self) -> dict[str, int]:
        """Counters of this processor (read from other threads; each value is one int)."""
        while True:
            try:  # the processor may add a key meanwhile: copy again
                stats = dict(self._stats)
                stats.update(requests=self.requests, responses=self.responses,
                             responses_written_by_handlers=self.responses_written_by_handlers,
                             bytes_read=self.bytes_read, bytes_written=self.bytes_written)
                for api_key, count in list(self._requests_by_api.items()):
                    stats[f"requests.api_key.{api_key}"] = count
                break
            except RuntimeError:
                continue
        stats["connections"] = len(self._channels)
        stats["waiting_for_memory"] = len(self._memory_waiters)
        return stats

    # -- the processor's own thread -------------------------------------------------------------

    def on_shutdown(self) -> None:
        self._wake_handlers()  # never leave a handler waiting for a wake-up we owe it
        for ch in list(self._channels.values()):
            self.close(ch, "the broker is shutting down", level=logging.DEBUG)
        self.channel.remove_processor(self.id)
        self.faults.detach(self.name)
        self._poller.close()
        self._wakeup.close()

    def configure_new_connections(self) -> None:
        # (each turn runs these checks: an empty() costs less than the queue.Empty raised)
        while not self._new_connections.empty():
            try:
                sock, host, security = self._new_connections.get_nowait()
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
            listener = "PLAINTEXT"
            authenticator = None
            if security is not None:
                listener = security.endpoint.name
                authenticator = security.new_authenticator()
                if security.ssl_context is not None:
                    # The handshake is driven by poll(), never here: the client speaks first.
                    sock = security.ssl_context.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False)
            ch = KafkaChannel(connection_id, sock, (host, remote[1]), listener)
            ch.authenticator = authenticator
            self._channels[connection_id] = ch
            self._stats["accepted"] += 1
            self._update_interest(ch)

    def unmute_throttled(self) -> float:
        """Unmute the connections whose throttle time is over; how long poll() may sleep."""
        if not self._throttled:
            return POLL_S
        now = time.monotonic()
        for ch_id, until in list(self._throttled.items()):
            if until <= now:
                del self._throttled[ch_id]
                ch = self._channels.get(ch_id)
                if ch is not None and not ch.sends:  # else unmuted when the answer is written
                    self._unmute(ch)
        if not self._throttled:
            return POLL_S
        return max(0.0, min(POLL_S, min(self._throttled.values()) - now))

    def release_held_responses(self) -> float:
        """Queue the held responses that are due; returns how long poll() may sleep."""
        if not self._held:
            return POLL_S
        delay_s = self.faults.latency_ms / 1000.0
        now = time.monotonic()
        while self._held and self._held[0][0] + delay_s <= now:
            self.process_response(self._held.popleft()[1])
        if self._held:
            return max(0.0, min(POLL_S, self._held[0][0] + delay_s - now))
        return POLL_S

    def enforce_isolation(self) -> None:
        """While the broker is isolated: close every connection, read nothing, write nothing."""
        if not self.faults.isolated:
            return
        for ch in list(self._channels.values()):
            self.close(ch, "the broker is isolated (an injected fault)", level=logging.DEBUG)
        for _, response in self._held:
            response.release()
        self._held.clear()
        self.faults.isolation_enforced(self.name)

    def _handshake(self, ch: KafkaChannel) -> None:
        """One step of the TLS handshake; it tells what it waits for next (Kafka's
        ``SslTransportLayer.handshake``).  Never blocks: the socket is non-blocking."""
        if not isinstance(ch.sock, ssl.SSLSocket):
            raise errors.IllegalStateError(f"{ch.id}: a TLS handshake on a plain socket")
        try:
            ch.sock.do_handshake()
        except ssl.SSLWantReadError:
            ch.handshake_events = READ
        except ssl.SSLWantWriteError:
            ch.handshake_events = WRITE
        except (ssl.SSLError, OSError) as exc:
            # Not TLS (a plaintext client), a client certificate missing or untrusted, garbage:
            # this connection goes; the reason is logged as Kafka's SslAuthenticationException.
            self._stats["ssl_handshake_failed"] += 1
            self.close(ch, f"TLS handshake failed: {getattr(exc, 'reason', None) or exc}")
            return
        else:
            ch.handshake_events = 0
            self._stats["ssl_handshakes"] += 1
            ch.certificate_principal = certificate_principal(ch.sock.getpeercert())
            if ch.sock.pending():  # the client's first request came with its last flight
                self._tls_pending.add(ch.id)
        self._touch(ch)
        self._update_interest(ch)

    def _close_after_send(self, ch: KafkaChannel) -> None:
        """A refusal is written (a failed authentication): close, a little later if so set."""
        if ch.close_after_send is None:
            raise errors.IllegalStateError(f"{ch.id}: closing after a send that asked for no close")
        if self.failed_auth_delay_s > 0:
            # Stay muted: nothing more is read from it; the loop closes it when due.
            self._update_interest(ch)
            self._delayed_closes[ch.id] = (
                time.monotonic() + self.failed_auth_delay_s, ch.close_after_send)
        else:
            self.close(ch, ch.close_after_send)

    def close_delayed(self) -> None:
        """Close the refused connections whose delay is over
        (``connection.failed.authentication.delay.ms``)."""
        if not self._delayed_closes:
            return
        now = time.monotonic()
        for connection_id, (when, reason) in list(self._delayed_closes.items()):
            if when <= now:
                del self._delayed_closes[connection_id]
                ch = self._channels.get(connection_id)
                if ch is not None:
                    self.close(ch, reason)

    def close_excess_idle(self) -> None:
        """Close connections idle longer than ``connections.max.idle.ms``, oldest first."""
        now = time.monotonic()
        if now < self._next_idle_check:
            return  # the oldest connection cannot be idle yet (activity only makes it younger)
        deadline = now - self.idle_s
        stale = []
        for ch in self._channels.values():
            if ch.last_active > deadline:
                self._next_idle_check = ch.last_active + self.idle_s
                break  # ordered by activity: the rest are younger
            stale.append(ch)
        else:
            self._next_idle_check = now + self.idle_s  # none left (a new one is younger)
        for ch in stale:
            if ch.id in self._delayed_closes:
                continue
            if ch.sends:
                # A response the client has not read for that long: it is not reading (the
                # socket is full).  Closed, as Kafka's idle check does, so a client that never
                # reads holds nothing for ever.
                self._stats["blocked_closed"] += 1
                self.close(ch, f"a response unread for more than {self.idle_s * 1000:.0f} ms")
                continue
            if ch.muted:  # a request is being handled: not idle
                self._touch(ch)
                continue
            self._stats["idle_closed"] += 1
            self.close(ch, f"idle for more than {self.idle_s * 1000:.0f} ms",
                       level=logging.DEBUG)

    # -- reading and writing ---------------------------------------------------------------------

    def retry_memory_waiters(self) -> None:
        if not self._memory_waiters:
            return
        for ch in list(self._memory_waiters.values()):
            if ch.expected < 0:
                raise errors.IllegalStateError(
                    f"{ch.id}: waiting for memory without a request size")
            if not self.memory_pool.try_allocate(ch.expected):
                return  # first come, first served: the others wait behind it
            del self._memory_waiters[ch.id]
            ch.reserved = ch.expected
            self._unmute(ch)

    def _authenticate(self, ch: KafkaChannel, header: dict[str, Any],
                      body: dict[str, Any] | None) -> bool:
        """The SASL gate of a SASL listener (Kafka's ``SaslServerAuthenticator`` and
        ``Processor``'s expired-session check).  True when the frame was dealt with here."""
        auth = ch.authenticator
        if auth is None:
            raise errors.IllegalStateError(
                f"{ch.id}: the SASL gate on a channel without an authenticator")
        api_key, version = header["request_api_key"], header["request_api_version"]
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            if body is None:
                self.close(ch, f"SASL request {api_key} v{version} is not a version we read")
                return True
            ch.muted = True  # until the answer is written, like any response
            self._update_interest(ch)
            if api_key == ApiKey.SASL_AUTHENTICATE and self.authentication_executor is not None:
                # The costly step (a PLAIN password's PBKDF2) runs off this thread, after the
                # delay its source earned by failing (AuthenticationExecutor).
                def step(auth: SaslServerAuthenticator = auth) -> tuple[Any, bool]:
                    answer, outcome = auth.handle(api_key, version, body)
                    return (answer, outcome), outcome is Outcome.FAILED

                def done(result: Any, error: BaseException | None, ch_id: str = ch.id,
                         reauth: bool = auth.state is SaslState.REAUTH_AUTHENTICATE) -> None:
                    self._authentication_results.put((ch_id, header, body, reauth, result, error))
                    self.wakeup()

                if not self.authentication_executor.submit(ch.address[0], step, done):
                    self.close(ch, "too many SASL authentications waiting; try again later")
                return True
            was_reauthenticating = auth.state is SaslState.REAUTH_AUTHENTICATE
            self._answer_sasl(ch, header, body, was_reauthenticating,
                              auth.handle(api_key, version, body))
            return True
        if not auth.authenticated:
            if api_key == ApiKey.API_VERSIONS and (
                    auth.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST):
                return False  # KIP-511: the client may ask for versions first
            self._stats["unauthenticated_requests"] += 1
            self.close(ch, f"API key {api_key} before SASL authentication completed "
                           f"(state {auth.state.value})")
            return True
        if auth.session_expired(time.monotonic()):
            # KIP-368: the session ended without a re-authentication: no more requests.
            self._stats["expired_sessions_closed"] += 1
            self.close(ch, f"the SASL session of {auth.principal!r} expired "
                           "(connections.max.reauth.ms) without re-authentication")
            return True
        return False

    def process_authentication_results(self) -> None:
        """The SaslAuthenticate answers the AuthenticationExecutor has worked out."""
        while not self._authentication_results.empty():
            try:
                ch_id, header, body, reauth, result, error = (
                    self._authentication_results.get_nowait())
            except queue.Empty:
                return
            ch = self._channels.get(ch_id)
            if ch is None:
                continue  # closed meanwhile
            if error is not None:
                log.error("SASL error on connection %s", ch.id, exc_info=error)
                self.close(ch, "internal error during SASL authentication")
                continue
            self._answer_sasl(ch, header, body, reauth, result)

    def _answer_sasl(self, ch: KafkaChannel, header: dict[str, Any], body: dict[str, Any],
                     was_reauthenticating: bool, result: tuple[dict[str, Any], Outcome]) -> None:
        answer, outcome = result
        api_key, version = header["request_api_key"], header["request_api_version"]
        self._release_memory(ch)  # answered here: the request's bytes are free
        if api_key == ApiKey.SASL_AUTHENTICATE and version < 1:
            answer.pop("session_lifetime_ms", None)  # v0 does not carry it
        payload = codec.encode_response(api_key, version, header["correlation_id"], answer)
        size = payload_size(payload)
        ch.sends.extend(memoryview(c).cast("B") for c in [size.to_bytes(4, "big"), *payload])
        if outcome is Outcome.FAILED:
            self._stats["authentication_failed"] += 1
            ch.close_after_send = (
                f"SASL authentication failed (error {answer['error_code']}: "
                f"{answer.get('error_message') or 'mechanism ' + repr(body.get('mechanism'))})")
            # As Kafka's "Failed authentication with /host": the message names no secret.
            self._refusals.log("failed authentications",
                               "failed authentication with %s on %s: %s",
                               ch.address[0], ch.listener, ch.close_after_send)
        elif outcome is Outcome.AUTHENTICATED:
            self._stats["reauthentications" if was_reauthenticating else "authenticated"] += 1
        self._update_interest(ch)

    def _write_tls(self, ch: KafkaChannel) -> None:
        # SSLSocket has no sendmsg(): one buffer at a time.  After a "want write" OpenSSL must
        # be given the same bytes again, which is what the head of ``sends`` still holds.
        while ch.sends:
            head = ch.sends[0]
            if isinstance(head, FileRecords):
                # TLS must encrypt in our memory: read the region one chunk at a time, so one
                # chunk, not the whole fetch, is what a slow reader holds.
                try:
                    chunk = head.read_chunk(RECV_CHUNK)
                except (OSError, EOFError) as exc:
                    self.close(ch, f"reading fetched records failed: {exc}")
                    return
                head.advance(len(chunk))
                if not head.remaining:
                    ch.sends.popleft().close()
                ch.sends.appendleft(memoryview(chunk))
                continue
            try:
                sent = ch.sock.send(head[:RECV_CHUNK])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return
            except OSError as exc:
                self.close(ch, f"write failed: {exc}", level=logging.DEBUG)
                return
            self._wrote(ch, sent)
            if sent >= len(head):
                ch.sends.popleft()
            else:
                ch.sends[0] = head[sent:]
        self._sent(ch)

    def close(self, ch: KafkaChannel, reason: str, level: int | None = None) -> None:
        """Close ``ch``.  Without a ``level`` the close is a refusal (bad input, a failed
        authentication, an internal error on the connection): a WARNING, rate-limited."""
        if self._channels.pop(ch.id, None) is None:
            return
        if level is None:
            self._refusals.log("connections closed", "closing connection %s from %s: %s",
                               ch.id, ch.address[0], reason)
        else:
            log.log(level, "closing connection %s: %s", ch.id, reason)
        if ch.events:
            self._poller.unregister(ch.fd)
            del self._by_fd[ch.fd]
            ch.events = 0
        if isinstance(ch.sock, ssl.SSLSocket) and not ch.handshake_events:
            # TLS's close_notify, so the client knows the stream ended whole (a client may
            # drop the last response if the connection ends without it); never waits for the
            # client's own close_notify.
            try:
                ch.sock.unwrap()
            except (ssl.SSLError, OSError, ValueError):
                pass
        with ch.write_lock:
            ch.closed = True
            ch.sock.close()
        for chunk in ch.sends:
            if isinstance(chunk, FileRecords):
                chunk.close()
        ch.sends.clear()
        self._release_memory(ch)
        self._memory_waiters.pop(ch.id, None)
        self._tls_pending.discard(ch.id)
        self._delayed_closes.pop(ch.id, None)
        self._throttled.pop(ch.id, None)
        self.quotas.dec(ch.address[0])
        self._stats["closed"] += 1

    def connection_ids(self) -> list[str]:
        return list(self._channels)


class Acceptor(ShutdownableThread):
    """Accepts connections and hands them round-robin to the processors (Kafka's ``Acceptor``).

    Out of file descriptors (``EMFILE``/``ENFILE``), a pending connection stays in the backlog
    and the listening socket stays readable: polling it again at once would spin a core and
    write the same warning thousands of times a second.  The acceptor instead stops accepting
    for a back-off (doubling from :data:`ACCEPT_BACKOFF_MIN_S` to :data:`ACCEPT_BACKOFF_MAX_S`)
    and logs one warning per :data:`ACCEPT_ERROR_LOG_INTERVAL_S`, with how many accepts failed
    since; the processors go on serving the connections they have.
    """

    def __init__(self, host: str, port: int, processors: list[Processor],
                 quotas: ConnectionQuotas, config: BrokerConfig,
                 faults: FaultInjector | None = None,
                 security: ListenerSecurity | None = None) -> None:
        name = security.endpoint.name if security is not None else "PLAINTEXT"
        super().__init__(f"kafkacore-acceptor-{name}")
        self.security = security
        self.processors = processors
        self.faults = faults
        self.quotas = quotas
        self._send_buffer: int = config["socket.send.buffer.bytes"]
        self._receive_buffer: int = config["socket.receive.buffer.bytes"]
        self.server_socket = socket.create_server((host, port), backlog=1024, reuse_port=False)
        self.server_socket.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server_socket, selectors.EVENT_READ)
        self._current = 0
        self.refused = 0
        #: Connections accepted and closed at once while the broker was isolated.
        self.isolated_refused = 0
        #: accept() calls that failed (out of file descriptors, ...), and the back-off now.
        self.accept_errors = 0
        #: Connections over a quota: a WARNING each, one line per interval.
        self._refusals = RateLimitedLog(log)
        self._backoff_s = 0.0
        self._woken = threading.Event()  # set by wakeup(): ends a back-off early
        self._errors_unlogged = 0
        self._next_error_log = 0.0

    @property
    def port(self) -> int:
        return int(self.server_socket.getsockname()[1])

    def wakeup(self) -> None:
        self._woken.set()

    def do_work(self) -> None:
        if self._backoff_s:
            if self._woken.wait(self._backoff_s):
                return
        if self._selector.select(POLL_S):
            self._accept_all()

    def on_shutdown(self) -> None:
        self._selector.close()
        self.server_socket.close()

    def _accept_failed(self, exc: OSError) -> None:
        self.accept_errors += 1
        self._errors_unlogged += 1
        if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            self._backoff_s = min(ACCEPT_BACKOFF_MAX_S,
                                  max(ACCEPT_BACKOFF_MIN_S, self._backoff_s * 2))
        now = time.monotonic()
        if now >= self._next_error_log:
            log.warning("accept failed on %s: %s (%d failed accepts since the last warning; "
                        "accepting again in %.0f ms; open connections are still served)",
                        self.name, exc, self._errors_unlogged, self._backoff_s * 1000)
            self._errors_unlogged = 0
            self._next_error_log = now + ACCEPT_ERROR_LOG_INTERVAL_S

    def _accept_all(self) -> None:
        while self._running:
            try:
                sock, address = self.server_socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. too many open files: back off (see the class)
                self._accept_failed(exc)
                return
            self._backoff_s = 0.0
            host = address[0]
            if self.faults is not None and self.faults.isolated:
                self.isolated_refused += 1
                sock.close()  # an injected fault: accepted and closed, never served
                continue
            try:
                self.quotas.inc(host)
            except TooManyConnectionsError as exc:
                self.refused += 1
                self._refusals.log("connections refused", "refusing a connection from %s: %s",
                                   address, exc)
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            if self._receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
            processor = self._next_processor()
            if processor is None:
                self.quotas.dec(host)
                sock.close()
                continue
            processor.accept(sock, host, self.security)

    def _next_processor(self) -> Processor | None:
        """Round-robin over the processors still alive: a dead one would never answer."""
        for _ in range(len(self.processors)):
            processor = self.processors[self._current % len(self.processors)]
            self._current += 1
            if processor.is_alive():
                return processor
        log.error("%s: no network thread is alive; closing a new connection", self.name)
        return None


class SocketServer:
    """An acceptor per listener; the processors and the connection quotas they share."""

    def __init__(self, config: BrokerConfig, channel: RequestChannel,
                 faults: FaultInjector | None = None,
                 security: dict[str, ListenerSecurity | None] | None = None) -> None:
        self.config = config
        self.request_channel = channel
        self.faults = faults if faults is not None else FaultInjector()
        self.connection_quotas = ConnectionQuotas(
            config["max.connections"],
            config["max.connections.per.ip"],
            config["max.connections.per.ip.overrides"],
        )
        #: One pool for every processor: the bound is the broker's (queued.max.request.bytes).
        self.memory_pool = MemoryPool(config["queued.max.request.bytes"])
        if security is None:
            security = build_listener_security(config)
        #: SASL listeners' authentication steps run here, off the network threads.
        self.authentication_executor: AuthenticationExecutor | None = None
        if any(s is not None and s.credentials is not None for s in security.values()):
            self.authentication_executor = AuthenticationExecutor(
                config["connection.failed.authentication.delay.ms"])
        self.processors = [
            Processor(i, config, channel, self.connection_quotas, self.faults, self.memory_pool,
                      self.authentication_executor)
            for i in range(config["num.network.threads"])
        ]
        #: listener name -> its acceptor, in the order of ``listeners``.
        self.acceptors: dict[str, Acceptor] = {}
        for endpoint in config.listeners:
            self.acceptors[endpoint.name] = Acceptor(
                endpoint.host, endpoint.port, self.processors, self.connection_quotas, config,
                self.faults, security.get(endpoint.name),
            )
        #: The first listener's acceptor.
        self.acceptor = next(iter(self.acceptors.values()))

    @property
    def bound_port(self) -> int:
        """The port listened on (the one the OS chose when the listener says port 0)."""
        return self.acceptor.port

    def bound_port_of(self, listener: str) -> int:
        """The port of the listener named ``listener``."""
        return self.acceptors[listener.upper()].port

    def endpoints(self) -> list[EndPoint]:
        """The listeners with the ports actually bound."""
        return [EndPoint(e.name, e.host, self.acceptors[e.name].port, e.security_protocol)
                for e in self.config.listeners]

    def startup(self) -> None:
        if self.authentication_executor is not None:
            self.authentication_executor.start()
        for p in self.processors:
            p.start()
        for acceptor in self.acceptors.values():
            acceptor.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        for acceptor in self.acceptors.values():
            acceptor.initiate_shutdown()
        for acceptor in self.acceptors.values():
            if acceptor.is_alive():
                acceptor.join(timeout_s)
            else:
                acceptor.server_socket.close()
        for p in self.processors:
            p.initiate_shutdown()
        for p in self.processors:
            if p.is_alive():
                p.join(timeout_s)
            elif p.ident is None:
                # Never started (a broker that stopped before it caught up with the metadata
                # log): its own loop did not run on_shutdown, which closes its sockets.
                p.on_shutdown()
        if self.authentication_executor is not None:
            self.authentication_executor.shutdown(timeout_s)

    def statistics(self) -> list[dict[str, int]]:
        """One dict of counters per processor (connections, accepted, requests, ...)."""
        return [p.statistics() for p in self.processors]
