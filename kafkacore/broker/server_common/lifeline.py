"""Children that end with their owner: the brokers and controllers a Python program starts, and
the temporary directories it made for them, go when that program ends, however it ends.

Two mechanisms, one for each kind of child:

* **The lifeline** (our own broker and controller): a pipe whose write end only the owner holds.
  The child reads the other end in a thread; when the owner ends, by ``exit()`` or by SIGKILL,
  the kernel closes the write end, the read returns end-of-file, and the child stops as on
  SIGTERM (and exits at once if stopping takes longer than :data:`STOP_BOUND_S`).
* **The reaper** (every child, tansu too, a binary we cannot change; and the temporary
  directories): a small process of its own, started once per owner, that is told each child
  and each temporary directory.  It reads its end of another pipe; at end-of-file it sends
  SIGTERM to the children still running, SIGKILL after :data:`REAP_GRACE_S`, waits for them,
  removes the directories and names on stderr any it could not remove.  It ignores Ctrl-C and
  runs in a session of its own, so a signal meant for the owner's whole process group does not
  take it away before it has cleaned up.

``PR_SET_PDEATHSIG`` is not used: Linux sends it when the *thread* that forked ends, so a broker
started from a worker thread would die with that thread; and it needs ``preexec_fn``, which is
unsafe in a program with threads.  A pipe ends with the process, not the thread.

A broker started by a person (``kafkacore-broker`` on the command line) has no lifeline: the
child only watches one when :data:`LIFELINE_ENV` names it, and removes that variable from its
environment so that its own children do not inherit it.  See docs/broker/lifeline.rst.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

#: The environment variable that gives a child the file descriptor of its lifeline.
LIFELINE_ENV = "KAFKACORE_LIFELINE_FD"
#: How long a child whose owner ended may take to stop before it exits at once.
STOP_BOUND_S = 10.0
#: How long the reaper waits after SIGTERM before SIGKILL.
REAP_GRACE_S = 3.0

# Lock order: leaf (module-wide; replaced in a forked child).
_lock = threading.Lock()
_lifeline_read: int | None = None   # guarded by _lock; the read end every child inherits
_lifeline_write: int | None = None  # guarded by _lock; held by this process only, never written
_reaper_write: int | None = None    # guarded by _lock; the reaper's command pipe
_reaper: subprocess.Popen[bytes] | None = None  # guarded by _lock


# -- the owner's side ----------------------------------------------------------------------------


def spawn(command: Sequence[str], *, lifeline: bool = False, env: dict[str, str] | None = None,
          **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(command, ...)`` for a child that must not outlive this process.

    The reaper is told the child.  With ``lifeline=True`` the child (our broker or controller)
    also gets the lifeline's read end and its number in :data:`LIFELINE_ENV`.
    """
    env = dict(os.environ if env is None else env)
    env.pop(LIFELINE_ENV, None)
    pass_fds = tuple(popen_kwargs.pop("pass_fds", ()))
    with _lock:
        if lifeline:
            read_end = _ensure_lifeline()
            env[LIFELINE_ENV] = str(read_end)
            pass_fds += (read_end,)
        process: subprocess.Popen[bytes] = subprocess.Popen(
            command, env=env, pass_fds=pass_fds, **popen_kwargs)
        _tell_reaper("pid", process.pid)
    return process


def own_directory(path: str | os.PathLike[str]) -> None:
    """``path`` is a temporary directory this library made: if this process ends before
    :func:`remove_directory`, the reaper removes it."""
    with _lock:
        _tell_reaper("dir", os.fspath(path))


def remove_directory(path: str | os.PathLike[str]) -> bool:
    """Remove a temporary directory made by this library; warn, naming what is left, if it
    could not be removed (the reaper tries again when this process ends).  True if gone."""
    path = os.fspath(path)
    left = _rmtree(path)
    if left:
        warnings.warn(f"kafkacore could not remove its temporary directory {path}: "
                      + "; ".join(left), RuntimeWarning, stacklevel=2)
        return False
    with _lock:
        if _reaper_write is not None:
            _tell_reaper("undir", path)
    return True


def _ensure_lifeline() -> int:
    global _lifeline_read, _lifeline_write
    if _lifeline_read is None:
        # os.pipe() is not inheritable: only the children given pass_fds get the read end, and
        # none gets the write end, so the owner's end closes when the owner does.
        _lifeline_read, _lifeline_write = os.pipe()
    return _lifeline_read


def _tell_reaper(op: str, arg: int | str) -> None:
    global _reaper, _reaper_write
    if _reaper_write is None:
        read_end, _reaper_write = os.pipe()
        try:
            # -I -S: the standard library only, whatever the owner's sys.path and current
            # directory; it reads this very file as a script.
            _reaper = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__)], stdin=read_end,
                stdout=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(read_end)
    line = json.dumps([op, arg]).encode() + b"\n"
    try:
        os.write(_reaper_write, line)  # a line is far below PIPE_BUF: written whole
    except OSError as exc:  # the reaper was killed by someone: say so, carry on
        warnings.warn(f"kafkacore's reaper is gone ({exc}): children and temporary directories "
                      "will outlive this process if it is killed", RuntimeWarning, stacklevel=3)


def _forget_in_forked_child() -> None:
    """A child forked from the owner (multiprocessing) must not hold the owner's write ends,
    or they would stay open after the owner died; it starts its own if it needs them."""
    global _lock, _lifeline_read, _lifeline_write, _reaper_write, _reaper
    _lock = threading.Lock()
    for fd in (_lifeline_read, _lifeline_write, _reaper_write):
        if fd is not None:
            os.close(fd)
    _lifeline_read = _lifeline_write = _reaper_write = None
    _reaper = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_forked_child)


# -- the child's side ----------------------------------------------------------------------------


def watch_owner(on_owner_gone: Callable[[], None], bound_s: float = STOP_BOUND_S) -> bool:
    """In a child started with ``lifeline=True``: call ``on_owner_gone`` (from a daemon thread)
    when the owner ends, and exit the process if it is still there ``bound_s`` later.

    Returns False, and does nothing, when this process has no lifeline (started by a person).
    """
    value = os.environ.pop(LIFELINE_ENV, None)
    if value is None:
        return False
    fd = int(value)

    def watch() -> None:
        try:
            while os.read(fd, 64):  # nobody writes; end-of-file is the owner's end
                pass
        except OSError:
            pass
        print("kafkacore: the process that started this one has ended: stopping",
              file=sys.stderr, flush=True)
        on_owner_gone()
        time.sleep(bound_s)
        os._exit(1)

    threading.Thread(target=watch, name="kafkacore-lifeline", daemon=True).start()
    return True


# -- the reaper ----------------------------------------------------------------------------------


def _rmtree(path: str) -> list[str]:
    """Remove ``path``; the failures, as ``"name: reason"`` (none if ``path`` is gone)."""
    failures: list[str] = []

    def failed(function: Any, name: str, exc_info: Any) -> None:
        if not isinstance(exc_info[1], FileNotFoundError):
            failures.append(f"{name}: {exc_info[1]}")

    shutil.rmtree(path, onerror=failed)
    return failures


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for init has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


class _Child:
    """A child the reaper was told of; a pidfd where Linux has them, so that a pid reused by
    another process is never signalled."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(pid)
            except OSError:  # already gone (or no pidfd in this kernel: fall back to the pid)
                self.pidfd = None if _alive(pid) else -1

    def alive(self) -> bool:
        if self.pidfd == -1:
            return False
        if self.pidfd is not None:
            return not select.select([self.pidfd], [], [], 0)[0]
        return _alive(self.pid)

    def signal(self, signum: int) -> None:
        try:
            if self.pidfd is not None and self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signum)
            elif self.pidfd is None:
                os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if self.pidfd is not None and self.pidfd >= 0:
            os.close(self.pidfd)
        self.pidfd = -1


def _reap(children: list[_Child], directories: list[str]) -> int:
    for child in children:
        if child.alive():
            child.signal(signal.SIGTERM)
    deadline = time.monotonic() + REAP_GRACE_S
    while any(c.alive() for c in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    for child in children:
        if child.alive():
            child.signal(signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while any(c.alive() for c in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [f for d in directories for f in _rmtree(d)]
    if left:
        print("kafkacore: could not remove temporary directories: " + "; ".join(left),
              file=sys.stderr, flush=True)
        return 1
    return 0


def _reaper_main() -> int:
    # Ctrl-C and a closing terminal are for the owner; this process outlives them to clean up.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    children: list[_Child] = []
    directories: list[str] = []
    for line in sys.stdin.buffer:  # until end-of-file: the owner has ended
        try:
            op, arg = json.loads(line)
        except ValueError:
            continue
        if op == "pid":
            for child in [c for c in children if not c.alive()]:  # bounded: the live ones
                child.close()
                children.remove(child)
            children.append(_Child(int(arg)))
        elif op == "dir" and arg not in directories:
            directories.append(str(arg))
        elif op == "undir" and arg in directories:
            directories.remove(arg)
    return _reap(children, directories)


if __name__ == "__main__":
    sys.exit(_reaper_main())
