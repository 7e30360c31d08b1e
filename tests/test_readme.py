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
