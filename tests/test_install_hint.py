"""``pip install .`` without the ``broker`` extra: ``kafkacore-broker`` says in one line what to
install, for a clone and for PyPI, instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
import tempfile

from support.children import child_env

# The entry point (kafkacore.broker.__main__:main) with google-re2 unimportable, as in an
# environment made by a plain ``pip install .``.
WITHOUT_RE2 = ("import sys; sys.modules['re2'] = None; "
               "from kafkacore.broker.__main__ import main; sys.exit(main([]))")


def test_the_broker_without_its_extra_names_the_install_command_in_one_line():
    done = subprocess.run([sys.executable, "-c", WITHOUT_RE2], capture_output=True, text=True,
                          env=child_env(), cwd=tempfile.gettempdir(), timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "pip install '.[broker]'" in done.stderr  # from a clone
    assert "pip install 'kafkacore[broker]'" in done.stderr  # from PyPI
