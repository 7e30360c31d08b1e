"""The hunt for "SystemError: deallocated bytearray object has exported buffers" at exit (issue 11).

A local tansu broker advertises the port of a TCP proxy that cuts (and sometimes stalls)
connections at random; each run is a fresh ``python -X dev`` process whose producer sends
bytes, bytearray and memoryview values (and columns through ``send_batch``) through the proxy,
then exits — usually without ``close()``, sometimes in the middle of one.  Its stderr is searched
for the SystemError, a fatal error or a crash.

    python benchmarks/chaos_exit.py [--runs 200]

Prints one line per run that showed a problem, then a summary; exits 1 if any did.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import threading
import time

PROBLEMS = ("SystemError", "exported buffers", "Fatal Python error", "Segmentation fault",
            "Traceback")


def child(broker: str, proxy_port: int, topic: str, seed: int) -> None:
    """One run: proxy threads and a producer in this process; exits without tidying up."""
    from kafkacore import KafkaProducer
    from kafkacore.admin import create_topics

    rng = random.Random(seed)
    host, port = broker.rsplit(":", 1)
    pairs: list[tuple[socket.socket, socket.socket]] = []
    lock = threading.Lock()
    stalled = threading.Event()

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                while stalled.is_set():
                    time.sleep(0.005)
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    server = socket.create_server(("127.0.0.1", proxy_port))

    def accept() -> None:
        while True:
            try:
                c, _ = server.accept()
                u = socket.create_connection((host, int(port)))
            except OSError:
                continue
            with lock:
                pairs.append((c, u))
            threading.Thread(target=pipe, args=(c, u), daemon=True).start()
            threading.Thread(target=pipe, args=(u, c), daemon=True).start()

    def chaos() -> None:
        while True:
            time.sleep(rng.uniform(0.005, 0.08))
            if rng.random() < 0.2:
                stalled.set()
                time.sleep(rng.uniform(0.01, 0.3))
                stalled.clear()
                continue
            with lock:
                if not pairs:
                    continue
                c, u = pairs.pop(rng.randrange(len(pairs)))
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    threading.Thread(target=accept, daemon=True).start()
    threading.Thread(target=chaos, daemon=True).start()
    try:
        create_topics(broker, {topic: 3})
    except Exception:  # noqa: BLE001 - the run goes on: sends then fail, which is fine too
        pass
    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{proxy_port}", linger_ms=rng.choice([0, 1, 5]),
        batch_size=rng.choice([512, 4096, 16384]),
        compression_type=rng.choice(["none", "gzip", "lz4", "zstd", "snappy"]),
        request_timeout_ms=2000, delivery_timeout_ms=5000, max_block_ms=2000,
        close_timeout_at_exit_ms=rng.choice([0, 100, 2000]),
    )
    kinds = [bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))]
    for i in range(rng.randrange(100, 3000)):
        value = rng.choice(kinds)(b"v%d" % i * rng.randrange(1, 50))
        try:
            producer.send(topic, value, key=bytearray(b"k%d" % (i % 13)))
            if rng.random() < 0.01:
                producer.send_batch(topic, [bytearray(b"x" * 10) for _ in range(50)])
        except Exception:  # noqa: BLE001 - a typed error from the producer is fine here
            break
    ending = rng.random()
    if ending < 0.2:
        producer.close(rng.choice([0, 0.05]))
    elif ending < 0.4:  # exit while another thread is in close()
        threading.Thread(target=producer.close, args=(1,), daemon=True).start()
        time.sleep(rng.uniform(0, 0.05))
    # otherwise: exit without close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--child", nargs=4, metavar=("BROKER", "PROXY_PORT", "TOPIC", "SEED"))
    args = parser.parse_args(argv)
    if args.child:
        broker, proxy_port, topic, seed = args.child
        child(broker, int(proxy_port), topic, int(seed))
        return 0

    from kafkacore.testing.localbroker import free_port, resolve_broker_binary

    real, proxy = free_port(), free_port()
    tansu = subprocess.Popen(
        [resolve_broker_binary(), "broker", "--listener-url", f"tcp://127.0.0.1:{real}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{proxy}",
         "--storage-engine", "memory://tansu/", "--cluster-id", "chaos"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    bad_runs = 0
    try:
        time.sleep(1.0)
        for run in range(args.runs):
            done = subprocess.run(
                [sys.executable, "-X", "dev", __file__, "--child", f"127.0.0.1:{real}",
                 str(proxy), f"chaos{run}", str(run)],
                capture_output=True, text=True, timeout=120, env=dict(os.environ),
            )
            lines = [x for x in done.stderr.splitlines() if any(p in x for p in PROBLEMS)]
            if lines or done.returncode != 0:
                bad_runs += 1
                print(f"run {run}: exit {done.returncode}", *lines[:5], sep="\n  ", flush=True)
    finally:
        tansu.kill()
        tansu.wait()
    print(f"{args.runs} runs under python -X dev, {bad_runs} with a problem")
    return 1 if bad_runs else 0


if __name__ == "__main__":
    sys.exit(main())
