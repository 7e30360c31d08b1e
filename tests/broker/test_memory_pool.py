"""The processors' shared MemoryPool (queued.max.request.bytes), compiled: its bound, its
refusals, and its count under threads that take and give back at once."""

import threading

import pytest

from kafkacore.broker.network.memory_pool import MemoryPool


def test_the_pool_gives_up_to_its_capacity_and_takes_back():
    pool = MemoryPool(100)
    assert pool.capacity == 100 and pool.used == 0
    assert pool.try_allocate(60) and pool.used == 60
    assert not pool.try_allocate(41)  # would pass the capacity: nothing taken
    assert pool.used == 60
    assert pool.try_allocate(40) and pool.used == 100
    pool.release(60)
    assert pool.used == 40
    pool.release(1000)  # never below nothing
    assert pool.used == 0


def test_an_empty_pool_gives_one_request_larger_than_itself():
    pool = MemoryPool(10)
    assert pool.try_allocate(50) and pool.used == 50  # (Kafka's tryAllocate: else it never fits)
    assert not pool.try_allocate(1)
    pool.release(50)
    assert pool.try_allocate(1)


def test_a_size_near_the_end_of_int64_is_refused_not_wrapped():
    pool = MemoryPool(10)
    assert pool.try_allocate(5)
    assert not pool.try_allocate((1 << 63) - 1)  # 5 + that would wrap past int64's end
    assert pool.used == 5


def test_no_bound():
    pool = MemoryPool(-1)
    assert all(pool.try_allocate(1 << 40) for _ in range(4))
    assert pool.used == 4 << 40


@pytest.mark.parametrize("call", [lambda p: p.try_allocate(-1), lambda p: p.release(-1)])
def test_negative_sizes_are_refused(call):
    pool = MemoryPool(10)
    with pytest.raises(ValueError, match="-1 bytes"):
        call(pool)
    assert pool.used == 0


def test_bad_capacities_and_sizes_are_typed_errors():
    with pytest.raises(ValueError, match="queued.max.request.bytes=-2"):
        MemoryPool(-2)
    with pytest.raises(OverflowError):
        MemoryPool(10).try_allocate(1 << 64)
    with pytest.raises(TypeError):
        MemoryPool(10).try_allocate("5")


def test_threads_taking_and_giving_back_keep_the_count_whole():
    pool = MemoryPool(1000)
    over = []

    def work():
        for _ in range(20000):
            if pool.try_allocate(7):
                if pool.used > 1000:
                    over.append(pool.used)
                pool.release(7)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not over
    assert pool.used == 0  # every byte taken was given back, none lost to a race
