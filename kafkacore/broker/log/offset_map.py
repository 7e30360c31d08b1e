"""``SkimpyOffsetMap``: key -> the offset of its latest record, in bounded memory (Kafka's
``SkimpyOffsetMap``).

The cleaner reads the dirty section of a log once and remembers, for every key, the offset of the
last record that has it.  Kafka keeps the map in one preallocated buffer of
``log.cleaner.dedupe.buffer.size`` bytes (split between the cleaner threads): an open-addressing
table of (MD5 of the key, offset) entries, 24 bytes each, never filled past
``log.cleaner.io.buffer.load.factor``.  Keys are never stored, only their 16-byte digests, so the
map's size does not depend on the keys' sizes; two keys with one MD5 are taken as one key, the
risk Kafka accepts too.  A key of 16 bytes or less is its own digest here (no hash to compute,
and no collision among such keys): it takes no more room than an MD5.

Ours is a dict from digest to offset with the same bound on the number of entries.  A dict entry
costs Python more than 24 bytes (:data:`BYTES_PER_ENTRY` is what it really takes here), so the
number of slots is the buffer's size over that cost: the buffer bounds the memory the map really
uses.
"""

from __future__ import annotations

from hashlib import md5

#: What one entry costs in a dict of 16-byte ``bytes`` -> ``int`` (measured with tracemalloc:
#: about 133 bytes with the dict's spare room): the digest object, the offset's int, the slot.
BYTES_PER_ENTRY = 136


def key_digest(key: bytes) -> bytes:
    """What the map stores for ``key``: the key itself up to 16 bytes, else its MD5."""
    return key if len(key) <= DIGEST_SIZE else md5(key).digest()


#: MD5's size: keys up to this long are stored as they are
DIGEST_SIZE = 16


class SkimpyOffsetMap:
    """Not thread-safe: each cleaner thread has its own."""

    def __init__(self, memory: int, load_factor: float = 0.9) -> None:
        if memory < BYTES_PER_ENTRY:
            raise ValueError(f"an offset map of {memory} bytes cannot hold one entry")
        #: entries the memory has room for
        self.slots = memory // BYTES_PER_ENTRY
        #: entries the cleaner puts in it at most (Kafka's ``maxDesiredMapSize``)
        self.max_entries = max(1, int(self.slots * load_factor))
        self._map: dict[bytes, int] = {}
        #: the largest offset put in the map (-1: none)
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        """``key``'s latest record is at ``offset`` (offsets arrive in increasing order)."""
        self._map[key_digest(key)] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The offset of ``key``'s latest record seen, or -1."""
        return self._map.get(key_digest(key), -1)

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    def __repr__(self) -> str:
        return f"SkimpyOffsetMap(size={self.size}, slots={self.slots})"
