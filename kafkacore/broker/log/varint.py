"""The zigzag varints of a record's fields (Kafka's ``ByteUtils.writeVarint``/``readVarint``),
for the broker's Python paths that write or read single records: the control records of
transaction markers and the records the log cleaner writes again."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """``n`` as a zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint at ``buf[pos:]`` and the position after it; ValueError if it is cut
    off or longer than 64 bits."""
    shift = z = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint in a record")
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (z >> 1) ^ -(z & 1), pos
