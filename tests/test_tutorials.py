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
#: tutorials that start a multi-process cluster run with the other cluster tests
PARAMS = [pytest.param(t, marks=pytest.mark.cluster) if "# needs: cluster" in t.read_text()
          else t for t in TUTORIALS]


@pytest.mark.parametrize("script", PARAMS, ids=[t.stem for t in TUTORIALS])
def test_tutorial_runs(script, request):
    env = dict(os.environ)
    text = script.read_text()
    if "# needs: spark" in text:
        pytest.importorskip("pyspark", reason="Spark tutorials run in the `spark` tox env")
    if "# needs: broker" in text:
        env["KAFKACORE_BOOTSTRAP"] = request.getfixturevalue("bootstrap")
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{script.name} printed nothing"
