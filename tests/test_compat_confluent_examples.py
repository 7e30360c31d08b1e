"""confluent-kafka-python's own producer examples (tests/confluent_scripts/examples, copied as
they are from its examples/ folder) run on kafkacore.compat.confluent with only their import
line changed.

Each runs twice against our broker, as it is (confluent-kafka, on librdkafka) and with the
producer's import taken from ``kafkacore.compat.confluent``; what it prints and what it wrote
(read back by confluent-kafka's consumer) must agree.  The consumers, admin clients and
serializers the examples use stay confluent-kafka's: only the producer changes hands.

Producer examples not run here, and why: ``avro_producer.py``, ``json_producer.py``,
``protobuf_producer.py`` and ``asyncio_avro_producer.py`` run in
test_compat_confluent_registry.py, against a Schema Registry stand-in; the ``*_encryption.py``
ones need a KMS;
``confluent_cloud.py`` and ``oauth_oidc_ccloud_*.py`` talk to Confluent Cloud;
``fips/fips_producer.py`` needs a FIPS OpenSSL provider; ``oauth_producer.py`` needs an OAuth
token endpoint and a broker that validates its tokens.
"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
from readback import read_confluent
from support.children import child_env

from kafkacore import KafkaProducer

pytest.importorskip("confluent_kafka")

EXAMPLES = pathlib.Path(__file__).parent / "confluent_scripts" / "examples"
OURS = "kafkacore.compat.confluent"

#: Each example's import line, and what it becomes: the producer (and the names that go with
#: it) from kafkacore, everything else still from confluent-kafka.
IMPORTS = {
    "producer.py": ("from confluent_kafka import Producer",
                    f"from {OURS} import Producer"),
    "eos_transactions.py": (
        "from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition",
        f"from confluent_kafka import Consumer, TopicPartition; "
        f"from {OURS} import KafkaError, Producer"),
    "asyncio_example.py": ("from confluent_kafka.aio import AIOConsumer, AIOProducer",
                           f"from confluent_kafka.aio import AIOConsumer; "
                           f"from {OURS}.aio import AIOProducer"),
    "sasl_producer.py": ("from confluent_kafka import Producer", f"from {OURS} import Producer"),
    "context_manager_example.py": (
        "from confluent_kafka import Consumer, KafkaError, Producer",
        f"from confluent_kafka import Consumer, KafkaError; from {OURS} import Producer"),
}


@pytest.fixture
def ours_only(broker):
    """These run on our broker only: each starts two clients and their processes, and the
    transactional ones need a broker with transactions."""
    if broker.kind != "kafkacore":
        pytest.skip("run against kafkacore's broker only")
    return broker


def _script(name: str, ours: bool, directory: pathlib.Path) -> pathlib.Path:
    text = (EXAMPLES / name).read_text()
    line, replacement = IMPORTS[name]
    assert text.count(line + "\n") == 1, name
    if ours:
        text = text.replace(line + "\n", replacement + "\n")
    path = directory / name
    path.write_text(text)
    return path


def _run(name: str, args: list[str], ours: bool, stdin: str = "",
         timeout: float = 90) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = _script(name, ours, pathlib.Path(tmp))
        done = subprocess.run([sys.executable, str(path), *args], input=stdin,
                              capture_output=True, text=True, timeout=timeout,
                              env=child_env(), cwd=tmp)
    assert done.returncode == 0, (name, "ours" if ours else "confluent", done.stderr[-3000:])
    return done


def test_producer_py(ours_only, make_topic):
    lines = "".join(f"line {i}\n" for i in range(20))
    outputs = {}
    for ours in (False, True):
        topic = make_topic(1)
        done = _run("producer.py", [ours_only.bootstrap, topic], ours, stdin=lines)
        outputs[ours] = (done.stderr.replace(topic, "TOPIC"),
                         [r.value for r in read_confluent(ours_only.bootstrap, topic, 1, 20)])
    delivered = [f"% Message delivered to TOPIC [0] @ {i}" for i in range(20)]
    for stderr, values in outputs.values():
        assert [x for x in stderr.splitlines() if "delivered" in x] == delivered
        assert values == [f"line {i}".encode() for i in range(20)]


def _committed(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offset of ``topic``-0, asked by confluent-kafka (in a child)."""
    code = (
        "import sys\n"
        "from confluent_kafka import Consumer, TopicPartition\n"
        "c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': sys.argv[2]})\n"
        "print(c.committed([TopicPartition(sys.argv[3], 0)], timeout=30)[0].offset)\n"
        "c.close()\n")
    done = subprocess.run([sys.executable, "-c", code, bootstrap, group, topic],
                          capture_output=True, text=True, timeout=60, env=child_env())
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_eos_transactions_py(ours_only, make_topic):
    bootstrap = ours_only.bootstrap
    source = make_topic(1)
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(150):  # 150: one commit at the 100th message, one at the end
            producer.send(source, b"value %d" % i, key=b"key %d" % i)
    results = {}
    for ours in (False, True):
        output, group = make_topic(1), f"eos-{uuid.uuid4()}"
        done = _run("eos_transactions.py",
                    ["-b", bootstrap, "-t", source, "-o", output, "-g", group], ours)
        written = read_confluent(bootstrap, output, 1, 150,
                                 config={"isolation.level": "read_committed"})
        results[ours] = (done.stdout.replace(source, "IN"), [(r.key, r.value) for r in written],
                         _committed(bootstrap, group, source))
    assert results[True] == results[False]
    stdout, written, committed = results[True]
    assert "=== Committing transaction with 100 messages at input offset 99 ===" in stdout
    assert "=== Committing final transaction with 50 messages ===" in stdout
    assert len(written) == 150 and committed == 150


def test_context_manager_example_py(ours_only):
    outputs = [
        _run("context_manager_example.py", [ours_only.bootstrap], ours).stdout
        for ours in (False, True)]
    for out in outputs:
        assert "Produced 5 messages to topic 'context-manager-example'" in out
        assert "=== All examples completed successfully! ===" in out
    delivered = [[x for x in out.splitlines() if x.startswith("Message delivered")]
                 for out in outputs]
    assert len(delivered[1]) == 5
    assert [x.rsplit("@", 1)[0] for x in delivered[1]] == [
        x.rsplit("@", 1)[0] for x in delivered[0]]


def _until_signalled(name: str, args: list[str], ours: bool, ready: str,
                     stdin: str | None = None, timeout: float = 60) -> str:
    """Run an example that stops on SIGINT: send it once its output (stdout or stderr,
    merged) shows ``ready``, then return all it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _script(name, ours, pathlib.Path(tmp))
        if name == "sasl_producer.py":
            # six (for six.moves.input) is not among the test dependencies: a stand-in.
            (pathlib.Path(tmp) / "six").mkdir()
            (pathlib.Path(tmp) / "six" / "__init__.py").write_text("")
            (pathlib.Path(tmp) / "six" / "moves.py").write_text("input = input\n")
        out_path = pathlib.Path(tmp) / "out.txt"
        with open(out_path, "w") as out:
            child = subprocess.Popen([sys.executable, str(path), *args], stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                     text=True, env=child_env(PYTHONUNBUFFERED="1"), cwd=tmp)
        try:
            if stdin is not None:
                assert child.stdin is not None
                child.stdin.write(stdin)
                child.stdin.flush()
            deadline = time.monotonic() + timeout
            while ready not in out_path.read_text():
                assert child.poll() is None, out_path.read_text()[-3000:]
                assert time.monotonic() < deadline, out_path.read_text()[-3000:]
                time.sleep(0.1)
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=60) == 0, out_path.read_text()[-3000:]
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        return out_path.read_text()


def test_asyncio_example_py(ours_only, make_topic):
    outputs = {}
    for ours in (False, True):
        topic = make_topic(1)
        # Ready once a transaction of ten was delivered and committed, and another began.
        text = _until_signalled("asyncio_example.py", [ours_only.bootstrap, topic], ours,
                                ready="Produced 10 messages", timeout=60)
        outputs[ours] = text.replace(topic, "TOPIC")
    for text in outputs.values():
        assert "Closed producer" in text, text[-2000:]
        assert "INFO:__main__:Produced to: TOPIC [0] @ 0" in text, text[-2000:]
        assert "Kafka error" not in text, text[-2000:]


def test_sasl_producer_py(tmp_path, make_topic):
    from kafkacore.broker.server.broker_server import Broker

    settings = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                "sasl.users": "alice:alice-secret", "num.partitions": 1}
    auth = {"bootstrap.servers": None, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
            "sasl.password": "alice-secret"}
    lines = "".join(f"key{i}|value {i}\n" for i in range(5))
    with Broker(settings) as broker:
        auth["bootstrap.servers"] = broker.bootstrap_servers
        for ours in (False, True):
            topic = f"sasl-{'ours' if ours else 'theirs'}"
            text = _until_signalled(
                "sasl_producer.py", ["-b", broker.bootstrap_servers, "-t", topic, "-m",
                                     "SCRAM-SHA-512", "-u", "alice", "-s", "alice-secret"],
                ours, ready=">" * 6, stdin=lines)
            assert "Flushing" in text, text
            got = read_confluent(broker.bootstrap_servers, topic, 1, 5, config=auth)
            assert [(r.key, r.value) for r in got] == [
                (b"key%d" % i, b"value %d" % i) for i in range(5)]

