"""kcat (librdkafka's command-line client): produce, consume, consume in a group, list
metadata, query offsets and produce in a transaction; it has no admin calls
(tests/compat/harness.py says what a driver does)."""

from __future__ import annotations

import json
import subprocess

import harness
from harness import RECORDS, TIMEOUT_S, check

NO_ADMIN = "no call (kcat produces, consumes, queries offsets and lists metadata)"


def kcat(*args, stdin=None):
    """kcat's standard output; its error text is the call's error when it exits non-zero."""
    done = subprocess.run(["kcat", "-q", *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT_S * 2)
    if done.returncode != 0:
        errors = [ln for ln in done.stderr.splitlines() if "ERROR" in ln or "rror" in ln]
        raise RuntimeError((errors or done.stderr.splitlines() or [f"exit {done.returncode}"])[-1])
    return done.stdout


def lines():
    return "".join(f"v{i}\n" for i in range(RECORDS))


def read_back(bootstrap, name, *more):
    out = kcat("-C", "-b", bootstrap, "-t", name, "-p", "0", "-o", "beginning", "-e",
               "-c", str(RECORDS), *more)
    return out.split()


def produce(bootstrap, name):
    harness.topic(bootstrap, name)
    kcat("-P", "-b", bootstrap, "-t", name, "-p", "0", "-X", "acks=all", stdin=lines())
    check(read_back(bootstrap, name) == lines().split(), "records not read back")


def consume(bootstrap, name):
    harness.filled(bootstrap, name)
    got = read_back(bootstrap, name)
    check(got == lines().split(), f"read back {got}")


def group_consume(bootstrap, name):
    harness.filled(bootstrap, name)
    out = kcat("-b", bootstrap, "-G", name, "-o", "beginning", "-e", "-c", str(RECORDS),
               "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", name)
    check(out.split() == lines().split(), f"read back {out.split()}")
    # kcat cannot show a group's offsets: confluent-kafka reads what kcat committed on leaving.
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name})
    try:
        [tp] = c.committed([TopicPartition(name, 0)], timeout=TIMEOUT_S)
    finally:
        c.close()
    check(tp.offset == RECORDS, f"committed offset {tp.offset}")


def metadata(bootstrap, name):
    harness.topic(bootstrap, name)
    listed = json.loads(kcat("-L", "-J", "-b", bootstrap, "-t", name))
    check([t["topic"] for t in listed["topics"]] == [name] and not listed["topics"][0].get("err"),
          f"listed {listed['topics']}")


def list_offsets(bootstrap, name):
    harness.filled(bootstrap, name)
    out = kcat("-Q", "-b", bootstrap, "-t", f"{name}:0:-1")  # -1: the end of the log
    check(f"offset {RECORDS}" in out, f"answered {out.strip()}")


def transactions(bootstrap, name):
    harness.topic(bootstrap, name)
    kcat("-P", "-b", bootstrap, "-t", name, "-p", "0", "-X", f"transactional.id={name}",
         stdin=lines())
    got = read_back(bootstrap, name, "-X", "isolation.level=read_committed")
    check(got == lines().split(), f"read back {got}")


if __name__ == "__main__":
    harness.main({call: NO_ADMIN for call in harness.CALL_NAMES} | {
        "produce": produce, "consume": consume, "group_consume": group_consume,
        "metadata": metadata, "list_offsets": list_offsets, "transactions": transactions,
        "consumer_group_consume": "no call (its librdkafka 2.0 has the classic group protocol "
                                  "only)",
    })
