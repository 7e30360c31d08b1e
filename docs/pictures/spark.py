"""Producing from Spark: where the producers live, and what a retried task sends.

spark_executors.png: the driver checks the schema and collects one summary row per task; each
Python worker keeps one cached producer per configuration; Arrow batches go to send_batch.
spark_retry.png: a task that dies after sending some batches is run again from its first row,
so the broker holds those records twice (at-least-once).
spark_exactly_once.png: exactly-once tasks: a retry fences and aborts what the dead attempt left
open, and an attempt that finds its partition committed writes nothing.
spark_streaming_sink.png: the streaming sink's completion marks across a driver killed before
Spark's commit log, and the replayed micro-batch that writes nothing.
"""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("_boxes", pathlib.Path(__file__).with_name("_boxes.py"))
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw_executors(path):
    fig, ax = _boxes.figure(11, 6.0)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 5.7, "driver", fontsize=10, weight="bold")
    b(ax, 0.2, 4.6, 3.0, 0.8, "write_to_kafka(df, topic, cfg)\ncheck df.schema, cfg\n(no job yet)",
      size=8)
    b(ax, 0.2, 3.2, 3.0, 0.8, "df.mapInArrow(task)\n.collect()", size=8)
    b(ax, 0.2, 1.6, 3.0, 0.9, "WriteSummary\nrecords, failures,\nper partition, seconds", size=8)
    a(ax, 1.7, 4.6, 1.7, 4.0)
    a(ax, 1.7, 3.2, 1.7, 2.5, "one row per task")

    for i, (y, tasks) in enumerate(((3.5, "tasks 0, 2, 4 ..."), (0.6, "tasks 1, 3, 5 ..."))):
        ax.text(4.0, y + 2.0, f"Python worker {i + 1} (pid {4101 + i}, reused)", fontsize=9,
                weight="bold")
        b(ax, 4.0, y + 1.1, 2.4, 0.6, f"Arrow batches\n{tasks}", "wire", size=8)
        b(ax, 4.0, y + 0.1, 2.4, 0.6, "send_batch(topic,\nvalues, keys)", size=8)
        b(ax, 7.0, y + 0.1, 1.9, 1.6, "cached\nKafkaProducer\n\nkey = cfg\npid checked",
          "compiled", size=8)
        a(ax, 5.2, y + 1.1, 5.2, y + 0.7)
        a(ax, 6.4, y + 0.4, 7.0, y + 0.4)
        a(ax, 8.9, y + 0.9, 9.6, 2.9 if i == 0 else 2.5)
        a(ax, 4.0, y + 0.4, 3.2, 3.6 if i == 0 else 3.4)
    b(ax, 9.6, 2.2, 1.2, 1.0, "broker", "thread", size=9)
    ax.text(4.0, 0.15, "flush() before the task's last row: a task ends only when its records "
            "are acked", fontsize=8, style="italic")
    _boxes.save(fig, path)


def draw_retry(path):
    fig, ax = _boxes.figure(11, 3.6)
    b = _boxes.box
    ax.text(0.2, 3.3, "task 7, attempt 0", fontsize=9, weight="bold")
    for j in range(3):
        b(ax, 0.2 + j * 1.5, 2.5, 1.3, 0.5, f"batch {j}\nacked", "compiled", size=8)
    b(ax, 4.7, 2.5, 1.3, 0.5, "batch 3\nsending", "wire", size=8)
    ax.text(6.2, 2.68, "executor dies: no summary row", fontsize=9, color="#b00000")
    ax.text(0.2, 1.8, "task 7, attempt 1 (Spark retries it from the first row)", fontsize=9,
            weight="bold")
    for j in range(6):
        b(ax, 0.2 + j * 1.5, 1.0, 1.3, 0.5, f"batch {j}\nacked", "compiled", size=8)
    ax.text(9.3, 1.18, "summary row", fontsize=9)
    ax.text(0.2, 0.3, "In the topic: batches 0-2 twice (and perhaps part of batch 3), batches "
            "4-5 once. Nothing missing; duplicates possible.", fontsize=9)
    _boxes.save(fig, path)


def draw_exactly_once(path):
    fig, ax = _boxes.figure(11, 6.4)
    b = _boxes.box

    def row(y, title, steps, note=None, colour="#000000"):
        ax.text(0.2, y + 0.75, title, fontsize=9, weight="bold")
        x = 0.2
        for text, kind in steps:
            w = 1.55
            b(ax, x, y, w - 0.1, 0.55, text, kind, size=7)
            x += w
        if note:
            ax.text(x, y + 0.2, note, fontsize=8, color=colour)

    row(5.2, "Spark partition 2, attempt 0 (transactional.id = kafkacore-spark-W-2)",
        [("init_transactions\nepoch 0", "thread"), ("OffsetFetch\nW-2: none", "wire"),
         ("begin", "python"), ("batch 0\n(in txn)", "compiled"), ("batch 1\n(in txn)", "compiled")],
        "worker dies: transaction left open", "#b00000")
    row(3.9, "Spark partition 2, attempt 1",
        [("init_transactions\nepoch 1: fences 0,\naborts its txn", "thread"),
         ("OffsetFetch\nW-2: none", "wire"), ("begin; batches\n0 .. 5", "compiled"),
         ("send_offsets\nW-2: (topic, 0)\n= rows sent", "python"),
         ("commit", "thread")], "summary row")
    row(2.3, "Spark partition 3, attempt 0",
        [("init_transactions\nepoch 0", "thread"), ("OffsetFetch\nW-3: none", "wire"),
         ("begin; batches\n0 .. 5", "compiled"), ("send_offsets\nW-3", "python"),
         ("commit", "thread")], "dies before its summary row", "#b00000")
    row(1.0, "Spark partition 3, attempt 1",
        [("init_transactions\nepoch 1", "thread"),
         ("OffsetFetch\nW-3: committed", "wire")], "writes nothing; summary from the commit")
    ax.text(0.2, 0.3, "A read_committed consumer sees partition 2's attempt 1 and partition 3's "
            "attempt 0: each row once. The records and the completion offset commit together.",
            fontsize=9)
    _boxes.save(fig, path)


def draw_streaming_sink(path):
    """The streaming sink across a driver killed before Spark's commit log, then restarted."""
    fig, ax = _boxes.figure(11, 6.0)
    b = _boxes.box

    def row(y, title, steps, note=None, colour="#000000"):
        ax.text(0.2, y + 0.75, title, fontsize=9, weight="bold")
        x = 0.2
        for text, kind in steps:
            w = 1.75
            b(ax, x, y, w - 0.1, 0.55, text, kind, size=7)
            x += w
        if note:
            ax.text(x, y + 0.2, note, fontsize=8, color=colour)

    row(4.8, "driver, first run (query Q, checkpoint C)",
        [("offsets log:\nbatch 7 planned", "wire"), ("tasks p0, p1\nof batch 7", "python"),
         ("sink commit():\nall tasks done", "python")],
        "SIGKILL before the commit log says batch 7", "#b00000")
    row(3.5, "task p0 of batch 7 (transactional.id = <prefix>-Q-0)",
        [("init_transactions\nfences older p0", "thread"), ("OffsetFetch Q-0:\nmark 7, not > 7", "wire"),
         ("begin; rows\nas send_batch", "compiled"), ("TxnOffsetCommit\nQ-0 := 8", "python"),
         ("commit", "thread")], "rows and mark visible together")
    row(2.2, "driver, restarted on C: Spark replays batch 7 (same offsets, same query id Q)",
        [("offsets log:\nbatch 7 again", "wire"), ("tasks p0, p1\nof batch 7", "python"),
         ("commit log:\nbatch 7", "wire"), ("batch 8 ...", "python")])
    row(0.9, "task p0 of batch 7, replayed",
        [("init_transactions\nfences, settles", "thread"),
         ("OffsetFetch Q-0:\nmark 8 > 7", "wire")], "writes nothing, reports the mark's counts")
    ax.text(0.2, 0.3, "A read_committed consumer sees batch 7's rows once: the rows and their "
            "completion mark commit in one transaction.", fontsize=9)
    _boxes.save(fig, path)


def draw(out_dir):
    out_dir = pathlib.Path(out_dir)
    draw_streaming_sink(out_dir / "spark_streaming_sink.png")
    draw_executors(out_dir / "spark_executors.png")
    draw_retry(out_dir / "spark_retry.png")
    draw_exactly_once(out_dir / "spark_exactly_once.png")
