"""Every tutorial script runs, as a reader would run it, and must exit 0.

Tutorials check their own claims with ``assert``; a tutorial that stops telling the truth fails here.
Tutorials that say ``# needs: broker`` get the test broker's address in ``KAFKACORE_BOOTSTRAP``;
those that say ``# needs: spark`` run where pyspark is installed (the ``spark`` tox env);
those that say ``# needs: cluster`` start their own cluster and are marked ``cluster``.
"""

import os
import pathlib
import subprocess
import sys

import pytest

TUTORIALS = sorted((pathlib.Path(__file__).parent.parent / "tutorials").glob("*.py"))
#: the broker's pure-Python logic (its log, groups, transactions, ACLs, quotas, configs, faults):
#: run on one interpreter, as tests/broker's tests of it are (tests/conftest.py, TESTING.md);
#: those of its compiled parts (40, 45, 46) and of TLS (43) run on every one
PURE_PYTHON = {"41_broker_log", "42_broker_idempotence", "48_faults", "49_consumer_group",
               "51_authorization", "52_transactions", "53_log_cleaner",
               "54_changing_a_running_broker", "55_consumer_group_protocol", "56_quotas"}
#: tutorials that start a multi-process cluster run with the other cluster tests
PARAMS = [pytest.param(t, marks=pytest.mark.cluster) if "# needs: cluster" in t.read_text()
          else pytest.param(t, marks=pytest.mark.pure_python) if t.stem in PURE_PYTHON
          else t for t in TUTORIALS]


def _needs_broker(script: pathlib.Path) -> bool:
    return "# needs: broker" in script.read_text()


ALONE = [p for t, p in zip(TUTORIALS, PARAMS, strict=True) if not _needs_broker(t)]
WITH_BROKER = [t for t in TUTORIALS if _needs_broker(t)]


@pytest.mark.parametrize("script", ALONE, ids=[t.stem for t in TUTORIALS if not _needs_broker(t)])
def test_tutorial_runs(script):
    _run(script, dict(os.environ))


# The broker tutorials ask for `bootstrap` by name, so they run against every broker kind the
# session's broker fixture is parametrized with (tests/conftest.py).
@pytest.mark.parametrize("script", WITH_BROKER, ids=[t.stem for t in WITH_BROKER])
def test_broker_tutorial_runs(script, bootstrap):
    _run(script, {**os.environ, "KAFKACORE_BOOTSTRAP": bootstrap})


def _run(script: pathlib.Path, env: dict[str, str]) -> None:
    if "# needs: spark" in script.read_text():
        pytest.importorskip("pyspark", reason="Spark tutorials run in the `spark` tox env")
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{script.name} printed nothing"
