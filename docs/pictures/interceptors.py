"""Interceptors: on_send on the caller's thread, on_acknowledgement on the Sender thread."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def draw(out_dir):
    fig, ax = _boxes.figure(11, 3.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 3.3, "caller's thread", fontsize=10, weight="bold")
    b(ax, 0.2, 2.4, 2.0, 0.6, "send(record)", "python", 8)
    b(ax, 2.7, 2.4, 2.5, 0.6, "on_send, each\ninterceptor in order", "python", 8)
    b(ax, 5.7, 2.4, 2.5, 0.6, "RecordAppender.append\n(the record it returned)", "compiled", 7)
    a(ax, 2.2, 2.7, 2.7, 2.7)
    a(ax, 5.2, 2.7, 5.7, 2.7)
    ax.text(0.2, 1.6, "Sender thread", fontsize=10, weight="bold")
    b(ax, 0.2, 0.7, 2.5, 0.6, "batch answered, failed\nor expired", "thread", 8)
    b(ax, 3.2, 0.7, 2.7, 0.6, "on_acknowledgement,\neach, once per record", "python", 8)
    b(ax, 6.4, 0.7, 2.2, 0.6, "your callback", "python", 8)
    a(ax, 2.7, 1.0, 3.2, 1.0)
    a(ax, 5.9, 1.0, 6.4, 1.0)
    ax.text(8.6, 2.55, "an interceptor that raises is\nlogged; the record goes on",
            fontsize=8, color="#333333")
    _boxes.save(fig, pathlib.Path(out_dir) / "interceptors.png")
