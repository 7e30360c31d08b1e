"""Pictures for the partitioner chapter, drawn from the real BuiltInPartitioner.

partitioner_sticky.png: null-key records stick to one partition for batch.size bytes, then move.
partitioner_adaptive.png: queue sizes turned into weights, and the shares the partitioner chose.
partitioner_choice.png: the three answers, with keys hashed by the real murmur2.
"""

import collections
import random

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from kafkacore.core.murmur2 import murmur2, partition_for_key  # noqa: E402
from kafkacore.partitioner import BuiltInPartitioner  # noqa: E402

PARTITIONS = 6
BATCH_SIZE = 16384
RECORD = 1024


class _Cluster:
    """A topic with PARTITIONS partitions, all with a leader."""

    def partitions_for_topic(self, topic):
        return list(range(PARTITIONS))

    def available_partitions_for_topic(self, topic):
        return list(range(PARTITIONS))


def _produce(partitioner, cluster, n):
    out = []
    for _ in range(n):
        p = partitioner.peek_current_partition(cluster)
        partitioner.update_partition_info(p, RECORD, cluster)
        out.append(p)
    return out


def _sticky(out_dir):
    cluster = _Cluster()
    parts = _produce(BuiltInPartitioner("clicks", BATCH_SIZE), cluster, 160)
    many = _produce(BuiltInPartitioner("clicks", BATCH_SIZE), cluster, 16 * 600)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [2.2, 1]})
    colours = plt.get_cmap("tab10")
    start = 0
    for i in range(1, len(parts) + 1):
        if i == len(parts) or parts[i] != parts[start]:
            p = parts[start]
            ax1.barh(p, i - start, left=start, height=0.6, color=colours(p), ec="#333333", lw=0.6)
            ax1.text(
                start + (i - start) / 2,
                p,
                f"{(i - start) * RECORD // 1024} KiB",
                ha="center",
                va="center",
                fontsize=7,
            )
            start = i
    for x in range(16, len(parts), 16):
        ax1.axvline(x, color="#999999", lw=0.6, ls=":")
    ax1.set_yticks(range(PARTITIONS))
    ax1.set_ylim(-0.6, PARTITIONS - 0.4)
    ax1.set_xlim(0, len(parts))
    ax1.set_xlabel(f"record number (each {RECORD} bytes, no key)")
    ax1.set_ylabel("partition")
    ax1.set_title(
        f"sticky: one partition until batch.size ({BATCH_SIZE // 1024} KiB) went there", fontsize=10
    )

    counts = collections.Counter(many)
    ax2.bar(
        range(PARTITIONS),
        [counts[p] for p in range(PARTITIONS)],
        color=[colours(p) for p in range(PARTITIONS)],
        ec="#333333",
        lw=0.6,
    )
    ax2.axhline(len(many) / PARTITIONS, color="#333333", ls="--", lw=0.8)
    ax2.text(
        PARTITIONS - 0.5, len(many) / PARTITIONS, " fair share", va="bottom", ha="right", fontsize=8
    )
    ax2.set_xticks(range(PARTITIONS))
    ax2.set_xlabel("partition")
    ax2.set_ylabel("records")
    ax2.set_title(f"{len(many) // 16} batches later: spread evenly", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "partitioner_sticky.png", dpi=110)
    plt.close(fig)


def _adaptive(out_dir):
    queue_sizes = [0, 3, 1]
    ids = [0, 1, 2]
    top = max(queue_sizes) + 1
    weights = [top - q for q in queue_sizes]
    partitioner = BuiltInPartitioner("clicks", 1)
    partitioner.update_partition_load_stats(queue_sizes, ids)

    class Three:
        def partitions_for_topic(self, topic):
            return ids

        def available_partitions_for_topic(self, topic):
            return ids

    n = 8000
    chosen = collections.Counter()
    for _ in range(n):
        p = partitioner.peek_current_partition(Three())
        partitioner.update_partition_info(p, 1, Three())  # batch size 1: every record switches
        chosen[p] += 1

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.2))
    colours = plt.get_cmap("tab10")
    left = 0
    for p, w in zip(ids, weights, strict=True):
        ax1.barh(0, w, left=left, color=colours(p), ec="#333333")
        ax1.text(
            left + w / 2,
            0,
            f"partition {p}\nqueue {queue_sizes[p]}\nweight {w}",
            ha="center",
            va="center",
            fontsize=8,
        )
        left += w
    ax1.set_xlim(0, left)
    ax1.set_ylim(-0.5, 0.5)
    ax1.set_yticks([])
    ax1.set_xlabel("a uniform number in [0, 8) picks the slot it falls in")
    ax1.set_title(
        "weight = longest queue + 1 - queue; cumulative 4, 5, 8 (Java's example)", fontsize=10
    )

    x = range(len(ids))
    ax2.bar(
        [i - 0.2 for i in x],
        [w / sum(weights) for w in weights],
        width=0.4,
        color="#cccccc",
        ec="#333333",
        label="weight share",
    )
    ax2.bar(
        [i + 0.2 for i in x],
        [chosen[p] / n for p in ids],
        width=0.4,
        color=[colours(p) for p in ids],
        ec="#333333",
        label=f"chosen ({n} switches)",
    )
    ax2.set_xticks(list(x))
    ax2.set_xticklabels([f"partition {p}" for p in ids])
    ax2.set_ylabel("share of switches")
    ax2.legend(fontsize=8)
    ax2.set_title("BuiltInPartitioner follows the weights", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "partitioner_adaptive.png", dpi=110)
    plt.close(fig)


def _choice(out_dir):
    fig, ax = plt.subplots(figsize=(10, 3.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.4)
    ax.axis("off")
    rows = [
        ("the record names a partition", "that partition"),
        ("partitioner.class is set", "whatever it returns"),
        ("the record has a key", "toPositive(murmur2(key)) % partitions"),
        ("no key", "the topic's sticky partition (moves on after ~batch.size bytes)"),
    ]
    for i, (when, answer) in enumerate(rows):
        y = 2.9 - i * 0.55
        ax.text(0.1, y, f"{i + 1}. {when}", fontsize=9)
        ax.text(3.6, y, "->  " + answer, fontsize=9, family="monospace")
    ax.text(0.1, 0.75, f"keys with {PARTITIONS} partitions (computed by kafkacore.core.murmur2):",
            fontsize=9, weight="bold")
    keys = [b"user-0", b"user-1", b"user-2", b"order-7"]
    line = "   ".join(f"{k.decode()}: murmur2 {murmur2(k)} -> {partition_for_key(k, PARTITIONS)}"
                      for k in keys[:2])
    line2 = "   ".join(f"{k.decode()}: murmur2 {murmur2(k)} -> {partition_for_key(k, PARTITIONS)}"
                       for k in keys[2:])
    ax.text(0.1, 0.4, line, fontsize=8, family="monospace")
    ax.text(0.1, 0.1, line2, fontsize=8, family="monospace")
    fig.savefig(out_dir / "partitioner_choice.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(out_dir):
    _choice(out_dir)
    state = random.getstate()
    random.seed(2024)  # the same pictures on every build
    try:
        _sticky(out_dir)
        _adaptive(out_dir)
    finally:
        random.setstate(state)
