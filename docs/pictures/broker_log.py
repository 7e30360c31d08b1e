"""Pictures of the broker's log chapters, drawn from a real ``Log`` in a temporary directory.

broker_log_segments.png     a partition's segments: the batches in each .log file, the sparse index
broker_idempotence.png      one producer's state and what the log answers to four incoming batches
broker_time_index.png       one segment's records and their timestamps, its .timeindex entries,
                            and what ListOffsets by time answers
"""

import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from kafkacore.broker.log import Log, LogConfig  # noqa: E402
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder  # noqa: E402
from kafkacore.errors import BrokerResponseError  # noqa: E402

BATCH = "#fde2c8"
ACTIVE = "#e3f1dc"
INDEX = "#1f5fa8"
PID = 7


def _batch(n, seq=-1, epoch=-1, pid=-1):
    b = MemoryRecordsBuilder(4096, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        b.append(1_700_000_000_000, None, b"v" * (20 + 10 * i))
    b.close()
    return bytes(b.build())


def _segments(out_dir, directory):
    log = Log(directory / "orders-0", LogConfig(segment_bytes=900, index_interval_bytes=250))
    for i in range(16):
        log.append_as_leader(_batch(1 + i % 4))
    segments = log.segments
    scale = 9.0 / 900
    fig, ax = plt.subplots(figsize=(11, 0.9 + 0.9 * len(segments)))
    ax.set_xlim(-2.6, 9.6)
    ax.set_ylim(-0.6, len(segments) * 1.0 + 0.2)
    ax.axis("off")
    for row, seg in enumerate(segments):
        y = (len(segments) - 1 - row) * 1.0
        active = seg is log.active_segment
        ax.text(
            -2.55,
            y + 0.25,
            seg.log_path.name + ("\n(active)" if active else ""),
            fontsize=7.5,
            family="monospace",
            va="center",
        )
        for h in seg.iter_headers():
            x = h.position * scale
            ax.add_patch(
                Rectangle(
                    (x, y),
                    h.size * scale,
                    0.5,
                    fc=ACTIVE if active else BATCH,
                    ec="#555555",
                    lw=0.8,
                )
            )
            ax.text(
                x + h.size * scale / 2,
                y + 0.25,
                f"{h.base_offset}-{h.last_offset}",
                ha="center",
                va="center",
                fontsize=7,
            )
        for offset, position in seg.index.entries():
            x = position * scale
            ax.annotate(
                "",
                xy=(x, y + 0.5),
                xytext=(x, y + 0.8),
                arrowprops={"arrowstyle": "->", "color": INDEX},
            )
            ax.text(
                x + 0.03,
                y + 0.72,
                f"{offset - seg.base_offset}\u2192{position}",
                fontsize=6.5,
                color=INDEX,
            )
    ax.text(
        0,
        -0.45,
        f"log start offset {log.log_start_offset}, log end offset "
        f"{log.log_end_offset}; blue: .index entries (relative offset \u2192 byte position), "
        "one per index.interval.bytes",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(out_dir / "broker_log_segments.png", dpi=110)
    plt.close(fig)
    log.close()


def _idempotence(out_dir, directory):
    log = Log(directory / "orders-1")
    log.append_as_leader(_batch(3))  # another producer's records first: offsets are not sequences
    for k in range(7):
        log.append_as_leader(_batch(2, seq=2 * k, epoch=1, pid=PID))
    entry = log.producer_state.last_entry(PID)
    incoming = [
        ("seq 6-7, epoch 1", _batch(2, 6, 1, PID)),
        ("seq 14-15, epoch 1", _batch(2, 14, 1, PID)),
        ("seq 20-21, epoch 1", _batch(2, 20, 1, PID)),
        ("seq 16-17, epoch 0", _batch(2, 16, 0, PID)),
    ]
    verdicts = []
    for label, data in incoming:
        try:
            info = log.append_as_leader(data)
        except BrokerResponseError as exc:
            verdicts.append((label, f"{type(exc).__name__}\n(error {exc.errno}), nothing written"))
        else:
            what = "duplicate: not written,\nanswered" if info.duplicate else "appended at"
            verdicts.append((label, f"{what} offsets {info.first_offset}-{info.last_offset}"))
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 3.6)
    ax.axis("off")
    ax.text(
        0.1,
        3.3,
        f"producer id {PID}, epoch {entry.producer_epoch}: the last"
        f" {len(entry.batch_metadata)} batches it wrote to this partition",
        fontsize=9,
    )
    for i, m in enumerate(entry.batch_metadata):
        y = 2.75 - i * 0.5
        ax.add_patch(Rectangle((0.1, y), 3.6, 0.4, fc=BATCH, ec="#555555", lw=0.8))
        ax.text(
            1.9,
            y + 0.2,
            f"seq {m.first_seq}-{m.last_seq} \u2192 offsets {m.first_offset}-{m.last_offset}",
            ha="center",
            va="center",
            fontsize=8,
            family="monospace",
        )
    for i, (label, verdict) in enumerate(verdicts):
        y = 2.75 - i * 0.72
        ax.add_patch(Rectangle((4.6, y - 0.1), 2.1, 0.5, fc="#dbe9f6", ec="#555555", lw=0.8))
        ax.text(5.65, y + 0.15, label, ha="center", va="center", fontsize=8, family="monospace")
        ax.annotate(
            "",
            xy=(7.0, y + 0.15),
            xytext=(6.7, y + 0.15),
            arrowprops={"arrowstyle": "->", "color": "#333333"},
        )
        ax.text(7.1, y + 0.15, verdict, va="center", fontsize=8)
    ax.text(4.6, 3.3, "incoming batches, in this order", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / "broker_idempotence.png", dpi=110)
    plt.close(fig)
    log.close()


def _time_index(out_dir, directory):
    """Seven batches whose record timestamps do not grow, an entry every 80 bytes."""
    base = 1_700_000_000_000
    stamps = [[30, 10, 20], [15, 40], [35, 25, 45], [44, 41], [60, 50, 55], [52, 58], [70, 65]]
    log = Log(directory / "clicks-0", LogConfig(index_interval_bytes=80))
    for batch in stamps:
        b = MemoryRecordsBuilder(4096)
        for ts in batch:
            b.append(base + ts * 1000, None, b"v" * 20)
        log.append_as_leader(bytes(b.build()))
    log.active_segment.on_become_inactive()  # the entry a roll would add
    seg = log.active_segment
    target = base + 42_000
    answer = log.fetch_offset_by_timestamp(target)
    records = [(o, ts) for o, ts in enumerate(t for batch in stamps for t in batch)]
    fig, ax = plt.subplots(figsize=(11, 2.9))
    ax.set_xlim(-0.5, len(records) + 0.5)
    ax.set_ylim(-1.5, 2.3)
    ax.axis("off")
    x = 0
    for h, batch in zip(seg.iter_headers(), stamps, strict=True):
        ax.add_patch(Rectangle((x - 0.05, 0.55), len(batch) - 0.9, 0.1, fc=BATCH, ec="#555555",
                               lw=0.6))
        ax.text(x + (len(batch) - 1) / 2, 0.8, f"batch {h.base_offset}-{h.last_offset}\n"
                f"max {(h.max_timestamp - base) // 1000}", ha="center", fontsize=6.5)
        x += len(batch)
    for offset, ts in records:
        hit = answer is not None and offset == answer[0]
        ax.add_patch(Rectangle((offset - 0.4, 0), 0.8, 0.45, fc="#f7c6c6" if hit else ACTIVE,
                               ec="#555555", lw=0.8))
        ax.text(offset, 0.22, f"{ts}", ha="center", va="center", fontsize=7)
        ax.text(offset, -0.15, f"{offset}", ha="center", fontsize=6.5, color="#555555")
    for ts, offset in seg.time_index.entries():
        ax.annotate("", xy=(offset, -0.3), xytext=(offset, -0.8),
                    arrowprops={"arrowstyle": "->", "color": INDEX})
        ax.text(offset + 0.08, -0.75, f"({(ts - base) // 1000}, {offset})", fontsize=6.5,
                color=INDEX)
    ax.text(-0.4, 1.6, "record timestamps (seconds after T) and offsets; blue: .timeindex "
            "entries (largest timestamp so far, last offset of its batch)", fontsize=8)
    start = seg.time_index.lookup(target)
    ax.text(-0.4, -1.3, f"ListOffsets at T+42: the last entry at or below 42, "
            f"({(start[0] - base) // 1000}, {start[1]}), says where to start reading; the first "
            f"record at or after 42 is offset {answer[0]} (red), not offset 5, where the first "
            "batch whose max reaches 42 starts", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "broker_time_index.png", dpi=110)
    plt.close(fig)
    log.close()


def draw(out_dir):
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        _segments(out_dir, Path(tmp))
        _idempotence(out_dir, Path(tmp))
        _time_index(out_dir, Path(tmp))


if __name__ == "__main__":
    draw(".")
