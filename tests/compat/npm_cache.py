"""kafkajs (Node): installed by npm into a cache folder at first use, then run as
``node kafkajs_driver.js BOOTSTRAP [CALL ...]`` (tests/compat/harness.py says what a driver does).

The folder is ``$KAFKACORE_NODE_CACHE`` or ``~/.cache/kafkacore/node``, one subfolder per pinned
version, so a fresh clone installs once and every later run (every tox environment) reuses it.
"""

from __future__ import annotations

import fcntl
import functools
import os
import pathlib
import shutil
import subprocess

#: The kafkajs release the table is made with.
VERSION = "2.2.4"
HERE = pathlib.Path(__file__).resolve().parent
NPM_BOUND_S = 300


def folder() -> pathlib.Path:
    base = os.environ.get("KAFKACORE_NODE_CACHE") or pathlib.Path.home() / ".cache" / "kafkacore" / "node"
    return pathlib.Path(base) / f"kafkajs-{VERSION}"


@functools.cache
def unavailable() -> str | None:
    """Install kafkajs if it is not yet; None when it is there, else why it cannot be."""
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            return f"{tool} is not installed (kafkajs runs on Node.js)"
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    # One installer at a time (pytest-xdist workers may both get here first).
    with open(where / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (where / "node_modules" / "kafkajs" / "package.json").exists():
            return None
        return _install(where)


def _install(where: pathlib.Path) -> str | None:
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--no-save",
                               "--prefix", str(where), f"kafkajs@{VERSION}"],
                              capture_output=True, text=True, timeout=NPM_BOUND_S)
    except subprocess.TimeoutExpired:
        return f"npm install kafkajs@{VERSION} did not finish in {NPM_BOUND_S} s"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        return f"npm install kafkajs@{VERSION} failed: {tail[0]}"
    return None


def command() -> list[str]:
    return ["env", f"KAFKACORE_KAFKAJS={folder() / 'node_modules' / 'kafkajs'}",
            "node", str(HERE / "kafkajs_driver.js")]


if __name__ == "__main__":  # make test: install before the tests run, or say why not
    reason = unavailable()
    print(f"kafkajs {VERSION}: " + (f"{reason}: its tests will be skipped" if reason
                                    else f"installed in {folder()}"))
