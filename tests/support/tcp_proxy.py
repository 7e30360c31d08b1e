"""A TCP proxy between Kafka clients and a broker that cuts connections in the middle of a frame.

The broker's own ``isolate()`` closes connections between requests; to cut one *inside* a request
or a response, something on the wire must count bytes. The proxy reads the size-delimited frames
of both directions (store and forward, one frame at a time) and, when told, forwards only the
first half of the next matching frame and then closes both sides:

- ``cut_mid_request(api_key)``: the broker gets half a request (and discards it);
- ``cut_mid_response(api_key)``: the broker handled the request (a Produce was appended), the
  client gets half the answer and cannot know.

The broker must advertise the proxy's address (``advertised.listeners``), so that clients come
back through it after their bootstrap Metadata.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field

_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
_CORRELATION = struct.Struct(">i")
_MAX_FRAME = 256 * 1024 * 1024


@dataclass
class Cut:
    direction: str  # "request" or "response"
    api_key: int
    done: threading.Event = field(default_factory=threading.Event)


class _Pair:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.lock = threading.Lock()
        self.closed = False
        #: correlation id of the request whose response is to be cut, and the cut
        self.response_cut: tuple[int, Cut] | None = None

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class TcpProxy:
    """Listens on 127.0.0.1 (port chosen by the OS) and forwards to ``set_target``'s address."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port: int = self._server.getsockname()[1]
        self._target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._cuts: list[Cut] = []  # guarded by _lock
        self._pairs: list[_Pair] = []  # guarded by _lock
        self._running = True
        self.connections = 0
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name="tcp-proxy-acceptor")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def set_target(self, host: str, port: int) -> TcpProxy:
        self._target = (host, port)
        if not self._thread.is_alive():
            self._thread.start()
        return self

    def cut_mid_request(self, api_key: int) -> threading.Event:
        """The next request of ``api_key`` reaches the broker only half: then both sides close."""
        return self._add(Cut("request", api_key))

    def cut_mid_response(self, api_key: int) -> threading.Event:
        """The response to the next request of ``api_key`` reaches the client only half."""
        return self._add(Cut("response", api_key))

    def clear_cuts(self) -> None:
        """Forget the cuts asked for and not yet made."""
        with self._lock:
            self._cuts.clear()

    def _add(self, cut: Cut) -> threading.Event:
        with self._lock:
            self._cuts.append(cut)
        return cut.done

    def _take(self, direction: str, api_key: int) -> Cut | None:
        with self._lock:
            for i, cut in enumerate(self._cuts):
                if cut.direction == direction and cut.api_key == api_key:
                    return self._cuts.pop(i)
        return None

    def close(self) -> None:
        self._running = False
        if self._thread.is_alive():
            self._thread.join(5)
        self._server.close()
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            pair.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forwarding ------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while self._running:
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            assert self._target is not None
            try:
                upstream = socket.create_connection(self._target, timeout=10)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.append(pair)
                self.connections += 1
            threading.Thread(target=self._pump, args=(pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(pair, False), daemon=True).start()

    def _pump(self, pair: _Pair, upstream_direction: bool) -> None:
        src, dst = (pair.client, pair.upstream) if upstream_direction else (
            pair.upstream, pair.client)
        try:
            while True:
                head = _recv_exactly(src, 4)
                size = _SIZE.unpack(head)[0]
                if not 0 <= size <= _MAX_FRAME:
                    break
                frame = head + _recv_exactly(src, size)
                if upstream_direction and size >= _REQUEST_HEAD.size:
                    api_key, _, correlation_id = _REQUEST_HEAD.unpack_from(frame, 4)
                    cut = self._take("request", api_key)
                    if cut is not None:
                        dst.sendall(frame[: len(frame) // 2])
                        pair.close()
                        cut.done.set()
                        return
                    cut = self._take("response", api_key)
                    if cut is not None:
                        with pair.lock:
                            pair.response_cut = (correlation_id, cut)
                elif not upstream_direction and size >= _CORRELATION.size:
                    correlation_id = _CORRELATION.unpack_from(frame, 4)[0]
                    with pair.lock:
                        pending = pair.response_cut
                    if pending is not None and pending[0] == correlation_id:
                        dst.sendall(frame[: len(frame) // 2])
                        pair.close()
                        pending[1].done.set()
                        return
                dst.sendall(frame)
        except OSError:
            pass
        pair.close()


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)
