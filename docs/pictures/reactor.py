"""The broker's request reactor: acceptor, processors, request channel, handlers."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _reactor(out_dir):
    fig, ax = _boxes.figure(12.0, 6.4)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 6.05, "SocketServer -> RequestChannel -> KafkaRequestHandlerPool",
            fontsize=11, weight="bold")
    b(ax, 0.2, 4.6, 1.4, 0.8, "clients", "wire", 8)
    b(ax, 2.0, 4.6, 1.9, 0.8, "Acceptor\naccept(), quotas", "thread", 8)
    a(ax, 1.6, 5.0, 2.0, 5.0)
    for i, y in enumerate((4.9, 3.3, 1.7)):
        b(ax, 4.6, y, 2.2, 1.0,
          f"Processor {i}\nown selector\nread 1 frame, mute", "thread", 8)
        b(ax, 4.6, y - 0.45, 2.2, 0.35, "new connections q.", "python", 7)
        a(ax, 3.9, 5.0, 4.6, y + 0.5)
        b(ax, 7.4, y - 0.05, 1.7, 0.45, f"response q. {i}", "python", 7)
        a(ax, 7.4, y + 0.2, 6.8, y + 0.5)
        a(ax, 6.8, y + 0.75, 9.3, 4.1)
    ax.text(4.7, 0.75, "wakeup: an eventfd\nthe selector also watches",
            fontsize=8, color="#333333")
    b(ax, 9.3, 3.6, 2.4, 0.9, "request queue\n(queued.max.requests)", "python", 8)
    for j, y in enumerate((2.5, 1.7, 0.9)):
        b(ax, 9.6, y, 1.9, 0.6, f"handler {j}\nKafkaApis.handle", "thread", 7)
    a(ax, 10.5, 3.6, 10.5, 3.1)
    a(ax, 9.6, 1.2, 9.1, 1.65)
    ax.text(9.2, 0.55, "send_response(request, body)", fontsize=8, color="#333333")
    _boxes.legend(ax, 0.2, 0.2)
    _boxes.save(fig, out_dir / "reactor.png")


def draw(out_dir):
    _reactor(pathlib.Path(out_dir))
