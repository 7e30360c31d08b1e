"""Metadata: a user thread waits for a topic while the Sender thread fetches it (as in the Java producer)."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _wait_for_topic(out_dir):
    fig, ax = _boxes.figure(12.0, 6.4)
    lanes = [
        (1.6, 'user thread\nsend("orders", ...)', "thread"),
        (6.0, "Metadata\n(one lock, a condition)", "python"),
        (10.2, "Sender thread\nNetworkClient.poll", "thread"),
    ]
    for x, label, kind in lanes:
        _boxes.box(ax, x - 1.2, 5.6, 2.4, 0.7, label, kind, 8)
        ax.plot([x, x], [0.3, 5.6], color="#999999", lw=1, ls="--")

    def msg(y, x1, x2, text, colour="#333333"):
        ax.annotate(
            "", xy=(x2, y), xytext=(x1, y), arrowprops={"arrowstyle": "->", "color": colour}
        )
        ax.text((x1 + x2) / 2, y + 0.08, text, fontsize=8, ha="center", color=colour)

    msg(5.1, 1.6, 6.0, "fetch(): no partitions for orders")
    msg(4.6, 1.6, 6.0, "add_topic, request_update() -> version 7")
    msg(4.1, 1.6, 10.2, "sender.wakeup()")
    ax.text(
        1.75, 2.95, "await_update(7, remaining)\nwaits on the condition\n(GIL released)", fontsize=8
    )
    msg(3.6, 10.2, 6.0, "time_to_next_update() == 0")
    ax.text(7.0, 3.0, "MetadataRequest(topics=[orders])\n-> least loaded node", fontsize=8)
    msg(2.4, 10.2, 6.0, "update(response): version 8, notify_all")
    msg(1.8, 6.0, 1.6, "woken: version 8 > 7")
    ax.text(
        1.75,
        0.6,
        "partition_count(orders) known -> go on.\n"
        "Unknown topic (3) or no leader (5): loop, until max.block.ms.\n"
        "Invalid topic (17), not authorized (29): raise at once.",
        fontsize=8,
    )
    _boxes.save(fig, out_dir / "metadata_wait.png")


def _epochs(out_dir):
    import matplotlib.pyplot as plt

    from kafkacore.metadata import Metadata

    # Replay a sequence of answers through the real Metadata and plot what it kept.
    answers = [(1, 3), (1, 3), (2, 4), (1, 3), (2, 4), (3, 5), (2, 4), (3, 5)]
    md = Metadata()
    md.add_topic("t", 0)
    kept = []
    for i, (leader, epoch) in enumerate(answers):
        md.update(
            {
                "brokers": [
                    {"node_id": n, "host": "h", "port": 1, "rack": None} for n in (1, 2, 3)
                ],
                "topics": [
                    {
                        "error_code": 0,
                        "name": "t",
                        "partitions": [
                            {
                                "error_code": 0,
                                "partition_index": 0,
                                "leader_id": leader,
                                "leader_epoch": epoch,
                                "replica_nodes": [1, 2, 3],
                                "isr_nodes": [1, 2, 3],
                            }
                        ],
                    }
                ],
            },
            now_ms=i,
        )
        kept.append(md.fetch().partition("t", 0).leader_epoch)
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    xs = range(len(answers))
    ax.plot(xs, [e for _, e in answers], "o", label="epoch in the response", ms=9, alpha=0.5)
    ax.plot(xs, kept, "s-", label="epoch Metadata kept", ms=5)
    for x, (leader, epoch) in zip(xs, answers, strict=True):
        ax.text(x, epoch + 0.15, f"leader {leader}", fontsize=7, ha="center")
    ax.set_xlabel("metadata response (from different brokers, some behind)")
    ax.set_ylabel("leader epoch of t-0")
    ax.set_ylim(2.5, 5.8)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    _boxes.save(fig, out_dir / "metadata_epochs.png")


def draw(out_dir):
    out_dir = pathlib.Path(out_dir)
    _wait_for_topic(out_dir)
    _epochs(out_dir)
