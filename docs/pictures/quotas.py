"""The quotas chapter's picture, drawn from a real ``ClientQuotaManager`` on a clock the script
holds (so it cannot drift from the code).

quotas.png  left: where a Produce's bytes are counted and where the throttle is applied; right: a
            producer that sends 100 KB as soon as it is allowed to, against a 100 KB/s quota
            (11 windows of a second): the rate the sensor measures, and each throttle time
"""

import importlib.util
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from kafkacore.broker.server.client_quota_manager import ClientQuotaManager  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

BOUND = 100_000  # bytes per second
REQUEST = 100_000  # bytes per Produce
GAP_MS = 50  # the producer's own pace when nothing holds it back


def simulate(seconds=30):
    """The sensor's measured rate (time s, KB/s) every 50 ms, and (time s, throttle ms) of
    each request of an obedient producer."""
    manager = ClientQuotaManager("producer_byte_rate")
    manager.update_quotas({(("client-id", "slow"),): {"producer_byte_rate": float(BOUND)}})
    rates, throttles = [], []
    next_send, now = 0, 0
    while now < seconds * 1000:
        if now >= next_send:
            throttle = manager.record_and_get_throttle_time_ms("u", "slow", REQUEST, now_ms=now)
            throttles.append((now / 1000, throttle))
            next_send = now + max(throttle, GAP_MS)  # it waits what it is told (KIP-219)
        rate = manager._sensors[("", "slow")][0].measure(now)
        rates.append((now / 1000, rate / 1000))
        now += 50
    return rates, throttles


def draw(out_dir):
    fig = plt.figure(figsize=(12, 4.2))
    left = fig.add_axes([0.0, 0.0, 0.42, 1.0])
    left.set_xlim(0, 5.2)
    left.set_ylim(0, 4.4)
    left.axis("off")
    b, a = _boxes.box, _boxes.arrow
    b(left, 0.1, 3.4, 1.6, 0.6, "producer\nclient.id=slow", "python", 8)
    b(left, 2.4, 3.4, 2.6, 0.6, "Processor: reads the\nrequest, then mutes", "thread", 7)
    b(left, 2.4, 2.0, 2.6, 0.8, "KafkaApis.handle_produce\nClientQuotaManager:\nrecord bytes, measure",
      "python", 7)
    b(left, 2.4, 0.5, 2.6, 0.8, "answer: throttle_time_ms\nconnection muted until\nit is over",
      "thread", 7)
    b(left, 0.1, 0.5, 1.6, 0.8, "waits throttle_time_ms\nbefore the next send", "python", 7)
    a(left, 1.7, 3.7, 2.4, 3.7)
    left.text(1.75, 3.8, "Produce", fontsize=8)
    a(left, 3.7, 3.4, 3.7, 2.8)
    a(left, 3.7, 2.0, 3.7, 1.3, "(rate - bound) / bound x span")
    a(left, 2.4, 0.9, 1.7, 0.9)
    a(left, 0.9, 1.3, 0.9, 3.4)
    left.text(0.1, 4.2, "where a Produce is counted and held back", fontsize=9, weight="bold")

    rates, throttles = simulate()
    right = fig.add_axes([0.5, 0.14, 0.45, 0.74])
    right.plot([r[0] for r in rates], [r[1] for r in rates], color="#2f6f9f",
               label="measured rate (KB/s)")
    right.axhline(BOUND / 1000, color="#aa3333", ls="--", lw=1, label="quota: 100 KB/s")
    right.set_xlabel("seconds")
    right.set_ylabel("KB/s")
    twin = right.twinx()
    twin.bar([t[0] for t in throttles], [t[1] for t in throttles], width=0.15, color="#f4b183", alpha=0.8,
             label="throttle time (ms)")
    twin.set_ylabel("throttle time, ms")
    right.set_zorder(twin.get_zorder() + 1)
    right.patch.set_visible(False)
    lines = right.get_legend_handles_labels()
    bars = twin.get_legend_handles_labels()
    right.legend(lines[0] + bars[0], lines[1] + bars[1], fontsize=8, loc="lower right")
    right.set_title("100 KB per request, as fast as allowed: the first megabyte passes at once (a\n"
                    "new sensor's span counts 10 windows), then each request waits its throttle time",
                    fontsize=8)
    _boxes.save(fig, pathlib.Path(out_dir) / "quotas.png")
