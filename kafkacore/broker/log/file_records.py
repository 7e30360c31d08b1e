"""FileRecords: record batches that stay in their segment file until they go out (Kafka's
``FileRecords``, whose ``writeTo`` hands a region of the file to ``sendfile``).

A fetch answer names a region of a segment, ``(file, position, size)``, instead of holding a
copy of its bytes.  The network thread writes it with :func:`os.sendfile` on a plaintext
connection (the kernel moves page-cache pages to the socket: no copy in our memory, and a client
that never reads costs the broker a file descriptor, not megabytes).  Under TLS the bytes must be
encrypted by us, so they are read a chunk at a time, and only the chunk being written is held.

The region owns a duplicate of the segment's descriptor: the segment may be closed or deleted by
retention while the answer waits for a slow client, and the duplicate keeps the file readable (an
unlinked file lives on while a descriptor is open) instead of sending from a descriptor number
the process may have reused for something else.  :meth:`close` gives it back; the network thread
calls it when the region is written or its connection closes (``__del__`` is the backstop).
"""

from __future__ import annotations

import os
import socket


class FileRecords:
    """A region of a segment file, written once, front to back."""

    __slots__ = ("_fd", "position", "size", "sent")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self._fd = os.dup(fd)  # our own: see the module's docstring
        self.position = position  #: where the region starts in the file
        self.size = size  #: its length in bytes (what the response's size counts)
        self.sent = 0  #: bytes of it written so far

    def __len__(self) -> int:
        return self.size

    @property
    def remaining(self) -> int:
        return self.size - self.sent

    def write_to(self, sock: socket.socket, max_bytes: int) -> int:
        """Send up to ``max_bytes`` of what is left with ``sendfile`` (plaintext sockets only).
        Returns the bytes sent (0: the socket is full); raises ``EOFError`` if the file ends
        before the region does (it was truncated under us)."""
        count = min(max_bytes, self.remaining)
        sent = os.sendfile(sock.fileno(), self._fd, self.position + self.sent, count)
        if sent == 0 and count > 0:
            raise EOFError(f"the segment file ended {self.remaining} bytes before the region")
        self.sent += sent
        return sent

    def read_chunk(self, max_bytes: int) -> bytes:
        """The next ``max_bytes`` at most, read from the file (for TLS, which must copy); the
        caller writes them and counts them with :meth:`advance`."""
        count = min(max_bytes, self.remaining)
        data = os.pread(self._fd, count, self.position + self.sent)
        if len(data) < count and not data:
            raise EOFError(f"the segment file ended {self.remaining} bytes before the region")
        return data

    def advance(self, n: int) -> None:
        self.sent += n

    def read_all(self) -> bytes:
        """The whole region as bytes (for a caller that needs them in memory: tests, tools)."""
        return os.pread(self._fd, self.size, self.position)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            self.close()

    def __repr__(self) -> str:
        return f"FileRecords(position={self.position}, size={self.size}, sent={self.sent})"
