"""The life of a record: from send() on the caller's thread to its offset on the Sender thread."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("_boxes", pathlib.Path(__file__).with_name("_boxes.py"))
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(11, 7.2)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.3, 6.9, "caller's thread", fontsize=10, weight="bold")
    b(ax, 0.3, 6.1, 3.2, 0.5, "KafkaProducer.send()\n(interceptors' on_send)", size=8)
    b(ax, 0.3, 5.0, 3.2, 0.7, "RecordAppender.append():\nserialize, metadata snapshot,\n"
      "size check, choose partition", "compiled", size=7)
    b(ax, 4.2, 5.0, 3.0, 0.7, "CopyOnWriteMap\ntp -> PartitionQueue", "compiled", size=8)
    b(ax, 0.3, 3.9, 3.2, 0.6, "ProducerBatch.try_append()\n-> future (under the lock)", "compiled",
      size=8)
    b(ax, 4.2, 3.9, 3.0, 0.6, "no room:\nRecordAccumulator.append(),\nBufferPool.allocate()",
      size=7)
    b(ax, 0.3, 2.8, 3.2, 0.6, "MemoryRecordsBuilder.append()\nvarints into the buffer", "compiled",
      size=8)
    a(ax, 1.9, 6.1, 1.9, 5.7)
    a(ax, 3.5, 5.35, 4.2, 5.35)
    a(ax, 1.9, 5.0, 1.9, 4.5)
    a(ax, 3.5, 4.2, 4.2, 4.2)
    a(ax, 1.9, 3.9, 1.9, 3.4)
    ax.text(7.9, 6.9, "Sender thread", fontsize=10, weight="bold")
    b(ax, 7.9, 6.1, 3.0, 0.5, "ready(): which leaders", "thread", size=8)
    b(ax, 7.9, 5.2, 3.0, 0.5, "drain(): batches per node", "thread", size=8)
    b(ax, 7.9, 4.3, 3.0, 0.5, "ProduceRequest\n(no copies)", "wire", size=8)
    b(ax, 7.9, 3.1, 3.0, 0.7, "NetworkClient.poll()\nresponse", "thread", size=8)
    b(ax, 7.9, 2.0, 3.0, 0.7, "ProducerBatch.done()\nfutures + callbacks, once", "compiled", size=8)
    b(ax, 7.9, 0.9, 3.0, 0.6, "BufferPool.deallocate()", "compiled", size=8)
    for y1, y2 in ((6.1, 5.7), (5.2, 4.8), (4.3, 3.8), (3.1, 2.7), (2.0, 1.5)):
        a(ax, 9.4, y1, 9.4, y2)
    a(ax, 7.2, 4.2, 7.9, 6.3, "wakeup")
    _boxes.legend(ax, 0.3, 0.3)
    _boxes.save(fig, out_dir / "life_of_a_record.png")
