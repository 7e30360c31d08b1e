"""The README's quick start runs as written, against the test broker."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

from support.children import child_env

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_quick_start_example_sends_three_keyed_records(bootstrap, tmp_path):
    blocks = python_blocks(README.read_text())
    assert len(blocks) == 1, "the README has one python example; this test runs it"
    script = tmp_path / "quickstart.py"
    script.write_text(blocks[0])
    env = child_env(KAFKACORE_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    delivered = [re.fullmatch(r"quickstart-(\d+) @ offset (\d+)", line) for line in lines]
    assert len(lines) == 3 and all(delivered), done.stdout
    # One key: one partition, and the three records in send order, one after the other.
    partitions = {int(m.group(1)) for m in delivered}
    offsets = [int(m.group(2)) for m in delivered]
    assert len(partitions) == 1, done.stdout
    assert offsets == list(range(offsets[0], offsets[0] + 3)), done.stdout


def test_the_quick_start_broker_command_serves_the_example(tmp_path):
    """The README's broker, started by its own command line (on a free port instead of 9092),
    serves the quick start example, and stops on Ctrl-C."""
    import signal

    from kafkacore.testing import free_port

    quick_start = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line for line in quick_start.splitlines() if line.startswith("kafkacore-broker ")]
    assert len(commands) == 1, "the quick start starts its broker with one kafkacore-broker line"
    port = free_port()
    args = commands[0].split()[1:]
    args = [a.replace(":9092", f":{port}") for a in args]
    broker = subprocess.Popen([sys.executable, "-m", "kafkacore.broker", *args],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=child_env(), cwd=tmp_path)
    try:
        assert broker.stdout.readline().strip() == f"kafkacore-broker listening on 127.0.0.1:{port}"
        script = tmp_path / "quickstart.py"
        script.write_text(python_blocks(README.read_text())[0])
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                              env=child_env(KAFKACORE_BOOTSTRAP=f"127.0.0.1:{port}"),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [f"quickstart-0 @ offset {i}" for i in range(3)]
        broker.send_signal(signal.SIGINT)
        assert broker.wait(30) == 0
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait()
        broker.stdout.close()
