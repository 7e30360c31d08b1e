"""``make demo``'s job, smaller: the flights pipeline into a 3-broker kafkacore cluster whose
partition leader is SIGKILLed halfway through the write, judged by confluent-kafka.

It runs as a user runs it (``python examples/pipeline.py``), in its own process with its own
Spark session and cluster, from outside the checkout.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from support.children import child_env

PIPELINE = pathlib.Path(__file__).resolve().parent.parent.parent / "examples" / "pipeline.py"
FLIGHTS = 30_000


@pytest.mark.cluster
@pytest.mark.timeout(900)
def test_the_pipeline_survives_a_leader_killed_halfway_exactly_once_and_in_order(tmp_path):
    pytest.importorskip("pyspark", reason="the pipeline needs pyspark (the `spark` extra)")
    pytest.importorskip("confluent_kafka")
    done = subprocess.run(
        [sys.executable, str(PIPELINE), "--limit", str(FLIGHTS), "--partitions", "4"],
        cwd=tmp_path, env=child_env(PYSPARK_PYTHON=sys.executable),
        capture_output=True, text=True, timeout=840)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-5000:]
    assert f"rows             {FLIGHTS:,} written, {FLIGHTS:,} read back" in out, out
    # The failover happened while the write ran: a leader died, another took over.
    assert "SIGKILLed" in out and "elected leader" in out and "back in the ISR" in out, out
    for check in ("the leader of flights-0 was killed mid-write, replaced, restarted and "
                  "caught up",
                  "every flight arrived exactly once",
                  "all events of a tail number in one partition",
                  "each tail number's events in time order",
                  "per-partition counts match the write summary"):
        assert f"[ok] {check}" in out, out
    assert "FAILED" not in out and out.rstrip().endswith("every check passed"), out
