"""Pictures of the record-batch chapter, drawn from a batch the real builder wrote.

records_header.png  the 61-byte v2 batch header, 16 bytes a row, each field at its offset
records_record.png  one record's bytes: the varint-framed fields, sized as actually written
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from kafkacore.core.memory_records_builder import MemoryRecordsBuilder  # noqa: E402

# (name, size, colour) in wire order; colours group the fields by who sets them.
BROKER = "#dbe9f6"  # the broker overwrites these (offset, leader epoch)
FRAME = "#eeeeee"  # framing: length, magic, CRC
BATCH = "#fde2c8"  # the builder, at close()
PRODUCER = "#e3f1dc"  # idempotence: the Sender sets these when it drains the batch
DATA = "#fff2cc"  # the user's bytes (record picture)
HEADER = [
    ("baseOffset", 8, BROKER),
    ("batchLength", 4, FRAME),
    ("partitionLeaderEpoch", 4, BROKER),
    ("magic", 1, FRAME),
    ("crc", 4, FRAME),
    ("attributes", 2, BATCH),
    ("lastOffsetDelta", 4, BATCH),
    ("baseTimestamp", 8, BATCH),
    ("maxTimestamp", 8, BATCH),
    ("producerId", 8, PRODUCER),
    ("producerEpoch", 2, PRODUCER),
    ("baseSequence", 4, PRODUCER),
    ("recordCount", 4, BATCH),
]
ROW = 16


def _header(out_dir):
    fig, ax = plt.subplots(figsize=(9, 3.3))
    offset = 0
    rows = (61 + ROW - 1) // ROW
    for name, size, colour in HEADER:
        start, end = offset, offset + size
        pieces = []
        while start < end:
            row_end = (start // ROW + 1) * ROW
            piece_end = min(end, row_end)
            pieces.append((start, piece_end))
            start = piece_end
        widest = max(pieces, key=lambda p: p[1] - p[0])
        for a, b in pieces:
            y = rows - 1 - a // ROW
            ax.add_patch(Rectangle((a % ROW, y), b - a, 0.9, fc=colour, ec="#555555"))
            if (a, b) == widest:
                ax.text(a % ROW + (b - a) / 2, y + 0.55, name, ha="center", va="center",
                        fontsize=7 if b - a >= 4 else 5.5)
                ax.text(a % ROW + (b - a) / 2, y + 0.18, f"@{offset}", ha="center",
                        va="center", fontsize=6, color="#555555")
        offset = end
    # the records start right after, at 61
    ax.add_patch(Rectangle((61 % ROW, rows - 1 - 61 // ROW), ROW - 61 % ROW, 0.9, fc="white",
                           ec="#555555", ls="--"))
    ax.text(61 % ROW + (ROW - 61 % ROW) / 2, rows - 1 - 61 // ROW + 0.45,
            "records @61 ...", ha="center", va="center", fontsize=7)
    for b in range(ROW):
        ax.text(b + 0.5, rows + 0.1, str(b), ha="center", fontsize=6, color="#777777")
    for r in range(rows):
        ax.text(-0.3, rows - 1 - r + 0.45, str(r * ROW), ha="right", va="center", fontsize=7,
                color="#777777")
    legend = [(BROKER, "set by the broker"), (FRAME, "framing"), (BATCH, "builder, at close()"),
              (PRODUCER, "producer state (idempotence)")]
    for i, (colour, text) in enumerate(legend):
        ax.add_patch(Rectangle((i * 4, -1.0), 0.6, 0.5, fc=colour, ec="#555555"))
        ax.text(i * 4 + 0.8, -0.75, text, va="center", fontsize=7)
    ax.text(0, -1.6, "the CRC-32C covers attributes (@21) to the end of the batch; the records"
            " after @61 are compressed as one block when a codec is set", fontsize=7,
            color="#555555")
    ax.set_xlim(-1.5, ROW + 0.2)
    ax.set_ylim(-1.9, rows + 0.5)
    ax.axis("off")
    fig.savefig(out_dir / "records_header.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def _record(out_dir):
    builder = MemoryRecordsBuilder(256)
    builder.append(1_700_000_000_000, b"k0", b"first")
    builder.append(1_700_000_000_007, b"user-1", b'{"clicks": 3}', [("trace", b"abc")])
    data = bytes(builder.build())
    # Walk the second record by hand to get each field's real size (all varints here are 1 byte).
    first_len = data[61] >> 1
    pos = 61 + 1 + first_len
    fields = [
        ("length", 1, FRAME), ("attributes", 1, FRAME), ("timestampDelta", 1, BATCH),
        ("offsetDelta", 1, BATCH), ("keyLength", 1, FRAME), ("key", 6, DATA),
        ("valueLength", 1, FRAME), ("value", 13, DATA), ("headerCount", 1, FRAME),
        ("hKeyLength", 1, FRAME), ("hKey", 5, DATA), ("hValueLength", 1, FRAME),
        ("hValue", 3, DATA),
    ]
    record = data[pos:]
    assert len(record) == sum(size for _, size, _ in fields)
    assert record[0] >> 1 == len(record) - 1  # zigzag varint of the length that follows
    fig, ax = plt.subplots(figsize=(10, 1.9))
    x = 0
    for name, size, colour in fields:
        ax.add_patch(Rectangle((x, 0), size, 1, fc=colour, ec="#555555"))
        chunk = record[x:x + size]
        shown = chunk.decode() if colour == DATA else chunk.hex()
        ax.text(x + size / 2, 1.15, name, ha="left", va="bottom", fontsize=7, rotation=35)
        ax.text(x + size / 2, 0.5, shown, ha="center", va="center", fontsize=6,
                family="monospace")
        x += size
    ax.text(0, -0.45, f"record 1 of the batch, {len(record)} bytes: varints (zigzag) frame every"
            " field; timestampDelta 7 and offsetDelta 1 are relative to the batch header",
            fontsize=7, color="#555555")
    ax.set_xlim(-0.5, x + 0.5)
    ax.set_ylim(-0.8, 3.2)
    ax.axis("off")
    fig.savefig(out_dir / "records_record.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(out_dir):
    _header(out_dir)
    _record(out_dir)


if __name__ == "__main__":
    import pathlib
    import sys

    draw(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "."))
