"""Pictures of the ByteBufferOutputStream chapter, drawn from a real stream (so they cannot drift).

bytestream_growth.png  limit against bytes written, for 8-byte writes into a 100-byte buffer, and
                       the bytes copied by growth
bytestream_pool.png    a pooled buffer outgrown: before, after growth, and what the pool gets back
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from kafkacore.core.bytestream import ByteBufferOutputStream  # noqa: E402

WRITTEN = "#f4b183"
FREE = "#dbe9f6"
GONE = "#e0e0e0"


def _growth(out_dir):
    stream = ByteBufferOutputStream(bytearray(100))
    positions, limits, copied, total_copied = [0], [stream.limit], [0], 0
    for i in range(120):
        before = stream.limit
        stream.write_int64(i)
        if stream.limit != before:
            total_copied += stream.position - 8  # growth copies what was written so far
        positions.append(stream.position)
        limits.append(stream.limit)
        copied.append(total_copied)

    growths = sum(1 for a, b in zip(limits, limits[1:], strict=False) if b != a)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.step(positions, limits, where="post", color="#c55a11", label="limit (capacity)")
    left.plot(positions, positions, color="#555555", lw=0.8, ls="--", label="position (written)")
    left.set_xlabel("bytes written (8-byte writes)")
    left.set_ylabel("bytes")
    left.set_title("limit: int(limit * 1.1f) at each growth", fontsize=9)
    left.legend(fontsize=8, loc="upper left")
    left.grid(alpha=0.3)
    right.plot(positions, copied, color="#2f5597", lw=1.2)
    right.set_xlabel("bytes written (8-byte writes)")
    right.set_title(f"bytes copied by the {growths} growths, in total", fontsize=9)
    right.grid(alpha=0.3)
    fig.suptitle(f"ByteBufferOutputStream(bytearray(100)) written to {positions[-1]} bytes",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "bytestream_growth.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def _bar(ax, y, x0, capacity, written, label, colour=WRITTEN, note=None):
    ax.add_patch(Rectangle((x0, y), written, 0.5, fc=colour, ec="#555555"))
    ax.add_patch(Rectangle((x0 + written, y), capacity - written, 0.5, fc=FREE, ec="#555555"))
    ax.text(x0 - 4, y + 0.25, label, ha="right", va="center", fontsize=8, family="monospace")
    if note:
        ax.text(x0 + capacity + 4, y + 0.25, note, ha="left", va="center", fontsize=8)


def _pool(out_dir):
    pooled = bytearray(100)
    stream = ByteBufferOutputStream(pooled)
    stream.write(b"r" * 90)
    before = (stream.limit, stream.position)
    stream.write(b"R" * 40)  # a record that does not fit
    after = (stream.limit, stream.position)
    assert stream.buffer is not pooled

    fig, ax = plt.subplots(figsize=(8, 2.8))
    _bar(ax, 2.0, 0, before[0], before[1], "pooled bytearray(100)",
         note=f"position {before[1]}, limit {before[0]}: 40 more bytes do not fit")
    _bar(ax, 1.0, 0, after[0], after[1], "new bytearray",
         note=f"max(int(100 * 1.1f), {before[1]} + 40) = {after[0]}; 90 bytes copied")
    ax.add_patch(Rectangle((0, 0.0), before[0], 0.5, fc=GONE, ec="#999999", ls="--"))
    ax.text(-4, 0.25, "pooled bytearray(100)", ha="right", va="center", fontsize=8,
            family="monospace", color="#777777")
    ax.text(before[0] + 4, 0.25, "no longer the stream's: left to the garbage collector;\n"
            "deallocate(stream.buffer, initial_capacity=100) gives the pool its 100 bytes back",
            ha="left", va="center", fontsize=8, color="#555555")
    ax.annotate("", xy=(45, 1.5), xytext=(45, 2.0), arrowprops={"arrowstyle": "->"})
    ax.set_xlim(-110, 330)
    ax.set_ylim(-0.2, 2.7)
    ax.axis("off")
    fig.savefig(out_dir / "bytestream_pool.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw(out_dir):
    _growth(out_dir)
    _pool(out_dir)


if __name__ == "__main__":
    import pathlib
    import sys

    draw(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "."))
