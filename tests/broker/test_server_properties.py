"""Settings and SASL users from files (server.properties, a JAAS file), never the command line."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

import pytest
from readback import produce_confluent, read_confluent
from support.children import child_env

from kafkacore import KafkaProducer, errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.config.server_properties import (
    jaas_settings,
    load_properties,
    parse_jaas_file,
    parse_properties,
)

JAAS = """
// the broker's users (Kafka's kafka_server_jaas.conf)
KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin"
   password="admin-secret"
   user_admin="admin-secret"
   user_alice="alice;s3cret";
};
"""


def test_java_properties_format():
    text = ("# a comment\n! another\n\nlisteners = PLAINTEXT://127.0.0.1:0\n"
            "num.network.threads: 2\nlog.dirs /data/a,\\\n    /data/b\n"
            "x.escaped=tab\\there \\u00e9\nx.empty=\n")
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://127.0.0.1:0", "num.network.threads": "2",
        "log.dirs": "/data/a,/data/b", "x.escaped": "tab\there \u00e9", "x.empty": ""}


def test_jaas_file_users_become_the_listener_setting(tmp_path):
    path = tmp_path / "jaas.conf"
    path.write_text(JAAS)
    path.chmod(0o600)
    [(module, options)] = parse_jaas_file(JAAS)["KafkaServer"]
    assert module.endswith("PlainLoginModule") and options["user_alice"] == "alice;s3cret"
    found = jaas_settings(path, ["SASL_PLAINTEXT"])
    assert list(found) == ["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    (tmp_path / "bad.conf").write_text("Client { x required a=\"b\"; };")
    with pytest.raises(errors.ConfigError, match="no KafkaServer section"):
        jaas_settings(tmp_path / "bad.conf", ["SASL_PLAINTEXT"])


def test_a_broker_started_from_files_keeps_its_secrets_off_the_command_line(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("listeners=SASL_PLAINTEXT://127.0.0.1:0\n"
                          "sasl.enabled.mechanisms=PLAIN\nnum.network.threads=1\n"
                          "num.partitions=1\n")
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    for f in (properties, jaas):
        f.chmod(0o600)
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.broker", str(properties), "--jaas-config", str(jaas),
         "--config", f"log.dirs={tmp_path / 'data'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(),
        cwd=tempfile.gettempdir())
    try:
        line = process.stdout.readline().decode()
        assert line.startswith("kafkacore-broker listening on "), process.stderr.read1()
        bootstrap = line.rsplit(" ", 1)[1].strip()
        with open(f"/proc/{process.pid}/cmdline", "rb") as f:
            cmdline = f.read()
        assert b"s3cret" not in cmdline and b"admin-secret" not in cmdline
        # confluent-kafka (librdkafka) is the judge: the file's user gets in, a guess does not.
        config = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": "alice", "sasl.password": "alice;s3cret"}
        delivered, problems = produce_confluent(bootstrap, "from-files", [b"a", b"b"], config)
        assert None not in delivered, problems
        wrong = {**config, "sasl.password": "guess"}
        delivered, problems = produce_confluent(bootstrap, "from-files", [b"x"], wrong,
                                                timeout_s=20)
        assert delivered == [None]
        assert any("Authentication failed" in p for p in problems), problems
    finally:
        process.terminate()
        process.wait(30)


def test_a_missing_properties_file_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kafkacore.broker", str(tmp_path / "nope.properties")],
        capture_output=True, text=True, env=child_env(), cwd=tempfile.gettempdir(), timeout=60)
    assert result.returncode != 0
    assert "nope.properties" in result.stderr and "No such file" in result.stderr


# Kafka 4's own config/server.properties (Apache-2.0; its source is in the file's header).
KAFKA_STOCK_FILE = pathlib.Path(__file__).parent / "kafka_config" / "server.properties"


def _stock_file_here(tmp_path, extra=""):
    """Kafka 4's stock file with only its paths and ports changed (port 0: a free one)."""
    text = KAFKA_STOCK_FILE.read_text()
    text = text.replace(":9092", ":0").replace(":9093", ":0")
    text = text.replace("/tmp/kraft-combined-logs", str(tmp_path / "data")) + extra
    path = tmp_path / "server.properties"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_kafka4_stock_file_settings_are_applied_or_named(tmp_path):
    config = BrokerConfig(load_properties(_stock_file_here(tmp_path)))
    assert config["log.retention.ms"] == 168 * 3_600_000  # log.retention.hours=168
    assert config["offsets.topic.replication.factor"] == 1
    assert config["transaction.state.log.min.isr"] == 1
    assert config["log.segment.bytes"] == 1073741824 and config["num.io.threads"] == 8
    assert config.log_dirs == [str(tmp_path / "data")]
    # One node acting as its own controller: only the client listener is opened.
    assert config.combined_roles and config["process.roles"] == ""
    assert [e.name for e in config.listeners] == ["PLAINTEXT"]
    assert config.unopened_controller_listeners == ["CONTROLLER"]
    assert config.without_effect == [
        "controller.quorum.bootstrap.servers", "num.recovery.threads.per.data.dir",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr"]


@pytest.mark.parametrize("given, retention_ms", [
    ({"log.retention.hours": "2"}, 7_200_000),
    ({"log.retention.hours": "2", "log.retention.minutes": "3"}, 180_000),
    ({"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "5"}, 5),
    ({"log.retention.hours": "-1"}, -1),
])
def test_kafkas_older_retention_names_set_log_retention_ms_as_in_kafka(given, retention_ms):
    assert BrokerConfig(given)["log.retention.ms"] == retention_ms


def test_a_misspelt_setting_is_one_line_with_did_you_mean():
    with pytest.raises(errors.ConfigError, match="did you mean 'num.recovery.threads.per.data.dir'"):
        BrokerConfig({"num.recovery.thread.per.data.dir": "1"})
    with pytest.raises(errors.ConfigError, match="'zookeeper.connect' .not a Kafka broker"):
        BrokerConfig({"zookeeper.connect": "localhost:2181"})


def test_the_broker_starts_from_kafka4s_stock_server_properties(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.broker", str(_stock_file_here(tmp_path))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True,
        cwd=tempfile.gettempdir())
    try:
        line = process.stdout.readline()
        assert line.startswith("kafkacore-broker listening on localhost:"), process.stderr.read()
        bootstrap = line.rsplit(" ", 1)[1].strip()
        with KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
            futures = [producer.send("stock-file", value=b"v%d" % i) for i in range(5)]
            producer.flush(timeout=60)
        assert [f.result(timeout=10).offset for f in futures] == [0, 1, 2, 3, 4]
        # confluent-kafka (librdkafka) reads them back.
        consumed = read_confluent(bootstrap, "stock-file", 1, 5)
        assert [c.value for c in consumed] == [b"v%d" % i for i in range(5)]
    finally:
        process.terminate()
        process.wait(30)
    stderr = process.stderr.read()
    # Said once, at start: what is accepted without effect, and what the combined roles mean.
    assert stderr.count("accepted without effect") == 1, stderr
    assert "num.recovery.threads.per.data.dir" in stderr
    assert stderr.count("acts as its own controller") == 1, stderr


def _run_broker(*args, tmp_path):
    return subprocess.run([sys.executable, "-m", "kafkacore.broker", *args], env=child_env(),
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_a_misspelt_key_in_the_file_stops_the_broker_with_one_line(tmp_path):
    done = _run_broker(str(_stock_file_here(tmp_path, "num.recovery.thread.per.data.dir=2\n")),
                       tmp_path=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("kafkacore-broker: error: unknown broker setting "
                           "'num.recovery.thread.per.data.dir'; did you mean "
                           "'num.recovery.threads.per.data.dir'?\n")


def test_an_argument_error_is_one_line_without_the_usage_block(tmp_path):
    done = _run_broker("--num-partitions", "many", tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "usage:" not in done.stderr, done.stderr
    assert done.stderr.startswith("kafkacore-broker: error: argument --num-partitions: "
                                  "invalid int value: 'many'")
