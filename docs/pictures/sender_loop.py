"""One iteration of the Sender loop: Sender.run_once, step by step."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

# (text, kind) in the order run_once does them.
STEPS = [
    ("1 producer id\nidempotence: InitProducerId\nwhile we have none", "python"),
    ("2 accumulator.ready()\nsendable leaders; unknown\nleader: ask for metadata", "python"),
    ("3 client.ready(node)\nconnected? if not,\nstart connecting", "python"),
    ("4 accumulator.drain()\nfirst batch per partition,\nclosed; now in flight", "python"),
    ("5 fail expired\ndelivery.timeout.ms\npassed", "python"),
    ("6 send\none ProduceRequest\nper leader, no copy", "wire"),
    ("7 client.poll(timeout)\nI/O, metadata; sleeps\nuntil wakeup() or timeout", "thread"),
    ("8 complete\nfutures, callbacks,\nbuffer back to pool", "compiled"),
]


def draw(out_dir):
    fig, ax = _boxes.figure(11.5, 4.6)
    w, h = 2.45, 1.0
    xs = [0.2 + i * 2.85 for i in range(4)]
    top, bottom = 3.1, 0.9
    places = [(x, top) for x in xs] + [(x, bottom) for x in reversed(xs)]
    for (text, kind), (x, y) in zip(STEPS, places, strict=True):
        _boxes.box(ax, x, y, w, h, text, kind, 8)
    for i in range(3):
        _boxes.arrow(ax, xs[i] + w + 0.05, top + h / 2, xs[i + 1] - 0.05, top + h / 2)
        _boxes.arrow(ax, xs[3 - i] - 0.05, bottom + h / 2, xs[2 - i] + w + 0.05, bottom + h / 2)
    _boxes.arrow(ax, xs[3] + w / 2, top - 0.05, xs[3] + w / 2, bottom + h + 0.05)
    _boxes.arrow(ax, xs[0] + w / 2, bottom + h + 0.05, xs[0] + w / 2, top - 0.05, "next run_once")
    ax.text(0.2, 4.35, "Sender.run_once(): one iteration on the network thread", fontsize=10,
            weight="bold")
    ax.text(xs[1], 2.45, "poll() returns the responses; step 8 runs inside it, on this thread",
            fontsize=8, color="#333333")
    _boxes.legend(ax, 0.2, 0.1)
    fig.savefig(pathlib.Path(out_dir) / "sender_loop.png", dpi=110, bbox_inches="tight")
    _boxes.plt.close(fig)
