"""A script saved in a clone whose compiled core was never built imports the clone, not the
installed kafkacore: ``import kafkacore`` says so and what to do, instead of "No module named
'kafkacore.core.batch'" at the first compiled module."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

from support.children import child_env

#: The repository's sources (the tests may run against an installed wheel, which has no .pyx).
PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "kafkacore"


def _unbuilt_clone(root: pathlib.Path) -> pathlib.Path:
    """A copy of the package as a fresh clone has it: sources, no compiled modules."""
    shutil.copytree(PACKAGE, root / "kafkacore",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"))
    return root


def test_a_script_in_an_unbuilt_clone_is_told_what_to_do(tmp_path):
    clone = _unbuilt_clone(tmp_path)
    script = clone / "send.py"
    script.write_text("from kafkacore import KafkaProducer\n")
    done = subprocess.run([sys.executable, str(script)], cwd=clone, env=child_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"kafkacore is being imported from its source tree, {clone}" in done.stderr
    assert "pip install -e ." in done.stderr
    assert "kafkacore.core.batch" not in done.stderr


def test_the_same_script_outside_the_clone_imports_the_built_kafkacore(tmp_path):
    _unbuilt_clone(tmp_path / "clone")
    script = tmp_path / "send.py"
    script.write_text("from kafkacore import KafkaProducer\nprint(KafkaProducer.__name__)\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path / "clone",
                          env=child_env(), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "KafkaProducer\n"), done.stderr
