"""AIOKafkaProducer.send(): the append that never waits, and the worker thread for the one that would."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("_boxes", pathlib.Path(__file__).with_name("_boxes.py"))
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(11, 5.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.3, 5.3, "event loop's thread", fontsize=10, weight="bold")
    b(ax, 0.3, 4.5, 3.4, 0.5, "await producer.send()")
    b(ax, 0.3, 3.5, 3.4, 0.6, "serialize (once)")
    b(ax, 0.3, 2.3, 3.4, 0.7, "RecordAppender.append()\nmax.block.ms = 0", "compiled", size=8)
    b(ax, 0.3, 1.1, 3.4, 0.6, "FutureRecordMetadata\n(queued: send() returns)", "compiled", size=8)
    a(ax, 2.0, 4.5, 2.0, 4.1)
    a(ax, 2.0, 3.5, 2.0, 3.0)
    a(ax, 2.0, 2.3, 2.0, 1.7, "appended")
    ax.text(4.4, 5.3, "worker thread (if it would wait)", fontsize=10, weight="bold")
    b(ax, 4.4, 3.4, 3.2, 0.8, "no metadata yet\nor no memory:\n_WouldBlock / BufferExhausted", size=8)
    b(ax, 4.4, 2.0, 3.2, 0.8, "RecordAppender.append()\nwaits <= max.block.ms", "thread", size=8)
    a(ax, 3.7, 2.7, 4.4, 3.7)
    a(ax, 6.0, 3.4, 6.0, 2.8, "run_in_executor")
    a(ax, 4.4, 2.3, 3.7, 1.5, "awaited")
    ax.text(8.4, 5.3, "Sender thread", fontsize=10, weight="bold")
    b(ax, 8.2, 3.4, 2.6, 0.8, "drain, send,\nProducerBatch.done()", "thread", size=8)
    b(ax, 8.2, 2.0, 2.6, 0.8, "await future:\ncall_soon_threadsafe", "thread", size=8)
    a(ax, 9.5, 3.4, 9.5, 2.8)
    a(ax, 8.2, 2.2, 3.7, 1.3, "wakes the loop")
    _boxes.legend(ax, 0.3, 0.3)
    _boxes.save(fig, out_dir / "asyncio.png")
