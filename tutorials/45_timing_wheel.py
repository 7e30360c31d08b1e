"""Tutorial 45: five timers go through two timing wheels.

Kafka's worked example: a first wheel of 20 one-millisecond buckets (tick_ms=1, wheel_size=20),
and tasks due at 8, 8, 25, 30 and 35 ms.  The two 8 ms tasks fit in the first wheel; the others are
beyond its 20 ms, so a second wheel of 20 ms buckets is made for them.  We move the clock by hand,
one millisecond at a time, and print what the wheels hold whenever something happens.

    python tutorials/45_timing_wheel.py

Needs: nothing but kafkacore (no broker, no threads: the clock is ours).
"""

from typing import cast

from kafkacore.broker.server_common.timer import SystemTimer, TimerTask, TimerTaskList, TimingWheel

now = 0  # our clock, in milliseconds; the timer reads it through clock()
ran: list[tuple[str, int]] = []  # (task, time it ran)


def clock() -> int:
    return now


class Print(TimerTask):
    def __init__(self, name: str, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.name = name

    def run(self) -> None:
        ran.append((self.name, now))
        print(f"  {now:2} ms: task {self.name} runs")


def task_names(bucket: TimerTaskList) -> list[str]:
    names: list[str] = []
    bucket.foreach(lambda task: names.append(cast(Print, task).name))
    return names


def wheels(timer: SystemTimer) -> dict[int, dict[int, tuple[list[str], int]]]:
    """{level: {bucket: [task names]}} for every wheel, and each bucket's expiration."""
    shown: dict[int, dict[int, tuple[list[str], int]]] = {}
    wheel: TimingWheel | None = timer.timing_wheel
    level = 1
    while wheel is not None:
        for i, bucket in enumerate(wheel.buckets):
            names = task_names(bucket)
            if names:
                shown.setdefault(level, {})[i] = (names, bucket.get_expiration())
        wheel, level = wheel.overflow_wheel, level + 1
    return shown


def show(timer: SystemTimer, label: str) -> None:
    print(label)
    for level, buckets in wheels(timer).items():
        for i, (names, expiration) in buckets.items():
            print(f"    wheel {level}, bucket {i:2} (expires at {expiration:2} ms): {names}")


# -- the timer ------------------------------------------------------------------------------------
timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=clock)
for name, delay in [("A", 8), ("B", 8), ("C", 25), ("D", 30), ("E", 35)]:
    timer.add(Print(name, delay))

first = timer.timing_wheel
second = first.overflow_wheel
assert second is not None  # made when task C was added
print(f"wheel 1: tick {first.tick_ms} ms x {first.wheel_size} buckets = {first.interval} ms")
print(f"wheel 2: tick {second.tick_ms} ms x {second.wheel_size} buckets = {second.interval} ms")
show(timer, " 0 ms: after adding the five tasks")
assert wheels(timer) == {1: {8: (["A", "B"], 8)}, 2: {1: (["C", "D", "E"], 20)}}
# The delay queue orders buckets, not tasks: two entries for five tasks.
print(f"    the delay queue holds {len(timer.delay_queue)} buckets for {timer.size()} tasks")
assert len(timer.delay_queue) == 2 and timer.size() == 5

# -- the clock moves --------------------------------------------------------------------------------
for now in range(1, 40):
    if timer.advance_clock(0):  # True when a bucket expired
        show(timer, f"{now:2} ms: a bucket expired; the wheels now hold")
        if now == 20:
            # The second wheel's bucket expired at 20 ms; its tasks were not due, so they were
            # added again and fell into the first wheel, whose 20 buckets now cover 20..39 ms.
            assert wheels(timer) == {
                1: {5: (["C"], 25), 10: (["D"], 30), 15: (["E"], 35)},
            }

assert ran == [("A", 8), ("B", 8), ("C", 25), ("D", 30), ("E", 35)]
assert timer.size() == 0
print("every task ran at its deadline, not a millisecond early or late")
