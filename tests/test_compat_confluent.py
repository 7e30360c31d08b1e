"""kafkacore.compat.confluent.Producer runs confluent-kafka's producer scripts unchanged but for
the import.  Each script in tests/confluent_scripts runs twice against the same broker: as it
is (confluent-kafka, librdkafka) and with ``confluent_kafka`` replaced by
``kafkacore.compat.confluent`` in its import line.  What they print must be the same (topic names
aside), and what they wrote, read back by confluent-kafka's consumer, too."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

import pytest
from readback import read_confluent
from support.children import child_env

from kafkacore.compat import confluent
from kafkacore.errors import ConfigError

SCRIPTS = pathlib.Path(__file__).parent / "confluent_scripts"
IMPORT = "from confluent_kafka import "

pytest.importorskip("confluent_kafka")


def _run(script: pathlib.Path, bootstrap: str, topic: str, ours: bool, stdin: str = "") -> str:
    text = script.read_text()
    assert text.count(IMPORT) == 1
    if ours:
        text = text.replace(IMPORT, "from kafkacore.compat.confluent import ")
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / script.name
        path.write_text(text)
        done = subprocess.run([sys.executable, str(path), bootstrap, topic], input=stdin,
                              capture_output=True, text=True, timeout=120, env=child_env(),
                              cwd=tmp)
    assert done.returncode == 0, (script.name, "ours" if ours else "confluent", done.stderr)
    return done.stdout.replace(topic, "TOPIC")


@pytest.mark.parametrize("name, records", [
    ("readme_loop.py", 4),
    ("stdin_lines.py", 10),
    ("getting_started.py", 5),
    ("threads_and_with.py", 15),
    ("librdkafka_settings.py", 5),
])
def test_a_confluent_kafka_script_runs_unchanged_but_for_the_import(bootstrap, make_topic,
                                                                     name, records):
    stdin = "".join(f"line {i}\n" for i in range(10))
    theirs_topic, ours_topic = make_topic(1), make_topic(1)
    theirs = _run(SCRIPTS / name, bootstrap, theirs_topic, ours=False, stdin=stdin)
    ours = _run(SCRIPTS / name, bootstrap, ours_topic, ours=True, stdin=stdin)
    # The same lines; the delivery reports in the same order.  Where poll() returns among the
    # reports depends on how the records were batched, in either client: not compared.
    assert sorted(ours.splitlines()) == sorted(theirs.splitlines())
    reports = [[line for line in out.splitlines() if line.startswith("Message produced")]
               for out in (ours, theirs)]
    assert reports[0] == reports[1]
    assert "failed" not in ours.lower()
    got = {t: [(r.key, r.value, r.headers, r.timestamp if r.value == b"v4" else None)
               for r in read_confluent(bootstrap, t, 1, records)]
           for t in (theirs_topic, ours_topic)}
    if name == "threads_and_with.py":  # three threads: the order across them is not fixed
        got = {t: sorted(rows) for t, rows in got.items()}
    assert len(got[ours_topic]) == records
    assert got[ours_topic] == got[theirs_topic]


def test_callbacks_run_on_the_thread_that_polls_and_len_counts_them(bootstrap, make_topic):
    import threading

    topic = make_topic(1)
    seen = []
    with confluent.Producer({"bootstrap.servers": bootstrap}) as p:
        p.produce(topic, "v", callback=lambda err, msg: seen.append(
            (err, msg.offset(), threading.current_thread())))
        assert len(p) == 1
        p._producer.flush(30)  # delivered, but the report waits for poll()
        assert len(p) == 1 and seen == []
        assert p.poll(10) == 1
        assert seen == [(None, 0, threading.current_thread())] and len(p) == 0


def test_a_callback_s_exception_comes_out_of_poll(bootstrap, make_topic):
    topic = make_topic(1)
    p = confluent.Producer({"bootstrap.servers": bootstrap})

    def broken(err, msg):
        raise RuntimeError("in the callback")

    p.produce(topic, b"v", callback=broken)
    with pytest.raises(RuntimeError, match="in the callback"):
        p.flush(30)
    assert p.flush(30) == 0
    p.close()


def test_a_full_queue_is_buffer_error_and_bad_arguments_are_type_errors(bootstrap, make_topic):
    topic = make_topic(1)
    p = confluent.Producer({"bootstrap.servers": bootstrap, "queue.buffering.max.messages": 2,
                            "on_delivery": lambda err, msg: None})
    p.produce(topic, b"1")
    p.produce(topic, b"2")
    with pytest.raises(BufferError, match="Queue full"):
        p.produce(topic, b"3")
    with pytest.raises(TypeError, match="value must be str, bytes or None"):
        p.produce(topic, 3)
    with pytest.raises(TypeError, match="header name"):
        p.produce(topic, b"v", headers=[(1, b"x")])
    with pytest.raises(TypeError, match="callback"):
        p.produce(topic, b"v", callback="not callable")
    assert p.flush(30) == 0 and len(p) == 0
    p.produce(topic, b"3")  # room again
    assert p.close()


def test_flush_returns_what_is_left_when_time_runs_out(broker, make_topic):
    topic = make_topic(1)
    p = confluent.Producer({"bootstrap.servers": broker.bootstrap})
    p.list_topics(topic, timeout=30)
    p.produce(topic, b"first")
    assert p.flush(30) == 0  # delivered: the producer knows the leader, produce() will not wait
    with broker.paused():  # requests are accepted by the kernel, never answered
        p.produce(topic, b"held")
        assert p.flush(0.3) == 1 and len(p) == 1
    assert p.flush(30) == 0
    p.close()


def test_librdkafka_names_and_kafka_python_s_api_version():
    base = {"bootstrap.servers": "127.0.0.1:9092"}
    from kafkacore.config import ProducerConfig

    cfg = ProducerConfig({**base, "queue.buffering.max.ms": 7, "message.timeout.ms": 90000,
                          "queue.buffering.max.kbytes": 2048, "compression.codec": "lz4",
                          "message.max.bytes": 500000})
    assert (cfg["linger.ms"], cfg["delivery.timeout.ms"], cfg["buffer.memory"],
            cfg["compression.type"], cfg["max.request.size"]) == (7, 90000, 2048 * 1024, "lz4",
                                                                  500000)
    with pytest.raises(ConfigError, match="'linger.ms' given twice"):
        ProducerConfig({**base, "queue.buffering.max.ms": 7, "linger.ms": 5})
    with pytest.raises(ConfigError, match="'dr_cb' is a librdkafka setting that kafkacore "
                                          "has no counterpart for: pass it to send"):
        ProducerConfig({**base, "dr_cb": print})  # KafkaProducer would never call it
    with pytest.raises(ConfigError, match="queue.buffering.max.kbytes"):
        ProducerConfig({**base, "queue.buffering.max.kbytes": "lots"})
    assert ProducerConfig(bootstrap_servers="h:1", api_version=(2, 5))["linger.ms"] == 5


def test_list_topics_names_every_topic_and_the_brokers(bootstrap, make_topic):
    topic = make_topic(2)
    p = confluent.Producer({"bootstrap.servers": bootstrap})
    everything = p.list_topics(timeout=30)
    assert sorted(everything.topics[topic].partitions) == [0, 1]
    assert everything.brokers and all(b.port > 0 for b in everything.brokers.values())
    p.close()
