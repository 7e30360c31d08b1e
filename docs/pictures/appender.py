"""The append path: every record's steps in compiled code, the rare per-batch step in Python."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(11, 5.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 5.3, "RecordAppender.append(): once per record", fontsize=10, weight="bold")
    steps = [
        ("check arguments, normalise headers", 4.5),
        ("_snapshot(): the topic's partition count\n(waits for metadata the first time)", 3.6),
        ("size check: max.request.size, buffer.memory", 2.7),
        ("choose the partition: explicit,\npartitioner.class, murmur2(key), sticky", 1.8),
    ]
    for text, y in steps:
        b(ax, 0.2, y, 4.4, 0.65, text, "compiled", 8)
    for (_, y1), (_, y2) in zip(steps, steps[1:], strict=False):
        a(ax, 2.4, y1, 2.4, y2 + 0.65)
    b(ax, 5.4, 1.8, 2.6, 0.65, "PartitionQueue lock:\nlast batch try_append", "compiled", 8)
    a(ax, 4.6, 2.12, 5.4, 2.12)
    b(ax, 5.4, 3.3, 2.6, 0.65, "fast path: a future\n(wake the Sender if full)", "compiled", 8)
    a(ax, 6.7, 2.45, 6.7, 3.3, "room")
    b(ax, 8.5, 1.8, 2.4, 0.65, "slow path, once a batch:\nRecordAccumulator.append", "python", 7)
    a(ax, 8.0, 2.12, 8.5, 2.12)
    ax.text(8.05, 2.2, "full", fontsize=8, color="#333333")
    b(ax, 8.5, 0.7, 2.4, 0.65, "BufferPool.allocate\nnew ProducerBatch", "compiled", 8)
    a(ax, 9.7, 1.8, 9.7, 1.35)
    _boxes.legend(ax, 0.2, 0.3)
    _boxes.save(fig, pathlib.Path(out_dir) / "appender.png")
