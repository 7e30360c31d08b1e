"""The compiled core's benchmarks, in one run: the record builder and the BufferPool.

    python benchmarks/bench_core.py

prints both tables and keeps the figures in ``benchmarks/results/core.json``.
"""

from __future__ import annotations

import json
import pathlib
import platform
import sys
import time

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

import bench_builder  # noqa: E402
import bench_pool  # noqa: E402


def main() -> None:
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    print("== MemoryRecordsBuilder: appending 100-byte records ==")
    builder = bench_builder.main([])
    print()
    print("== BufferPool and CopyOnWriteMap ==")
    pool = bench_pool.main([])
    results = {
        "when": started,
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "builder": builder,
        "pool": pool,
    }
    out = HERE / "results" / "core.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nkept in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
