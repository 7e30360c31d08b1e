"""The life of a record: from send() to its offset on the producer's side; through the leader,
its follower and the purgatories to a consumer on the broker's side."""

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
    draw_broker(out_dir)


def draw_broker(out_dir):
    """The second half: the leader's reactor, its log, the follower, the purgatories, a consumer."""
    fig, ax = _boxes.figure(12, 7.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 7.3, "leader (broker 1)", fontsize=10, weight="bold")
    b(ax, 0.2, 6.3, 2.4, 0.7, "Sender\nProduceRequest acks=all", "thread", 7)
    b(ax, 3.0, 6.3, 2.4, 0.7, "Acceptor -> Processor\nread frame, mute", "thread", 7)
    b(ax, 5.8, 6.3, 2.5, 0.7, "RequestChannel\nrequest queue", "python", 7)
    b(ax, 8.7, 6.3, 3.1, 0.7, "KafkaRequestHandler\nKafkaApis.handle_produce_request", "thread", 7)
    a(ax, 2.6, 6.65, 3.0, 6.65)
    a(ax, 5.4, 6.65, 5.8, 6.65)
    a(ax, 8.3, 6.65, 8.7, 6.65)
    b(ax, 8.7, 5.1, 3.1, 0.8, "ReplicaManager.append_records\nPartition.append_records_to_leader"
      "\nLog.append_as_leader: LEO+1", "python", 6.5)
    a(ax, 10.25, 6.3, 10.25, 5.9)
    b(ax, 5.0, 5.1, 3.2, 0.8, "produce purgatory\nDelayedProduce: HW > last offset?\n"
      "(timer: timeout_ms)", "python", 7)
    a(ax, 8.7, 5.5, 8.2, 5.5)
    ax.text(8.22, 5.95, "acks=all", fontsize=8, color="#333333")
    ax.text(0.2, 4.55, "follower (broker 2)", fontsize=10, weight="bold")
    b(ax, 0.2, 3.5, 3.4, 0.8, "ReplicaFetcherThread\nFetch(fetch_offset = its LEO)\n"
      "append_records_to_follower", "thread", 7)
    b(ax, 4.4, 3.5, 4.3, 0.8, "leader: update_follower_fetch_state\n"
      "HW = min LEO over the ISR\ncomplete_delayed_requests(partition)", "python", 7)
    a(ax, 3.6, 3.9, 4.4, 3.9)
    ax.text(3.7, 4.35, "fetch", fontsize=8, color="#333333")
    a(ax, 6.5, 4.3, 6.5, 5.1, "check_and_complete")
    b(ax, 9.3, 3.5, 2.5, 0.8, "ProduceResponse\nbase_offset; unmute\nwhen written", "wire", 7)
    a(ax, 8.2, 5.3, 9.8, 4.3, "on_complete")
    ax.text(0.2, 2.85, "consumer", fontsize=10, weight="bold")
    b(ax, 0.2, 1.7, 3.4, 0.9, "Fetch(replica_id -1,\nmax_wait_ms, min_bytes)\n"
      "reads below HW (or LSO)", "thread", 7)
    b(ax, 4.4, 1.7, 4.3, 0.9, "fetch purgatory\nDelayedFetch: long poll, answered\n"
      "when the HW passes fetch_offset", "python", 7)
    a(ax, 3.6, 2.15, 4.4, 2.15)
    ax.text(3.55, 2.7, "too little", fontsize=8, color="#333333")
    a(ax, 6.0, 3.5, 6.0, 2.6, "HW moved")
    b(ax, 9.3, 1.7, 2.5, 0.9, "FetchResponse\nFileRecords:\nsendfile", "wire", 7)
    a(ax, 8.7, 2.15, 9.3, 2.15)
    b(ax, 0.2, 0.7, 11.6, 0.6, "OffsetCommit: GroupCoordinator -> GroupMetadataManager.store_offsets:"
      " a record appended (acks=all) to __consumer_offsets", "python", 7)
    _boxes.save(fig, out_dir / "life_of_a_record_broker.png")
