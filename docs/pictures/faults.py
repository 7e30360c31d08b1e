"""Where each injected fault acts in the broker, and the control socket that switches them."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _faults(out_dir):
    fig, ax = _boxes.figure(12.0, 6.0)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 5.65, "FaultInjector: one per broker, consulted on the request's way",
            fontsize=11, weight="bold")
    # The request's way through the broker.
    b(ax, 0.2, 3.9, 1.3, 0.8, "client", "wire", 8)
    b(ax, 1.9, 3.9, 1.9, 0.8, "Acceptor", "thread", 8)
    b(ax, 4.3, 3.9, 2.3, 0.8, "Processor\n(network thread)", "thread", 8)
    b(ax, 7.8, 3.9, 2.1, 0.8, "KafkaApis.handle\n(handler thread)", "thread", 8)
    b(ax, 10.5, 3.9, 1.3, 0.8, "Log", "python", 8)
    a(ax, 1.5, 4.3, 1.9, 4.3)
    a(ax, 3.8, 4.3, 4.3, 4.3)
    a(ax, 6.6, 4.5, 7.8, 4.5)
    a(ax, 7.8, 4.1, 6.6, 4.1)
    ax.text(6.75, 4.57, "request", fontsize=7, color="#333333")
    ax.text(6.75, 3.9, "response", fontsize=7, color="#333333")
    a(ax, 9.9, 4.3, 10.5, 4.3)
    # What each fault does there.
    b(ax, 1.9, 2.5, 1.9, 1.0, "isolate():\naccept, close\nat once", "python", 7)
    b(ax, 4.3, 2.5, 2.3, 1.0, "isolate(): close all\nset_latency(ms):\nhold each response",
      "python", 7)
    b(ax, 7.8, 2.5, 2.1, 1.0, "fail_next(api, errors):\nanswer with the error\n"
      "(Produce: before or\nafter the append)", "python", 7)
    for x in (2.85, 5.45, 8.85):
        a(ax, x, 3.5, x, 3.9)
    # The control socket.
    b(ax, 4.3, 0.9, 2.3, 0.9, "FaultInjector\n(broker.faults)", "python", 8)
    b(ax, 7.8, 0.9, 2.1, 0.9, "ControlServer\n--control-socket", "thread", 8)
    b(ax, 10.5, 0.9, 1.3, 0.9, "BrokerControl\n(the test)", "wire", 7)
    a(ax, 10.5, 1.35, 9.9, 1.35)
    ax.text(9.9, 1.95, "JSON lines on\na Unix socket", fontsize=7, color="#333333")
    a(ax, 7.8, 1.35, 6.6, 1.35)
    a(ax, 5.45, 1.8, 5.45, 2.5)
    _boxes.legend(ax, 0.2, 0.2)
    _boxes.save(fig, out_dir / "faults.png")


def draw(out_dir):
    _faults(pathlib.Path(out_dir))
