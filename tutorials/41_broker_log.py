"""The broker's log on disk, by hand: append, replay a batch, tear the tail, recover.

No broker process needed: we use the partition's ``Log`` directly in a temporary directory, as the
broker's request handlers do.  We see the offsets the log assigns, the files it writes, a retried
idempotent batch answered with its original offsets instead of being written twice, a producer
from the past fenced, and a log whose last batch was torn by a crash cut back to the last batch
whose CRC checks -- with the producer's sequences still working after the restart.

Run it from the repository's root:

    python tutorials/41_broker_log.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

import os
import tempfile
from pathlib import Path

from kafkacore.broker.log import Log, LogConfig
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches, iter_records
from kafkacore.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

PRODUCER_ID, EPOCH = 1000, 1


def batch(first_seq: int, n: int, epoch: int = EPOCH) -> bytes:
    """What an idempotent producer sends: n records numbered from first_seq."""
    builder = MemoryRecordsBuilder(
        4096, producer_id=PRODUCER_ID, producer_epoch=epoch, base_sequence=first_seq
    )
    for i in range(n):
        builder.append(1_700_000_000_000, None, b"record %d" % (first_seq + i))
    builder.close()
    return bytes(builder.build())


def read_bytes(log: Log, offset: int) -> bytes:
    """The batches a read returns, as bytes (a fetch asks for a region of the file instead)."""
    records = log.read(offset, 1 << 20).records
    assert isinstance(records, bytes)
    return records


def main(directory: Path) -> None:
    # --- start
    config = LogConfig(segment_bytes=600, index_interval_bytes=200)
    log = Log(directory / "orders-0", config, topic="orders", partition=0)
    infos = [log.append_as_leader(batch(first_seq, 3)) for first_seq in range(0, 30, 3)]
    info = infos[-1]
    print(f"appended 10 batches; the last got offsets {info.first_offset}-{info.last_offset}")
    print("files:", " ".join(sorted(p.name for p in (directory / "orders-0").iterdir())))
    assert log.log_end_offset == 30 and len(log.segments) > 1

    # The producer did not hear the answer for sequences 24-26 and sends the batch again.
    retry = log.append_as_leader(batch(24, 3))
    print(
        f"retry of sequences 24-26: duplicate={retry.duplicate},"
        f" original offsets {retry.first_offset}-{retry.last_offset}"
    )
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (24, 26)
    assert log.log_end_offset == 30  # nothing written

    # A gap, and an old epoch, are refused with Kafka's error codes.
    for bad, what in ((batch(40, 3), "a gap"), (batch(30, 3, epoch=EPOCH - 1), "an old epoch")):
        try:
            log.append_as_leader(bad)
        except (OutOfOrderSequenceNumberError, InvalidProducerEpochError) as exc:
            print(f"{what}: {type(exc).__name__} (error code {exc.errno})")
    assert log.log_end_offset == 30
    # --- end

    # --- tear
    # Append one more batch, then cut its file in the middle of it: a crash during the write.
    log.append_as_leader(batch(30, 3))
    log.flush()
    active = log.active_segment.log_path
    os.truncate(active, active.stat().st_size - 20)
    log.close(clean=False)  # the process "died": no flush, no producer snapshot at the end
    reopened = Log(directory / "orders-0", config, topic="orders", partition=0)
    print(
        f"recovery cut {reopened.recovered_bytes_truncated} bytes; log end offset is now"
        f" {reopened.log_end_offset}"
    )
    assert reopened.log_end_offset == 30
    values: list[bytes | None] = []
    while len(values) < reopened.log_end_offset:  # a read returns batches of one segment
        values += [r.value for r in iter_records(read_bytes(reopened, len(values)))]
    assert values == [b"record %d" % i for i in range(30)]

    # The producer state came back from the snapshot taken at the last roll plus the log after
    # it: the torn batch is gone, so its resend is new data, and 24-26 is still a duplicate.
    assert reopened.append_as_leader(batch(24, 3)).duplicate
    resent = reopened.append_as_leader(batch(30, 3))
    print(
        f"the producer resends sequences 30-32: written at {resent.first_offset}-{resent.last_offset}"
    )
    assert not resent.duplicate and resent.first_offset == 30
    (stored,) = iter_batches(read_bytes(reopened, 30))
    print(f"stored: base offset {stored.base_offset}, base sequence {stored.base_sequence}")
    assert (stored.base_offset, stored.base_sequence, stored.record_count) == (30, 30, 3)
    reopened.close()
    # --- end tear


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(tmp))
