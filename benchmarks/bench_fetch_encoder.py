"""The broker's CPU per Fetch answer: the Python codec against the compiled encoder.

    python benchmarks/bench_fetch_encoder.py [--rounds 5] [--n 2000]

Encodes a 1-partition and a 100-partition Fetch answer, shaped as the Fetch handler builds them
(each partition's records a file region of a segment file, one partition in ten with an aborted
transaction), ``n`` times per round, both ways taking turns: the codec's way
(``fit_to_version``, ``codec.encode_response``, the size in front: what
``RequestChannel.send_response`` did) and ``encode_fetch_response``.  Prints µs per answer, best
of the rounds, and the ratio; the machine is shared, so read the ratio, with the load average
printed beside it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid

from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.network.api_request_handler import fit_to_version
from kafkacore.broker.network.request_channel import payload_size
from kafkacore.broker.network.response_encoder import encode_fetch_response
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

FETCH = codec.RESPONSES[ApiKey.FETCH]


def answer(fd: int, partitions: int) -> dict:
    """A Fetch answer as the handler builds it (every field of the newest version)."""
    parts = [{"partition_index": i, "error_code": Errors.NONE, "high_watermark": 1000 + i,
              "last_stable_offset": 1000 + i, "log_start_offset": 0,
              "aborted_transactions": [{"producer_id": 7, "first_offset": 3}] if i % 10 == 0
              else None,
              "preferred_read_replica": -1, "records": FileRecords(fd, 0, 1024)}
             for i in range(partitions)]
    return {"throttle_time_ms": 0, "error_code": Errors.NONE, "session_id": 12345,
            "responses": [{"topic": "bench", "topic_id": uuid.uuid4(), "partitions": parts}]}


def by_codec(version: int, body: dict) -> list:
    payload = codec.encode_response(ApiKey.FETCH, version, 1,
                                    fit_to_version(FETCH.body, version, body))
    return [payload_size(payload).to_bytes(4, "big"), *payload]


def by_compiled(version: int, body: dict) -> list:
    return encode_fetch_response(version, 1, body)


def per_answer_us(encode, version: int, body: dict, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        encode(version, body)
    return (time.perf_counter() - t0) / n * 1e6


def run(rounds: int, n: int) -> list[tuple]:
    fd, path = tempfile.mkstemp(prefix="kafkacore-bench-fetch-")
    rows = []
    try:
        os.write(fd, b"\0" * 1024)
        for partitions in (1, 100):
            body = answer(fd, partitions)
            reps = max(20, n // partitions)
            for version in (11, 16):
                best_codec = best_compiled = float("inf")
                for _ in range(rounds):  # taking turns, best of the rounds
                    best_codec = min(best_codec, per_answer_us(by_codec, version, body, reps))
                    best_compiled = min(best_compiled,
                                        per_answer_us(by_compiled, version, body, reps))
                rows.append((partitions, version, best_codec, best_compiled))
            for topic in body["responses"]:
                for p in topic["partitions"]:
                    p["records"].close()
    finally:
        os.close(fd)
        os.unlink(path)
    return rows


def main(argv: list[str] | None = None) -> list[tuple]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=2000, help="1-partition answers per round")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    rows = run(args.rounds, args.n)
    print(f"Fetch answer encoding, µs per answer (best of {args.rounds}; load {load:.1f})")
    print(f"{'partitions':>10} {'version':>7} {'codec':>9} {'compiled':>9} {'ratio':>6}")
    for partitions, version, c, k in rows:
        print(f"{partitions:>10} {version:>7} {c:>9.1f} {k:>9.1f} {c / k:>5.1f}x")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return rows


if __name__ == "__main__":
    main()
