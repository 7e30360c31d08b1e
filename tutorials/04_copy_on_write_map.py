"""Tutorial 4: a copy-on-write map, read by one thread while another writes.

The accumulator keeps one queue of batches per partition in a CopyOnWriteMap.  It looks a queue up
for every record, and adds one only the first time it sees a partition.  Here a reader thread
checks, over and over, that every snapshot it reads is whole, while the main thread adds
partitions and moves a counter between two keys.

Run it from the repository's root:

    python tutorials/04_copy_on_write_map.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

import threading
from typing import Any

from kafkacore.core.partition_map import CopyOnWriteMap

batches: CopyOnWriteMap[Any, Any] = CopyOnWriteMap()

# put_if_absent returns the value that is in the map afterwards: the caller's own when it won,
# or the one already there.  Of many threads racing to add a partition, exactly one wins.
queue = batches.put_if_absent(("orders", 0), [])
assert batches.put_if_absent(("orders", 0), ["not me"]) is queue
print("one queue per partition:", dict(batches.items()))

# A writer moves 'count' units between two keys with one put_all (one copy, one swap), so in every
# snapshot left + right == 100.  It also adds a partition per step, and only then records how
# many there are.
batches.put_all({"left": 100, "right": 0, "partitions": 1})
stop = threading.Event()
snapshots_checked = [0]
torn: list[object] = []


def reader() -> None:
    try:
        while not stop.is_set():
            snapshot = batches.snapshot()  # one consistent state; later writes do not change it
            if snapshot["left"] + snapshot["right"] != 100:
                torn.append(dict(snapshot))
            partitions = [k for k in snapshot if isinstance(k, tuple)]
            if len(partitions) < snapshot["partitions"]:
                torn.append(dict(snapshot))
            snapshots_checked[0] += 1
    except Exception as e:  # a map changed under its reader would raise here
        torn.append(e)


thread = threading.Thread(target=reader)
thread.start()
for step in range(1, 2001):
    batches.put_if_absent(("orders", step), [])
    batches.put_all({"left": 100 - step % 101, "right": step % 101, "partitions": step + 1})
stop.set()
thread.join()

print("snapshots the reader checked:", snapshots_checked[0])
print("torn snapshots seen:        ", len(torn))
print("partitions now:             ", batches["partitions"])
assert torn == [] and snapshots_checked[0] > 0
assert batches["partitions"] == 2001 and len(batches) == 2001 + 3

# Reads take no lock: get() costs about what dict.get() does.  Writes copy the whole map, so they
# are for keys that change rarely (a new partition), not for per-record state.
assert batches.get(("orders", 7)) == [] and batches.get(("nope", 1)) is None
print("get:", batches.get(("orders", 7)), batches.get(("nope", 1), "absent"))
