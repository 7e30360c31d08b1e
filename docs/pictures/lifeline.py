"""The lifeline and the reaper: what ends a test's brokers when their owner ends."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(11, 4.4)
    b, a = _boxes.box, _boxes.arrow
    b(ax, 0.2, 1.6, 2.4, 0.9, "owner process\n(tests, Cluster,\nLocalBroker)", "python", 8)
    b(ax, 4.0, 2.8, 3.0, 0.8, "our broker / controller\nthread reads the lifeline:\n"
      "EOF -> stop as on SIGTERM", "thread", 7)
    b(ax, 4.0, 0.4, 3.0, 0.8, "reaper process\n(told each pid and temp dir):\n"
      "EOF -> SIGTERM, SIGKILL, rm", "thread", 7)
    b(ax, 8.2, 0.4, 2.6, 0.8, "every child, tansu too\n(held by a pidfd)", "wire", 7)
    a(ax, 2.6, 2.3, 4.0, 3.2)
    ax.text(0.2, 2.75, "lifeline pipe: only the owner holds the write end", fontsize=7, color="#333333")
    a(ax, 2.6, 1.8, 4.0, 0.8)
    ax.text(2.7, 1.0, "second pipe", fontsize=7, color="#333333")
    a(ax, 7.0, 0.8, 8.2, 0.8)
    ax.text(0.2, 4.15, "the owner ends, however (SIGKILL too): the kernel closes its descriptors, "
            "both pipes read end-of-file", fontsize=8, weight="bold")
    _boxes.save(fig, pathlib.Path(out_dir) / "lifeline.png")
