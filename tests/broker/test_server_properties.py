"""Settings and SASL users from files (server.properties, a JAAS file), never the command line."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import pytest
from readback import produce_confluent
from support.children import child_env

from kafkacore import errors
from kafkacore.broker.server_properties import jaas_settings, parse_jaas_file, parse_properties

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
