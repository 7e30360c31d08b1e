"""The log cleaner chapter's picture, drawn from a real compacted ``Log`` cleaned by the real
``LogCleaner``.

log_cleaner_sections.png    a log's clean and dirty sections and its active segment, the offset
                            map a clean builds from the dirty section, and the log after it
"""

import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from kafkacore.broker.log import Log, LogConfig  # noqa: E402
from kafkacore.broker.log.cleaner_config import CleanerConfig  # noqa: E402
from kafkacore.broker.log.log_cleaner import LogCleaner  # noqa: E402
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder  # noqa: E402
from kafkacore.core.record_batch import iter_batches  # noqa: E402

CLEAN = "#d6e4f5"
DIRTY = "#fde2c8"
ACTIVE = "#e3f1dc"
TOMBSTONE = "#bbbbbb"
CELL = 0.42


def _append(log, updates):
    b = MemoryRecordsBuilder(4096)
    now = int(time.time() * 1000)
    for key, value in updates:
        b.append(now, key.encode(), None if value is None else value.encode())
    log.append_as_leader(bytes(b.build()))


def _records(log):
    """(segment base, offset, key, value) of every record, in offset order."""
    out = []
    for seg in log.segments:
        for h in seg.iter_headers():
            raw = seg.pread(h.size, h.position)
            for r in next(iter_batches(raw)).records:
                out.append((seg.base_offset, r.offset, r.key.decode(), r.value))
    return out


def _strip(ax, y, records, log, checkpoint, title):
    ax.text(-0.2, y + 0.2, title, ha="right", va="center", fontsize=9)
    active = log.active_segment.base_offset
    x, previous = 0.0, None
    for base, offset, key, value in records:
        if previous is not None and base != previous:
            x += 0.15  # a segment boundary
        previous = base
        color = ACTIVE if offset >= active else DIRTY if offset >= checkpoint else CLEAN
        ax.add_patch(Rectangle((x, y), CELL, 0.4, fc=TOMBSTONE if value is None else color,
                               ec="#555555", lw=0.6))
        ax.text(x + CELL / 2, y + 0.27, key, ha="center", va="center", fontsize=7)
        ax.text(x + CELL / 2, y + 0.1, str(offset), ha="center", va="center", fontsize=5.5)
        x += CELL
    return x


def draw(out_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = LogConfig.from_properties({"cleanup.policy": "compact", "internal.segment.bytes": "420"})
        log = Log(root / "balances-0", config, topic="balances", partition=0)
        cleaner = LogCleaner(CleanerConfig(), [root], lambda: {("balances", 0): log})
        for i in range(6):  # the history before the first clean
            _append(log, [("a", f"{i}"), ("b", f"{i}"), ("c", f"{i}")])
        cleaner.clean_now()  # now there is a clean section
        for i in range(4):  # new updates: the dirty section
            _append(log, [("a", f"x{i}"), ("d", f"x{i}")] + ([("b", None)] if i == 1 else []))
        _append(log, [("e", "1")])
        checkpoint = cleaner.manager.all_cleaner_checkpoints()[("balances", 0)]
        before = _records(log)
        thread = cleaner.threads[0]
        thread.try_clean()
        offset_map = thread.cleaner.offset_map
        keys = sorted({k for _, _, k, _ in before})
        map_rows = [(k, offset_map.get(k.encode())) for k in keys
                    if offset_map.get(k.encode()) >= 0]
        after = _records(log)
        cleaned_to = cleaner.manager.all_cleaner_checkpoints()[("balances", 0)]
        fig, ax = plt.subplots(figsize=(11.5, 3.6))
        width = _strip(ax, 2.4, before, log, checkpoint, "before the clean")
        _strip(ax, 0.2, after, log, cleaned_to, f"after (checkpoint {cleaned_to})")
        ax.text(0, 3.0, f"clean section (below the checkpoint, {checkpoint})", color="#1f5fa8",
                fontsize=8)
        ax.text(width * 0.45, 3.0, "dirty section", color="#b5651d", fontsize=8)
        ax.text(width - 1.6, 3.0, "active segment", color="#3a7d2c", fontsize=8)
        table = "offset map (from the dirty section)\n" + "\n".join(
            f"  {k} -> {o}" for k, o in map_rows)
        ax.text(width * 0.6 + 0.3, 1.0, table, family="monospace", fontsize=7.5, va="bottom")
        ax.annotate("", xy=(width * 0.6, 0.65), xytext=(width * 0.6, 2.35),
                    arrowprops={"arrowstyle": "->", "color": "#555555"})
        ax.text(width * 0.6 - 0.1, 1.5, "each record is kept only if the map has no later "
                "offset for its key;\ngrey: a tombstone (kept until its delete horizon)",
                fontsize=7.5, va="center", ha="right")
        ax.set_xlim(-2.2, width + 3.4)
        ax.set_ylim(0, 3.3)
        ax.axis("off")
        fig.tight_layout()
        fig.savefig(out_dir / "log_cleaner_sections.png", dpi=110)
        plt.close(fig)
        log.close()
