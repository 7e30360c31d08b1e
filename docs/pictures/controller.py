"""The controller chapter's picture: one QuorumController, its metadata log, and the brokers
that talk to it (registration and heartbeats, AlterPartition, forwarded admin calls) and pull its
records."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(12, 5.4)
    b, a = _boxes.box, _boxes.arrow
    b(ax, 0.2, 3.2, 4.4, 1.6, "QuorumController (one lock)\nbrokers: id, epoch, fenced?\n"
      "topics: partitions with replicas,\nISR, leader, leader epoch,\npartition epoch; configs; quotas",
      "python", 8)
    b(ax, 0.2, 0.4, 4.4, 1.5, "metadata log  (controller-state.log)\n"
      "RegisterBrokerRecord  TopicRecord\nPartitionRecord  PartitionChangeRecord\n"
      "Fence/UnfenceBrokerRecord ... + snapshot", "wire", 8)
    b(ax, 5.2, 3.6, 2.4, 0.9, "fencer thread:\nno heartbeat for\nbroker.session.timeout.ms", "thread", 7)
    for i, y in enumerate((3.9, 2.3, 0.7)):
        b(ax, 9.2, y, 2.6, 1.0, f"broker {i + 1}\nMetadataLoader pulls\nfrom its own offset", "thread", 7)
    a(ax, 2.4, 3.2, 2.4, 1.9)
    ax.text(2.5, 2.5, "1. every change appended\n   (one batch, one fsync)\n   before it is answered",
            fontsize=7, color="#333333")
    a(ax, 9.2, 4.5, 4.6, 4.3)
    ax.text(5.0, 4.75, "BrokerRegistration, BrokerHeartbeat, AlterPartition,\n"
            "forwarded CreateTopics / AlterConfigs / ...", fontsize=7, color="#333333")
    a(ax, 5.2, 4.0, 4.6, 4.0)
    a(ax, 4.6, 1.2, 9.2, 1.2)
    a(ax, 4.6, 1.4, 9.2, 2.7)
    a(ax, 4.6, 1.6, 9.2, 4.1)
    ax.text(5.3, 0.55, "2. records fetched (Fetch of __cluster_metadata)\n"
            "   every broker.heartbeat.interval.ms", fontsize=7, color="#333333")
    ax.text(0.2, 5.15, "the controller decides, writes, then answers; brokers learn by pulling "
            "its records (a quorum of one: several controllers are future work)",
            fontsize=8, weight="bold")
    _boxes.save(fig, pathlib.Path(out_dir) / "controller.png")
