"""Two attacks on the broker's network layer, measured from outside (loopback only, bounded).

``never-reading``: 60 connections each ask for a 16 MiB fetch and never read the answer; we
report the broker's resident memory before and after (VmRSS from /proc).  ``fd-limit``: the
broker runs with RLIMIT_NOFILE lowered; 300 connections exhaust it; we report the broker's CPU
time over 5 s and how much it logged meanwhile.

    python benchmarks/attack_network.py never-reading [--tree PATH]
    python benchmarks/attack_network.py fd-limit [--tree PATH]

``--tree`` runs the broker from another checkout (to compare with main).  See
docs/broker/network.rst for the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20


def start_broker(tree: str, stderr_path: str, nofile: int | None = None,
                 extra: list[str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "PYTHONPATH": tree}

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with open(stderr_path, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "kafkacore.broker", "--log-level", "INFO", *(extra or [])],
            stdout=subprocess.PIPE, stderr=err, env=env, cwd=tempfile.gettempdir(),
            preexec_fn=limit)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("kafkacore-broker listening on "):
        raise SystemExit(f"the broker did not start: {open(stderr_path).read()[-2000:]}")
    return process, line.rsplit(" ", 1)[1].strip()


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch_frame(topic: str, correlation_id: int, max_bytes: int) -> bytes:
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": max_bytes}]}]}
    payload = b"".join(codec.encode_request(ApiKey.FETCH, 4, correlation_id, "attack", body))
    return len(payload).to_bytes(4, "big") + payload


def never_reading(tree: str, connections: int = 60, mib: int = 16) -> None:
    from kafkacore import KafkaProducer

    log = os.path.join(tempfile.gettempdir(), "attack-never-reading.log")
    process, bootstrap = start_broker(tree, log)
    host, port = bootstrap.rsplit(":", 1)
    sockets = []
    try:
        with KafkaProducer({"bootstrap.servers": bootstrap, "batch.size": MIB,
                            "linger.ms": 20}) as producer:
            for i in range(mib * 8):
                producer.send("attack", bytes([i % 251]) * (MIB // 8 - 100), partition=0)
            producer.flush(60)
        time.sleep(1)
        before = rss_mib(process.pid)
        for i in range(connections):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect((host, int(port)))
            s.sendall(fetch_frame("attack", i, mib * MIB))
            sockets.append(s)
        time.sleep(5)  # a benchmark, not a test: the handlers answer within this
        after = rss_mib(process.pid)
        print(f"never-reading: {connections} connections x {mib} MiB fetch: broker RSS "
              f"{before:.0f} MiB before, {after:.0f} MiB after ({after - before:+.0f} MiB)")
    finally:
        for s in sockets:
            s.close()
        process.terminate()
        process.wait(30)


def fd_limit(tree: str, nofile: int = 64, connections: int = 300, window_s: float = 5.0) -> None:
    log = os.path.join(tempfile.gettempdir(), "attack-fd-limit.log")
    process, bootstrap = start_broker(tree, log, nofile=nofile)
    host, port = bootstrap.rsplit(":", 1)
    sockets = []
    try:
        for _ in range(connections):
            sockets.append(socket.create_connection((host, int(port)), timeout=10))
        time.sleep(1)  # the acceptor reaches the limit
        cpu0, size0 = cpu_s(process.pid), os.path.getsize(log)
        time.sleep(window_s)
        cpu1, size1 = cpu_s(process.pid), os.path.getsize(log)
        with open(log, errors="replace") as f:
            warnings = f.read().count("accept failed")
        print(f"fd-limit: RLIMIT_NOFILE={nofile}, {connections} connections: broker CPU "
              f"{100 * (cpu1 - cpu0) / window_s:.0f}% of a core over {window_s:.0f} s, log grew "
              f"{(size1 - size0) / 1024:.0f} KiB ({warnings} 'accept failed' lines in all)")
    finally:
        for s in sockets:
            s.close()
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("attack", choices=["never-reading", "fd-limit"])
    parser.add_argument("--tree", default=HERE, help="the kafkacore checkout the broker runs")
    args = parser.parse_args()
    if args.attack == "never-reading":
        never_reading(os.path.abspath(args.tree))
    else:
        fd_limit(os.path.abspath(args.tree))


if __name__ == "__main__":
    main()
