"""Exactly once through SIGKILLs: the transactional copier (examples/transactional_copier.py)
copies 900 records on the session's 3-broker cluster while the broker leading its
``__transaction_state`` partition, an output partition's leader and the copier process itself
are each SIGKILLed once and restarted, once with kafkacore's producer and once with
confluent-kafka's; a confluent-kafka read_committed consumer then finds every input record in
the output exactly once, in order per partition.  The harness is benchmarks/bench_copier.py (the
same run with 100,000 records and several kills of each kind).  See docs/broker/transactions.rst.
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

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

RECORDS = 900
RATE = 150  # records a second: the kills fall while the copier copies


@pytest.mark.parametrize("producer", ["kafkacore", "confluent"])
def test_the_copier_copies_exactly_once_through_kills(cluster, producer, tmp_path):
    # Every wait in run_copy is for a state that comes (a commit without the killed broker,
    # the restarted broker back in sync); 240 s only bounds a run that hangs.  The copier
    # cannot finish before its own kill, however slow the harness: it copies no record past a
    # limit the harness raises only as each kill falls.
    result = bench_copier.run_copy(cluster, producer, RECORDS, 1, work_dir=tmp_path,
                                   max_rate=RATE, bound_s=240)
    assert [k["kind"] for k in result["kills"]] == ["coordinator", "output_leader", "copier"]
    assert result["copier_starts"] == 2
    print(result)
