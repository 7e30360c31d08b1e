"""Tutorial 3: two threads wait for memory, and are served in the order they came.

We make a pool of three 100-byte buffers, take all of it, and start two threads that ask for more:
first one that wants 200 bytes, then one that wants only 100.  Then we give memory back, 100 bytes
at a time, and watch ``statistics()`` after each step.  The second thread needs less, but it does
not overtake the first: memory goes to the head of the queue until the head has all it asked for.

Run it from the repository's root:

    python tutorials/03_buffer_pool_waiters.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

import threading
import time
from collections.abc import Callable

from kafkacore.core.buffer_pool import BufferPool, BufferPoolStatistics
from kafkacore.errors import BufferExhaustedError


def show(label: str) -> BufferPoolStatistics:
    """Print the statistics that matter here, and return them."""
    s = pool.statistics()
    print(
        f"{label:22} waiters={s.waiters} available={s.available_memory:3} "
        f"reserved={s.reserved_memory:3} allocated={s.allocated_memory:3}"
    )
    return s


# A pool of 300 bytes whose pooled buffers are 100 bytes (think: buffer.memory, batch.size).
pool = BufferPool(300, 100)
held = [pool.allocate(100, max_time_to_block_ms=0) for _ in range(3)]
show("all memory taken")
assert pool.available_memory() == 0

# Nothing left: a caller that will not wait is refused at once.
try:
    pool.allocate(100, max_time_to_block_ms=0)
except BufferExhaustedError as e:
    print(f"{'no wait, no memory':22} {e}")
else:
    raise AssertionError("the pool had no memory left")

served: list[tuple[str, int]] = []  # (name, bytes) in the order the threads got their memory


def ask(name: str, size: int) -> None:
    buf = pool.allocate(size, max_time_to_block_ms=10_000)
    served.append((name, len(buf)))


def wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


# Start the waiters one at a time, each only once the previous one is in the queue, so that the
# order they queue in is the order we started them in.
first = threading.Thread(target=ask, args=("first (200 bytes)", 200))
first.start()
wait_for(lambda: pool.queued() == 1)
second = threading.Thread(target=ask, args=("second (100 bytes)", 100))
second.start()
wait_for(lambda: pool.queued() == 2)
show("two threads waiting")

# Give back 100 bytes.  The first waiter sets them aside ("reserved") and goes on waiting for the
# other 100; the second waiter, who needs only 100, does not get them.
pool.deallocate(held.pop())
stats = show("100 bytes back")
assert stats.waiters == 2 and stats.reserved_memory == 100 and served == []

# Another 100 bytes: now the first waiter has its 200 and returns.
pool.deallocate(held.pop())
first.join(5)
stats = show("200 bytes back")
assert served == [("first (200 bytes)", 200)] and stats.waiters == 1

# The last 100 bytes go to the second waiter: a pooled buffer, handed over whole.
pool.deallocate(held.pop())
second.join(5)
stats = show("300 bytes back")
assert served == [("first (200 bytes)", 200), ("second (100 bytes)", 100)]
assert stats.waiters == 0 and stats.allocated_memory == 300

# The books always balance: available + allocated + reserved == total.
assert stats.available_memory + stats.allocated_memory + stats.reserved_memory == 300
print(f"{'served in order':22} {[name for name, _ in served]}")
