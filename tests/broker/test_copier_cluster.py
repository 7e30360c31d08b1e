"""Exactly once through SIGKILLs: the transactional copier (examples/transactional_copier.py)
copies 3,000 records on the session's 3-broker cluster while the broker leading its
``__transaction_state`` partition, an output partition's leader and the copier process itself
are each SIGKILLed once and restarted (kafkacore's producer); a confluent-kafka read_committed consumer then finds
every input record in the output exactly once, in order per partition.  The harness is
benchmarks/bench_copier.py (the same run with 100,000 records and several kills of each kind).
See docs/broker/transactions.rst.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

_BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_copier.py"
_spec = importlib.util.spec_from_file_location("bench_copier", _BENCH)
assert _spec is not None and _spec.loader is not None
bench_copier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_copier)

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

RECORDS = 3000
RATE = 100  # records a second: slow enough that every kill falls while the copier copies


# kafkacore's producer only: confluent-kafka's (librdkafka 2.16) can wait without end in
# send_offsets_to_transaction once the group's coordinator died (librdkafka issues #5456, #5511),
# which would make this test flaky; benchmarks/bench_copier.py runs both.
def test_the_copier_copies_exactly_once_through_kills(cluster, tmp_path):
    result = bench_copier.run_copy(cluster, "kafkacore", RECORDS, 1, work_dir=tmp_path,
                                   max_rate=RATE, bound_s=180)
    assert [k["kind"] for k in result["kills"]] == ["coordinator", "output_leader", "copier"]
    assert result["copier_starts"] == 2
    # it commits while each killed broker is down
    assert all(k.get("committed_while_down", True) for k in result["kills"]), result
