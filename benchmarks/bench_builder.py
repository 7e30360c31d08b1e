"""Record-batch builder micro-benchmark: kafkacore vs aiokafka (compiled) vs kafka-python.

    python benchmarks/bench_builder.py [--records 200000] [--rounds 5]

prints a table; ``run()`` returns the same numbers as a dict.  These machines are shared and noisy,
so read the ratios (each measured in the same run, the builders taking turns, best of ``rounds``),
not the absolute rates.

What is timed, per builder, on the same data (10-byte keys, 100-byte values, no headers, codec
none, one timestamp):

- ``Python call``: ``append`` called from a Python loop into batches of ``batch_size`` (1 MiB by
  default), a fresh builder per batch, ``build()`` (header + CRC) per batch included.  kafkacore's
  builders write into one reused buffer, as the BufferPool hands them out; aiokafka and
  kafka-python grow their own bytearray, which is how they work.  aiokafka's and kafka-python's
  ``append`` also decide whether the record fits (they return None when it does not); kafkacore
  splits that into ``has_room_for`` (Java's ``hasRoomFor``), so we show it both without and with
  that second call.
- ``crc32c`` on 1 MiB, GB/s: ours, and aiokafka's compiled ``crc32c_cython`` beside it.
"""

from __future__ import annotations

import argparse
import time

from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder

KEY = b"k" * 10
VALUE = b"v" * 100
TS = 1_700_000_000_000


def _aiokafka_builder_class():
    """aiokafka's builder, checked to be the compiled one (aiokafka falls back to Python)."""
    from aiokafka.record import _crecords
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    if DefaultRecordBatchBuilder is not _crecords.DefaultRecordBatchBuilder:
        raise RuntimeError("aiokafka's compiled record builder (_crecords) is not in use")
    if not _crecords.default_records.__file__.endswith((".so", ".pyd")):
        raise RuntimeError("aiokafka's _crecords is not an extension module")
    return DefaultRecordBatchBuilder


def _ours(n, batch_size, buffer):
    built = 0
    builder = MemoryRecordsBuilder(buffer, write_limit=batch_size)
    append, has_room = builder.append, builder.has_room_for
    for _ in range(n):
        if not has_room(TS, KEY, VALUE):
            built += len(builder.build())
            builder = MemoryRecordsBuilder(buffer, write_limit=batch_size)
            append, has_room = builder.append, builder.has_room_for
        append(TS, KEY, VALUE)
    built += len(builder.build())
    return built


def _per_batch(batch_size):
    # 61-byte header; a record here is 10 + 100 bytes of data and 6 to 9 bytes of framing.
    return max(1, (batch_size - 61) // (len(KEY) + len(VALUE) + 9))


def _ours_append_only(n, batch_size, buffer):
    built = 0
    per_batch = _per_batch(batch_size)
    while n > 0:
        k = min(n, per_batch)
        builder = MemoryRecordsBuilder(buffer, write_limit=batch_size)
        append = builder.append
        for _ in range(k):
            append(TS, KEY, VALUE)
        built += len(builder.build())
        n -= k
    return built


def _theirs(builder_class, n, batch_size):
    def new():
        return builder_class(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                             producer_epoch=-1, base_sequence=-1, batch_size=batch_size)

    built = 0
    builder, offset = new(), 0
    for _ in range(n):
        if builder.append(offset, TS, KEY, VALUE, []) is None:
            built += len(builder.build())
            builder, offset = new(), 0
            builder.append(offset, TS, KEY, VALUE, [])
        offset += 1
    built += len(builder.build())
    return built


def _rate(fn, n):
    t0 = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t0)


def run(n: int = 200_000, rounds: int = 5, batch_size: int = 1024 * 1024) -> dict:
    """Records per second of each builder (best of ``rounds``, taking turns) and crc32c GB/s."""
    from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

    aiokafka_builder = _aiokafka_builder_class()
    from aiokafka.record._crecords import crc32c_cython

    # One pooled buffer, a little bigger than a batch (the last record may overshoot the limit).
    buffer = bytearray(batch_size + 4096)
    contenders = {
        "kafkacore (Python call)": lambda k: _ours_append_only(k, batch_size, buffer),
        "kafkacore (has_room+append)": lambda k: _ours(k, batch_size, buffer),
        "aiokafka (compiled)": lambda k: _theirs(aiokafka_builder, k, batch_size),
        "kafka-python": lambda k: _theirs(KafkaPythonBuilder, k, batch_size),
    }
    # kafka-python is pure Python and ~20x slower: a tenth of the records keeps the run short.
    sizes = {name: (max(1, n // 10) if name == "kafka-python" else n) for name in contenders}
    best = dict.fromkeys(contenders, 0.0)
    for _ in range(rounds):
        for name, fn in contenders.items():
            best[name] = max(best[name], _rate(fn, sizes[name]))

    data = bytes(range(256)) * 4096  # 1 MiB
    crc = {"kafkacore crc32c": 0.0, "aiokafka crc32c_cython": 0.0}
    reps = 50
    for _ in range(rounds):
        for name, fn in (("kafkacore crc32c", crc32c), ("aiokafka crc32c_cython", crc32c_cython)):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn(data)
            crc[name] = max(crc[name], reps * len(data) / (time.perf_counter() - t0) / 1e9)
    assert crc32c(data) == crc32c_cython(data)

    aio = best["aiokafka (compiled)"]
    return {
        "records": n,
        "batch_size": batch_size,
        "records_per_s": best,
        "ratio_python_call_vs_aiokafka": best["kafkacore (Python call)"] / aio,
        "ratio_python_call_vs_kafka_python": best["kafkacore (Python call)"] / best["kafka-python"],
        "crc32c_gb_per_s": crc,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1024 * 1024)
    args = parser.parse_args(argv)
    result = run(args.records, args.rounds, args.batch_size)
    aio = result["records_per_s"]["aiokafka (compiled)"]
    print(f"{result['records']} records, 10-byte keys, 100-byte values, batches of "
          f"{result['batch_size']} bytes, best of {args.rounds}")
    print(f"{'builder':<30}{'records/s':>14}{'ns/record':>12}{'vs aiokafka':>14}")
    for name, rate in result["records_per_s"].items():
        print(f"{name:<30}{rate:>14,.0f}{1e9 / rate:>12.1f}{rate / aio:>13.2f}x")
    print()
    print(f"{'crc32c on 1 MiB':<30}{'GB/s':>14}")
    for name, rate in result["crc32c_gb_per_s"].items():
        print(f"{name:<30}{rate:>14.2f}")
    return result


if __name__ == "__main__":
    main()
