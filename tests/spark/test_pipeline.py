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
    # The streaming stage: format("kafkacore") in and out, a failover, a restart, exactly once.
    for check in ("the streaming query was stopped and restarted from its checkpoint",
                  "every carrier-hour's last record equals the batch computation",
                  "each micro-batch's output in the topic once (read_committed)"):
        assert f"[ok] {check}" in out, out
    assert "FAILED" not in out and out.rstrip().endswith("every check passed"), out


CLONE_SCRIPT = """
import sys
sys.path.insert(0, "examples")
import pipeline

spark = pipeline.start_spark("local[1]", app="kafkacore-clone-root")


def where(batches):
    import pyarrow as pa

    import kafkacore

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"file": [kafkacore.__file__]})


print(spark.range(1, numPartitions=1).mapInArrow(where, "file string").first()["file"])
spark.stop()
"""


def test_workers_import_the_compiled_kafkacore_when_started_in_a_checkout(tmp_path):
    """Run from a fresh clone's root (its sources, nothing compiled), as the tutorials say,
    Spark's Python workers import the kafkacore the driver imported, not the checkout's: before
    pipeline.start_spark started the JVM elsewhere, ``python -m`` put the clone first."""
    pytest.importorskip("pyspark", reason="the pipeline needs pyspark (the `spark` extra)")
    import kafkacore

    root = pathlib.Path(__file__).resolve().parent.parent.parent
    clone = tmp_path / "clone"
    for path in [*(root / "kafkacore").rglob("*.py"), root / "examples" / "pipeline.py"]:
        target = clone / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    # Run as the tutorials are: ``python tutorials/x.py`` from the clone's root (the driver's
    # sys.path starts at tutorials/, so the driver imports the kafkacore under test).
    script = clone / "tutorials" / "clone_root.py"
    script.parent.mkdir()
    script.write_text(CLONE_SCRIPT)
    done = subprocess.run([sys.executable, str(script.relative_to(clone))], cwd=clone,
                          env=child_env(PYSPARK_PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    used = pathlib.Path(done.stdout.strip().splitlines()[-1])
    assert used == pathlib.Path(kafkacore.__file__).resolve(), (used, clone)
