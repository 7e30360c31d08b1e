"""Run the client drivers (tests/compat/harness.py) and collect what each call did.

A driver runs in its own process; if a call hangs it (no answer within ``CALL_BOUND_S``) or
crashes it, that call fails with what happened, and the driver is started again for the calls
after it.  Drivers run side by side (their topics and groups carry the client's name).
"""

from __future__ import annotations

import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402  (beside this file)
import npm_cache  # noqa: E402

#: The clients, in the table's order: name -> what the table calls it.
CLIENTS: dict[str, str] = {
    "confluent": "confluent-kafka",
    "kafka_python": "kafka-python",
    "aiokafka": "aiokafka",
    "kcat": "kcat",
    "kafkajs": "kafkajs",
}
#: A call that has not answered in this long hung its client.
CALL_BOUND_S = 45.0


def versions() -> dict[str, str]:
    """Each client's version, or why it cannot run here (then its column says so)."""
    import aiokafka
    import confluent_kafka
    import kafka

    found = {"confluent": f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})",
             "kafka_python": kafka.__version__, "aiokafka": aiokafka.__version__}
    kcat = shutil.which("kcat")
    if kcat:
        out = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10).stdout
        found["kcat"] = _kcat_version(out)
    found["kafkajs"] = npm_cache.VERSION
    return found


def _kcat_version(banner: str) -> str:
    for line in banner.splitlines():
        if line.startswith("Version "):  # Version 1.7.1 (JSON, ..., librdkafka 2.0.2 builtin...
            words = line.split()
            lib = words.index("librdkafka") if "librdkafka" in words else -1
            return words[1] + (f" (librdkafka {words[lib + 1]})" if lib > 0 else "")
    return "?"


def unavailable(client: str) -> str | None:
    """Why ``client`` cannot run on this machine, or None."""
    if client == "kcat" and not shutil.which("kcat"):
        return "kcat is not installed (Debian: apt-get install kcat)"
    if client == "kafkajs":
        return npm_cache.unavailable()
    return None


def command(client: str) -> list[str]:
    if client == "kafkajs":
        return npm_cache.command()
    return [sys.executable, str(HERE / f"{client}_driver.py")]


def run_driver(client: str, bootstrap: str, calls: Iterable[str] = harness.CALL_NAMES,
               env: Mapping[str, str] | None = None,
               log_dir: pathlib.Path | None = None) -> dict[str, dict[str, str]]:
    """``call -> {"status": ..., "detail": ...}`` for each of ``calls`` that ``client`` ran;
    the driver's standard error (its tracebacks, the client's own log) goes to
    ``log_dir/<client>.log`` if given."""
    results: dict[str, dict[str, str]] = {}
    remaining = list(calls)
    # The kafkacore the caller's interpreter has (installed, or built in place): never the
    # source tree put first on the path, which under tox is not built.
    environment = {**os.environ, **(env or {})}
    log = open(log_dir / f"{client}.log", "a") if log_dir else subprocess.DEVNULL  # noqa: SIM115
    try:
        while remaining:
            remaining = _run_once(client, bootstrap, remaining, environment, log, results)
    finally:
        if log_dir:
            log.close()
    return results


def _run_once(client, bootstrap, remaining, environment, log, results) -> list[str]:
    """Start the driver for ``remaining``; record what it answers in ``results``; return the
    calls it did not get to (it hung or died before them)."""
    proc = subprocess.Popen([*command(client), bootstrap, *remaining], stdout=subprocess.PIPE,
                            stderr=log, text=True, env=environment, cwd=HERE)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump(out=proc.stdout):
        for line in out:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    running = None
    try:
        while True:
            try:
                line = lines.get(timeout=CALL_BOUND_S)
            except queue.Empty:
                results[running or remaining[0]] = {
                    "status": "fails", "detail": f"no answer within {CALL_BOUND_S:.0f} s (the client hung)"}
                break
            if line is None:  # the driver ended
                if running is not None:
                    results[running] = {"status": "fails",
                                        "detail": f"the client's process died (exit {proc.wait(10)})"}
                break
            try:
                answer = json.loads(line)
            except ValueError:
                continue  # a client's own chatter on stdout
            if answer["status"] == "running":
                running = answer["call"]
            else:
                results[answer["call"]] = {"status": answer["status"], "detail": answer["detail"]}
                running = None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    if not any(c in results for c in remaining):  # the driver did not start at all
        for c in remaining:
            results[c] = {"status": "fails", "detail": f"the {client} driver did not start"}
    return [c for c in remaining if c not in results]


def run_all(bootstrap: str, clients: Iterable[str] = CLIENTS, calls: Iterable[str] = harness.CALL_NAMES,
            env: Mapping[str, str] | None = None,
            log_dir: pathlib.Path | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """Every available driver against ``bootstrap``, side by side: client -> call -> result."""
    runnable = [c for c in clients if unavailable(c) is None]
    out: dict[str, dict[str, dict[str, str]]] = {}
    threads = [threading.Thread(target=lambda c=c: out.__setitem__(
        c, run_driver(c, bootstrap, calls, env, log_dir))) for c in runnable]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {c: out[c] for c in runnable}
