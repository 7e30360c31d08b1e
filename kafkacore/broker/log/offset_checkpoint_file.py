"""``OffsetCheckpointFile``: one offset per partition in a small text file (Kafka's
``OffsetCheckpointFile``).

The log manager keeps its recovery points and log start offsets in files of this format, and the
cleaner manager keeps where each compacted log was cleaned to.  It stands apart from both so
that either may use it without importing the other.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the only version of the format (Kafka's ``OffsetCheckpointFile.CurrentVersion``)
CURRENT_VERSION = 0


class OffsetCheckpointFile:
    """A version line (``0``), a count, then one ``topic partition offset`` line per partition.

    A missing or damaged file reads as empty: its reader trusts nothing and scans everything.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[tuple[str, int], int]:
        try:
            lines = self.path.read_text().splitlines()
            if (len(lines) < 2 or lines[0].strip() != str(CURRENT_VERSION)
                    or int(lines[1]) != len(lines) - 2):
                return {}
            out = {}
            for line in lines[2:]:
                topic, partition, offset = line.rsplit(" ", 2)
                out[(topic, int(partition))] = int(offset)
            return out
        except (OSError, ValueError):
            return {}

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        """Replace the file whole: a crash leaves the old one or the new one, never half."""
        lines = [str(CURRENT_VERSION), str(len(offsets))]
        lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
