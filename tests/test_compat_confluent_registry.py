"""confluent-kafka-python's serializer producer examples (``avro_producer.py``,
``json_producer.py``, ``protobuf_producer.py``, copied as they are into
tests/confluent_scripts/examples with the files they read) run on kafkacore.compat.confluent
with only their import line changed, against a local Schema Registry stand-in
(tests/support/schema_registry.py).

Each runs twice against our broker, as it is (confluent-kafka) and with the producer from
``kafkacore.compat.confluent``.  Their delivery lines must agree, and what they wrote, read
back raw and then decoded by confluent-kafka's own deserializer against the same registry,
must be the records typed in, byte for byte the same in both runs.

``asyncio_avro_producer.py`` (confluent's async serializer feeding the AIOProducer) runs the
same way.  Not run: the ``*_encryption.py`` ones (they need a KMS).
"""

from __future__ import annotations

import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from readback import read_confluent
from support.children import child_env
from support.schema_registry import SchemaRegistry

pytest.importorskip("confluent_kafka")
# What the serializers import (httpx or httpx2, attrs, fastavro, jsonschema, protobuf, ...).
for _module in ("avro", "json_schema", "protobuf"):
    pytest.importorskip(f"confluent_kafka.schema_registry.{_module}", reason="confluent-kafka's schema-registry extras "
                        "(confluent-kafka[schemaregistry,avro,json,protobuf]) are not installed")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

EXAMPLES = pathlib.Path(__file__).parent / "confluent_scripts" / "examples"
#: Each example's import line, and what it becomes: only the producer changes hands.
IMPORTS = {
    "asyncio_avro_producer.py": ("from confluent_kafka.aio import AIOProducer\n",
                                 "from kafkacore.compat.confluent.aio import AIOProducer\n"),
}
IMPORT = ("from confluent_kafka import Producer\n",
          "from kafkacore.compat.confluent import Producer\n")
USERS = [("alice", 7, "blue"), ("bob", 42, "green"), ("carol", 3, "red")]
UUID = re.compile(r"b'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'")


@pytest.fixture
def ours_only(broker):
    """Two clients and their processes per example: on our broker only."""
    if broker.kind != "kafkacore":
        pytest.skip("run against kafkacore's broker only")
    return broker


@pytest.fixture(scope="module")
def registry():
    with SchemaRegistry() as running:
        yield running


def _copy(name: str, ours: bool, tmp: pathlib.Path) -> pathlib.Path:
    """The example (its import changed when ``ours``) and what it reads from beside it."""
    text = (EXAMPLES / name).read_text()
    line, replacement = IMPORTS.get(name, IMPORT)
    assert text.count(line) == 1, name
    (tmp / name).write_text(text.replace(line, replacement) if ours else text)
    for folder in ("avro", "protobuf"):
        shutil.copytree(EXAMPLES / folder, tmp / folder)
    # six (for six.moves.input) is not among the test dependencies: a stand-in.
    (tmp / "six").mkdir()
    (tmp / "six" / "__init__.py").write_text("")
    (tmp / "six" / "moves.py").write_text("input = input\n")
    return tmp / name


def _run(name: str, ours: bool, args: list[str], lines: list[str]) -> str:
    """Type ``lines`` into the example; once it asks for the next record's name, stop it as a
    user would (^C; EOF for protobuf_producer.py, which stops on either) and return its
    output."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        path = _copy(name, ours, tmp)
        out_path = tmp / "out.txt"
        with open(out_path, "w") as out:
            child = subprocess.Popen([sys.executable, str(path), *args], stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                     text=True, env=child_env(PYTHONUNBUFFERED="1"), cwd=tmp)
        try:
            assert child.stdin is not None
            child.stdin.write("".join(line + "\n" for line in lines))
            child.stdin.flush()
            deadline = time.monotonic() + 60
            while out_path.read_text().count("Enter name: ") <= len(USERS):
                assert child.poll() is None, out_path.read_text()[-3000:]
                assert time.monotonic() < deadline, out_path.read_text()[-3000:]
                time.sleep(0.1)
            if name == "protobuf_producer.py":
                child.stdin.close()
            else:
                child.send_signal(signal.SIGINT)
            assert child.wait(timeout=60) == 0, out_path.read_text()[-3000:]
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        return out_path.read_text()


def _avro(registry: SchemaRegistry) -> object:
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    return AvroDeserializer(SchemaRegistryClient({"url": registry.url}))


def _json(registry: SchemaRegistry) -> object:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    return JSONDeserializer(None, schema_registry_client=SchemaRegistryClient(
        {"url": registry.url}))


def _protobuf(registry: SchemaRegistry) -> object:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    sys.path.insert(0, str(EXAMPLES))
    try:
        from protobuf import user_pb2
    finally:
        sys.path.remove(str(EXAMPLES))
    deserializer = ProtobufDeserializer(user_pb2.User, {"use.deprecated.format": False},
                                        schema_registry_client=SchemaRegistryClient(
                                            {"url": registry.url}))

    def as_dict(value, ctx):
        user = deserializer(value, ctx)
        return {"name": user.name, "favorite_number": user.favorite_number,
                "favorite_color": user.favorite_color}
    return as_dict


@pytest.mark.parametrize("name, deserializer", [
    ("avro_producer.py", _avro), ("json_producer.py", _json),
    ("protobuf_producer.py", _protobuf)])
def test_serializer_example(ours_only, registry, make_topic, name, deserializer):
    if name == "protobuf_producer.py":
        lines = [x for user in USERS for x in (user[0], str(user[1]), user[2])]
    else:  # name, address (which the example leaves out of the record), number, colour
        lines = [x for user in USERS for x in (user[0], "1 Main St", str(user[1]), user[2])]
    decode = deserializer(registry)
    results = {}
    for ours in (False, True):
        topic = make_topic(1)
        text = _run(name, ours, ["-b", ours_only.bootstrap, "-s", registry.url, "-t", topic],
                    lines)
        # Delivery lines follow the prompts (no newline after those) on stdout.
        delivered = re.findall(r"User record .*? at offset \d+", text)
        records = read_confluent(ours_only.bootstrap, topic, 1, len(USERS))
        context = SerializationContext(topic, MessageField.VALUE)
        keys = [UUID.search(x).group() for x in delivered]  # type: ignore[union-attr]
        assert keys == [repr(r.key) for r in records], (delivered, records)
        users = [decode(r.value, context) for r in records]
        results[ours] = ([UUID.sub("KEY", x.replace(topic, "TOPIC")) for x in delivered],
                         [r.value for r in records], users)
    assert results[True] == results[False]
    delivered, _, users = results[True]
    assert delivered == [f"User record KEY successfully produced to TOPIC [0] at offset {i}"
                         for i in range(len(USERS))]
    assert users == [{"name": n, "favorite_number": f, "favorite_color": c}
                     for n, f, c in USERS]


def test_asyncio_avro_producer_py(ours_only, registry, make_topic):
    decode = _avro(registry)
    results = {}
    for ours in (False, True):
        topic = make_topic(1)
        with tempfile.TemporaryDirectory() as tmp_name:
            path = _copy("asyncio_avro_producer.py", ours, pathlib.Path(tmp_name))
            done = subprocess.run(
                [sys.executable, str(path), "-b", ours_only.bootstrap, "-s", registry.url,
                 "-t", topic], capture_output=True, text=True, timeout=90, env=child_env(),
                cwd=tmp_name)
        assert done.returncode == 0, ("ours" if ours else "confluent", done.stderr[-3000:])
        [record] = read_confluent(ours_only.bootstrap, topic, 1, 1)
        context = SerializationContext(topic, MessageField.VALUE)
        results[ours] = (done.stdout.replace(topic, "TOPIC"), record.value,
                         decode(record.value, context))
    assert results[True] == results[False]
    assert results[True][0] == "Produced to TOPIC [0] @ 0\n"
    assert results[True][2] == {"name": "alice"}


def test_stand_in_answers_what_it_does_not_know_as_schema_registry(registry):
    """confluent-kafka's client sees the stand-in's 404s as Schema Registry's errors."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = SchemaRegistryClient({"url": registry.url})
    for call, code in [(lambda: client.get_schema(10_000), 40403),
                       (lambda: client.get_latest_version("no-such-subject"), 40401)]:
        with pytest.raises(SchemaRegistryError) as raised:
            call()
        assert (raised.value.http_status_code, raised.value.error_code) == (404, code)
