"""kafkacore-perf as a user runs it: the console script in a child process, outside the checkout.

Bad command lines and a broker that is not there give one line on stderr (never a traceback) and
a non-zero exit code; Kafka's --producer.config, --payload-file, --throughput and --print-metrics
work against a real broker, and what they sent is read back by confluent-kafka.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from readback import read_confluent
from support.children import child_env

# The installed console script (tox), else the entry point it calls (a tree built in place).
_SCRIPT = shutil.which("kafkacore-perf")
_COMMAND = [_SCRIPT] if _SCRIPT else [
    sys.executable, "-c", "import sys; from kafkacore.perf import main; sys.exit(main())"]


def perf(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_COMMAND, *args], cwd=cwd, env=child_env(), capture_output=True,
                          text=True, timeout=300)


def assert_one_line_error(done, code, *words):
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    # One line for the error; the producer's own warnings (their own lines) may come first.
    errors = [line for line in done.stderr.splitlines()
              if line and not line.startswith("kafkacore-perf: WARNING: ")]
    assert len(errors) == 1, done.stderr
    for word in words:
        assert word in errors[0], errors[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--topic", "t", "--num-records", "10", "--throughput", "-1"],
         ["--record-size", "--payload-file"]),
        (["--topic", "t", "--num-records", "ten", "--record-size", "10", "--throughput", "-1"],
         ["--num-records", "'ten'"]),
        (["--topic", "t", "--num-records", "0", "--record-size", "10", "--throughput", "-1",
          "--bootstrap-server", "127.0.0.1:9"], ["--num-records must be positive"]),
        (["--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1"],
         ["--bootstrap-server"]),
        (["--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1",
          "--producer-props", "linger.ms"], ["key=value", "'linger.ms'"]),
        (["--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1",
          "--producer.config", "/nonexistent/producer.properties"], ["/nonexistent"]),
        (["--topic", "t", "--num-records", "5", "--payload-file", "/nonexistent/payloads",
          "--throughput", "-1", "--bootstrap-server", "127.0.0.1:9"], ["--payload-file"]),
    ],
)
def test_bad_command_lines(args, words, tmp_path):
    assert_one_line_error(perf(*args, cwd=tmp_path), 2, *words)


def test_a_bad_setting_names_the_key(tmp_path):
    done = perf("--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1",
                "--producer-props", "bootstrap.servers=127.0.0.1:9", "linger.mss=5", cwd=tmp_path)
    assert_one_line_error(done, 1, "ConfigError", "linger.mss", "linger.ms")


def test_no_broker_is_one_line_naming_the_address(tmp_path, closed_port):
    address = f"127.0.0.1:{closed_port}"
    done = perf("--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1",
                "--producer-props", f"bootstrap.servers={address}", "max.block.ms=1500",
                cwd=tmp_path)
    assert_one_line_error(done, 1, "KafkaTimeoutError", f"Brokers tried: {address}")
    assert "kafkacore-perf: WARNING: no bootstrap server is reachable" in done.stderr


def test_producer_config_payload_file_throughput_and_metrics(bootstrap, make_topic, tmp_path):
    topic = make_topic(partitions=1)
    config = tmp_path / "producer.properties"
    config.write_text("# Kafka's format\nbootstrap.servers=127.0.0.1:9\nlinger.ms: 50\n"
                      "acks=all\n")
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha;beta;gamma")
    done = perf("--topic", topic, "--num-records", "200", "--payload-file", str(payloads),
                "--payload-delimiter", ";", "--throughput", "2000",
                "--producer.config", str(config),
                "--producer-props", f"bootstrap.servers={bootstrap}",  # overrides the file's
                "--print-metrics", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "200 records sent" in done.stdout
    assert "Metric Name" in done.stdout
    assert "producer-metrics:record-send-rate" in done.stdout
    assert "producer-metrics:batch-size-avg" in done.stdout
    consumed = read_confluent(bootstrap, topic, 1, 200)
    values = [c.value for c in consumed]
    assert len(values) == 200 and set(values) <= {b"alpha", b"beta", b"gamma"}
    assert len(set(values)) == 3  # drawn at random from the file, all three used
