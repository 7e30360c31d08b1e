"""CopyOnWriteMap: dict semantics, snapshots that are never torn, one winner per put_if_absent."""

import threading

import pytest

from kafkacore.core.partition_map import CopyOnWriteMap


def test_reads_and_writes_behave_like_a_dict():
    m = CopyOnWriteMap()
    assert len(m) == 0 and m.get("a") is None and m.get("a", 5) == 5 and "a" not in m
    assert m.put("a", 1) is None
    assert m.put("a", 2) == 1
    assert m.put("n", None) is None
    assert m.get("n", "default") is None  # a None value is a value, not "missing"
    assert "n" in m and m["a"] == 2
    with pytest.raises(KeyError):
        m["missing"]
    assert m.put_if_absent("a", 99) == 2 and m["a"] == 2
    assert m.put_if_absent("b", 3) == 3 and m["b"] == 3
    assert m.remove("b") == 3 and "b" not in m
    assert m.remove("b") is None
    m.put_all({"x": 10, "y": 20})
    assert dict(m.items()) == {"a": 2, "n": None, "x": 10, "y": 20}
    assert sorted(m) == sorted(m.keys()) == ["a", "n", "x", "y"]
    assert sorted(m.values(), key=repr) == sorted([2, None, 10, 20], key=repr)
    assert repr(m).startswith("CopyOnWriteMap(")
    m.clear()
    assert len(m) == 0 and list(m) == []
    assert dict(CopyOnWriteMap({"k": "v"}).items()) == {"k": "v"}
    assert CopyOnWriteMap[str, int] is not None  # usable in annotations


def test_a_snapshot_never_changes_under_its_reader():
    m = CopyOnWriteMap({"a": 1})
    items = m.items()
    snap = m.snapshot()
    it = iter(m)
    m.put("b", 2)
    m.remove("a")
    assert dict(items) == {"a": 1} and dict(snap) == {"a": 1}
    assert list(it) == ["a"]  # no "dictionary changed size during iteration"
    with pytest.raises(TypeError):
        snap["c"] = 3  # read-only
    assert dict(m.items()) == {"b": 2}


def test_unhashable_key_raises_typeerror():
    m = CopyOnWriteMap()
    with pytest.raises(TypeError):
        m.put([], 1)
    with pytest.raises(TypeError):
        m.get([])
    assert len(m) == 0


def test_a_write_from_inside_a_write_fails_instead_of_deadlocking():
    m = CopyOnWriteMap()

    class Key:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            m.put("inner", 1)  # runs while the outer put holds the lock
            return self is other

    m.put(Key(), "first")
    with pytest.raises(RuntimeError, match="inside one of its own writes"):
        m.put(Key(), "second")
    m.put("after", 2)  # the lock was released
    assert m["after"] == 2 and len(m) == 2


def test_readers_never_see_a_torn_map():
    """Writers change several keys per swap; readers check every snapshot's invariants.

    Invariants: ``a == -b`` (put_all writes both at once) and, for every step n a writer has
    published, keys ``k0 .. kn`` exist.  An in-place dict would break both (and make iteration
    raise "dictionary changed size").
    """
    m = CopyOnWriteMap({"a": 0, "b": 0, "count": -1})
    stop = threading.Event()
    problems = []
    checked = [0]

    def writer():
        for n in range(3000):
            m.put(f"k{n}", n)
            m.put_all({"a": n, "b": -n, "count": n})
            m.put_if_absent(f"k{n}", "never")
        stop.set()

    def reader():
        try:
            while not stop.is_set():
                snapshot = dict(m.items())  # one snapshot, iterated while writers swap
                if snapshot["a"] != -snapshot["b"]:
                    problems.append(("a/b", snapshot["a"], snapshot["b"]))
                count = snapshot["count"]
                if any(f"k{i}" not in snapshot for i in range(max(0, count - 50), count + 1)):
                    problems.append(("missing key", count))
                if count >= 0 and snapshot[f"k{count}"] != count:
                    problems.append(("value", count))
                checked[0] += 1
        except Exception as e:  # e.g. "dictionary changed size during iteration"
            problems.append(e)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    w = threading.Thread(target=writer)
    for t in readers:
        t.start()
    w.start()
    w.join(60)
    for t in readers:
        t.join(60)
    assert problems == []
    assert checked[0] > 0
    assert m["count"] == 2999 and len(m) == 3000 + 3


def test_put_if_absent_has_exactly_one_winner_per_key():
    m = CopyOnWriteMap()
    threads, keys = 8, 300
    barrier = threading.Barrier(threads)
    results = [None] * threads

    def contend(tid):
        mine = [object() for _ in range(keys)]
        barrier.wait()
        got = [m.put_if_absent(k, mine[k]) for k in range(keys)]
        results[tid] = (mine, got)

    workers = [threading.Thread(target=contend, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    for k in range(keys):
        returned = {id(results[t][1][k]) for t in range(threads)}
        assert returned == {id(m[k])}, "every thread must get the winner's value"
        winners = [t for t in range(threads) if results[t][0][k] is m[k]]
        assert len(winners) == 1
    assert len(m) == keys


def test_get_is_a_method_and_keeps_default_semantics_under_writes():
    m = CopyOnWriteMap()
    stop = threading.Event()
    wrong = []

    def reader():
        try:
            while not stop.is_set():
                v = m.get("x", "absent")
                if v not in ("absent", 1):
                    wrong.append(v)
        except Exception as e:
            wrong.append(e)

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(2000):
        m.put("x", 1)
        m.remove("x")
    stop.set()
    t.join(10)
    assert wrong == []
