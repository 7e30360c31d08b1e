"""A compacted log shrinking: the log cleaner keeps each key's latest record.

No broker process needed: we write 20,000 updates of 100 keys to a partition's ``Log`` with
``cleanup.policy=compact``, as a changelog topic receives them, and let the ``LogCleaner`` clean
it.  We watch the log shrink to about one record per key, see that every surviving record kept
its offset, that a reader still finds every key's latest value, and that a tombstone (a null
value) is kept for ``delete.retention.ms`` after its first cleaning and then removed.

Run it from the repository's root:

    python tutorials/53_log_cleaner.py

Needs: kafkacore's compiled core, built in place once (``python setup.py build_ext --inplace``).
"""

import tempfile
import time
from pathlib import Path

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.log_cleaner import LogCleaner
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches

KEYS, UPDATES = 100, 20_000


def batch(first: int, n: int, tombstone: bytes | None = None, prefix: bytes = b"user") -> bytes:
    """n updates, key ``<prefix>-<i % KEYS>``; ``tombstone`` deletes that key at the end."""
    builder = MemoryRecordsBuilder(64 * 1024)
    now = int(time.time() * 1000)
    for i in range(first, first + n):
        builder.append(now, b"%s-%d" % (prefix, i % KEYS), b"balance %d" % i)
    if tombstone is not None:
        builder.append(now, tombstone, None)
    return bytes(builder.build())


def read_all(log: Log) -> dict[int, tuple[bytes | None, bytes | None]]:
    """offset -> (key, value) of every record, read the way a fetch reads (gaps and all)."""
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        if isinstance(data, bytes):
            raw = data
        else:  # a region of the segment file, as a fetch sends it
            raw = data.read_all()
            data.close()
        for b in iter_batches(raw):
            out.update((r.offset, (r.key, r.value)) for r in b.records)
            offset = b.last_offset + 1
    return out


root = Path(tempfile.mkdtemp())
config = LogConfig.from_properties({
    "cleanup.policy": "compact",
    "internal.segment.bytes": "65536",  # small segments: the active one is never cleaned
    "delete.retention.ms": "1000",  # tombstones stay a second after their first cleaning
})
log = Log(root / "balances-0", config, topic="balances", partition=0)

# 1. A changelog: every key updated 200 times.  user-7 is deleted at the end (a tombstone).
for first in range(0, UPDATES, 100):
    log.append_as_leader(batch(first, 100, b"user-7" if first == UPDATES - 100 else None))
for first in range(0, 3000, 100):  # other keys, so that the tombstone leaves the active segment
    log.append_as_leader(batch(UPDATES + first, 100, prefix=b"shop"))
before = read_all(log)
print(f"before: {len(before)} records in {len(log.segments)} segments, "
      f"{log.size_in_bytes} bytes, offsets 0 to {log.log_end_offset - 1}")

# 2. Clean.  A broker's cleaner threads do this by themselves; clean_now runs them here.
cleaner = LogCleaner(CleanerConfig(), [root], lambda: {("balances", 0): log})
stats = cleaner.clean_now()[0]
after = read_all(log)
print(f"after:  {len(after)} records in {len(log.segments)} segments, {log.size_in_bytes} bytes;"
      f" the offset map held {cleaner.threads[0].cleaner.offset_map.size} keys")
active = log.active_segment.base_offset
cleaned = {o: kv for o, kv in after.items() if o < active}
assert len(cleaned) <= 2 * KEYS  # one per key (users and shops) below the active segment
assert stats.records_retained == len(cleaned)

# 3. Offsets never change: each survivor is the record that was at its offset before.
assert all(before[o] == kv for o, kv in after.items())
print("every surviving record kept its offset; the first ones:", sorted(after)[:5])

# 4. A reader from offset 0 ends with every key's latest value, as before the clean.
def latest(records: dict[int, tuple[bytes | None, bytes | None]]) -> dict[bytes | None, bytes | None]:
    out = {}
    for o in sorted(records):
        key, value = records[o]
        out[key] = value
    return out


assert latest(after) == latest(before)
assert latest(after)[b"user-7"] is None
print("a reader sees the same latest value for every key; user-7 is deleted")

# 5. The tombstone stays delete.retention.ms after its first cleaning, then goes.
assert any(v is None for o, (k, v) in cleaned.items())
time.sleep(1.1)  # a tutorial may wait; a test would poll instead
cleaner.clean_now()
assert not any(v is None for o, (k, v) in read_all(log).items() if o < active)
print("one second later the tombstone is gone too")
log.close()
