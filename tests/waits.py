"""Bounded waits the tests share: a test that waits polls for the state it waits for, with a
bound, and fails naming what did not happen (TESTING.md)."""

from __future__ import annotations

import dis
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from kafkacore.errors import KafkaTimeoutError

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], what: str, bound_s: float = 30.0,
               step_s: float = 0.01) -> T:
    """Call ``predicate`` until it returns something true, and return that; fail the test with
    ``what`` if it has not after ``bound_s`` seconds."""
    deadline = time.monotonic() + bound_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound_s} s: {what}")
        time.sleep(step_s)


def wait_for_metadata(producer, topic, bound_s=30.0):
    """With max.block.ms=0 every metadata wait gives up at once; ask until the Sender has it.

    Returns the topic's partitions; raises the last KafkaTimeoutError after ``bound_s``.
    """
    deadline = time.monotonic() + bound_s
    while True:
        try:
            return producer.partitions_for(topic)
        except KafkaTimeoutError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# Opcodes that call, and that load the method to call (names from Python 3.10 to 3.13).
_CALL_OPNAMES = frozenset(
    {"CALL", "CALL_KW", "PRECALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_METHOD"}
)
_LOAD_METHOD_OPNAMES = frozenset({"LOAD_METHOD", "LOAD_ATTR"})


def _calling(frame, method):
    """Whether ``frame`` is stopped on a call of ``.<method>(...)`` (arguments without calls)."""
    before = [i for i in dis.get_instructions(frame.f_code) if i.offset <= frame.f_lasti]
    if not before or before[-1].offset != frame.f_lasti or before[-1].opname not in _CALL_OPNAMES:
        return False
    for instruction in reversed(before[:-1]):
        if instruction.opname in _LOAD_METHOD_OPNAMES:
            return instruction.argval == method
        if instruction.opname in _CALL_OPNAMES and instruction.opname != "PRECALL":
            return False  # another call came after the last method load
    return False


def _on_stack(frame, function):
    while frame is not None:
        if frame.f_code is function.__code__:
            return True
        frame = frame.f_back
    return False


def wait_until_inside_call(thread, method, bound_s=10.0, within=()):
    """Return once ``thread`` is inside its ``.<method>(...)`` call; fail after ``bound_s``.

    With ``within`` (Python functions), the call must be made from inside each of them.

    Nothing on the future counts the threads in ``result()`` (its latch is a bare lock, and
    ``_waiters`` holds concurrent.futures waiters only), so look at the thread's stack.  The
    compiled future has no Python frame of its own, so the thread's innermost frame is its
    caller's, stopped on the call instruction while the call runs (the wait inside releases the
    GIL, which is when this thread gets to look).  Seeing it there, with nothing returned yet,
    shows the thread waits inside the call rather than taking a path for a done future.
    """
    deadline = time.monotonic() + bound_s
    while True:
        frame = sys._current_frames().get(thread.ident)
        if frame is not None and _calling(frame, method):
            if all(_on_stack(frame, function) for function in within):
                return
        assert thread.is_alive(), f"the thread ended without blocking in {method}()"
        assert time.monotonic() < deadline, f"the thread never blocked in {method}()"
        time.sleep(0.001)
