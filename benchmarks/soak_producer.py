"""Soak: 10,000,000 records through one producer, its resident memory sampled as it goes.

The producer sends to a sink broker in a separate process (so the sample is the producer's memory
alone): a socket server on our own codec that answers ApiVersions, Metadata, InitProducerId and
every Produce request with success, keeping nothing.  The producer is idempotent, acks=all,
linger 5 ms, 64 KiB batches, 100-byte values, a key on every tenth record and a callback on every
hundredth; futures are dropped as a long-running service drops them.

    python benchmarks/soak_producer.py [--records 10000000] [--warmup 2000000]

prints one RSS sample every ``--every`` records and the spread after the warm-up; exits 1 if the
spread exceeds 10% of the post-warm-up minimum.  The warm-up (2,000,000 records) covers the buffer
pool being filled once: it keeps up to ``buffer.memory`` (32 MiB here) of freed batch buffers for
reuse, so RSS climbs by about that much over the first million and a half records, then stays.  Results go to ``benchmarks/results/soak.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import socket
import struct
import sys
import threading
import time

HERE = pathlib.Path(__file__).parent
TOPIC = "soak"
PARTITIONS = 3


def _sink(port_out) -> None:
    """The sink broker's process: one thread per connection, answers and forgets."""
    from kafkacore.errors import Errors
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    port_out.put(port)
    offsets = [0] * PARTITIONS
    lock = threading.Lock()
    versions = {ApiKey.PRODUCE: 11, ApiKey.METADATA: 12, ApiKey.API_VERSIONS: 4,
                ApiKey.INIT_PRODUCER_ID: 5}

    def answer(header, body):
        key = header["request_api_key"]
        if key == ApiKey.API_VERSIONS:
            return {"error_code": Errors.NONE, "throttle_time_ms": 0, "api_keys": [
                {"api_key": k, "min_version": 0, "max_version": v} for k, v in versions.items()]}
        if key == ApiKey.METADATA:
            return {"brokers": [{"node_id": 0, "host": "127.0.0.1", "port": port, "rack": None}],
                    "controller_id": 0, "topics": [{
                        "error_code": Errors.NONE, "name": TOPIC, "is_internal": False, "partitions": [
                            {"error_code": Errors.NONE, "partition_index": p, "leader_id": 0,
                             "leader_epoch": 0, "replica_nodes": [0], "isr_nodes": [0],
                             "offline_replicas": []} for p in range(PARTITIONS)]}]}
        if key == ApiKey.INIT_PRODUCER_ID:
            return {"throttle_time_ms": 0, "error_code": Errors.NONE, "producer_id": 1, "producer_epoch": 0}
        if key == ApiKey.PRODUCE:
            responses = []
            for t in body["topic_data"]:
                parts = []
                for p in t["partition_data"]:
                    records = p["records"]
                    # record count: the last 4 bytes of the batch header (offset 57)
                    (count,) = struct.unpack_from(">i", records, 57)
                    with lock:
                        base = offsets[p["index"]]
                        offsets[p["index"]] += count
                    parts.append({"index": p["index"], "error_code": Errors.NONE, "base_offset": base,
                                  "log_append_time_ms": -1, "log_start_offset": 0})
                responses.append({"name": t["name"], "partition_responses": parts})
            return {"responses": responses, "throttle_time_ms": 0}
        raise ValueError(f"the sink does not answer api key {key}")

    def serve(conn):
        buf = bytearray()
        with conn:
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (size,) = struct.unpack_from(">i", buf)
                    if len(buf) < 4 + size:
                        break
                    frame = bytes(buf[4:4 + size])
                    del buf[:4 + size]
                    header, body = codec.decode_request(frame)
                    out = b"".join(codec.encode_response(
                        header["request_api_key"], header["request_api_version"],
                        header["correlation_id"], answer(header, body)))
                    conn.sendall(struct.pack(">i", len(out)) + out)

    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--warmup", type=int, default=2_000_000)
    parser.add_argument("--every", type=int, default=500_000)
    parser.add_argument("--out", default=str(HERE / "results" / "soak.json"))
    args = parser.parse_args(argv)

    from kafkacore import KafkaProducer

    ctx = multiprocessing.get_context("spawn")
    port_q = ctx.Queue()
    sink = ctx.Process(target=_sink, args=(port_q,), daemon=True)
    sink.start()
    port = port_q.get(timeout=30)
    value = b"v" * 100
    called = [0]

    def callback(metadata, exception):
        called[0] += 1

    samples: list[tuple[int, int]] = []
    start = time.monotonic()
    try:
        with KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", linger_ms=5,
                           batch_size=65536, buffer_memory=32 << 20) as producer:
            producer.partitions_for(TOPIC)
            samples.append((0, rss_bytes()))
            for i in range(args.records):
                producer.send(TOPIC, value, key=b"k%d" % i if i % 10 == 0 else None,
                              callback=callback if i % 100 == 0 else None)
                if (i + 1) % args.every == 0:
                    samples.append((i + 1, rss_bytes()))
                    print(f"{i + 1:>11,} records  RSS {samples[-1][1] / 2**20:8.1f} MiB", flush=True)
            producer.flush()
        samples.append((args.records, rss_bytes()))
    finally:
        sink.kill()
    elapsed = time.monotonic() - start
    after = [rss for n, rss in samples if n >= args.warmup]
    lo, hi = min(after), max(after)
    spread = (hi - lo) / lo
    result = {
        "records": args.records, "seconds": round(elapsed, 1),
        "records_per_second": round(args.records / elapsed),
        "rss_mib_after_warmup": {"min": round(lo / 2**20, 1), "max": round(hi / 2**20, 1)},
        "spread_after_warmup": round(spread, 4), "callbacks": called[0],
        "samples": [(n, round(rss / 2**20, 1)) for n, rss in samples],
    }
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.records:,} records in {elapsed:.0f} s; RSS after warm-up {lo / 2**20:.1f}.."
          f"{hi / 2**20:.1f} MiB (spread {spread:.1%}); callbacks {called[0]:,}")
    expected_callbacks = (args.records + 99) // 100
    if called[0] != expected_callbacks:
        print(f"FAIL: {called[0]} callbacks, expected {expected_callbacks}")
        return 1
    return 0 if spread <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
