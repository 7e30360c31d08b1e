"""A scripted broker for the faults a real broker will not produce on demand.

``FakeBroker`` is a socket server that decodes each request with our codec's broker side
(``decode_request``) and answers what the test's handler returns (``encode_response``): silence,
a chosen correlation id, raw bytes, an error code, a close. Used by tests/test_network.py and
tests/test_sender_faults.py.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


class FakeBroker:
    """A socket server that decodes requests with our codec and answers through ``handler``.

    ``handler(header, body)`` returns a response body (dict), ``None`` (stay silent), or
    ``(correlation_id, body)`` to answer with a chosen correlation id.
    """

    def __init__(self, handler):
        self.handler = handler
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.requests = []
        self.reading = True  # set False to stop reading (the peer's send buffer fills up)
        self._stop = threading.Event()
        self._threads = []
        self._conns = []
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn):
        conn.settimeout(0.2)
        buf = b""
        while not self._stop.is_set():
            if not self.reading:
                time.sleep(0.02)
                continue
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            buf += data
            while len(buf) >= 4:
                (size,) = struct.unpack(">i", buf[:4])
                if len(buf) < 4 + size:
                    break
                frame, buf = buf[4 : 4 + size], buf[4 + size :]
                header, body, _ = codec.decode_request(frame)
                self.requests.append((header, body))
                answer = self.handler(header, body)
                if answer is None:
                    continue
                correlation_id = header["correlation_id"]
                close_after = False
                if isinstance(answer, tuple) and answer[0] == "close":
                    close_after, answer = True, answer[1]
                if isinstance(answer, tuple):
                    correlation_id, answer = answer
                version = header["request_api_version"]
                if isinstance(answer, bytes):  # raw bytes after the correlation id
                    out = struct.pack(">i", correlation_id) + answer
                else:
                    if answer.pop("_v0", False):
                        version = 0
                    out = b"".join(
                        codec.encode_response(
                            header["request_api_key"], version, correlation_id, answer
                        )
                    )
                try:
                    conn.sendall(struct.pack(">i", len(out)) + out)
                    if close_after:
                        conn.close()
                        return
                except OSError:
                    return

    def close(self):
        self._stop.set()
        self.server.close()
        for c in self._conns:
            c.close()
        for t in self._threads:
            t.join(2)


def api_versions_answer(max_versions=None):
    versions = {
        ApiKey.PRODUCE: 11,
        ApiKey.METADATA: 12,
        ApiKey.API_VERSIONS: 4,
        ApiKey.INIT_PRODUCER_ID: 5,
    }
    versions.update(max_versions or {})
    versions = {k: v for k, v in versions.items() if v is not None}
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": k, "min_version": 0, "max_version": v} for k, v in versions.items()
        ],
        "throttle_time_ms": 0,
    }
