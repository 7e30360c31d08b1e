"""Benchmark plots, drawn from benchmarks/results/*.json each time the docs build."""

import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "results"
OURS, PEER = "#2b6cb0", "#a0aec0"


def _bars(ax, names, values, title, xlabel, log=False):
    colors = [OURS if n.startswith("kafkacore") else PEER for n in names]
    y = range(len(names))
    ax.barh(list(y), values, color=colors)
    ax.set_yticks(list(y), names, fontsize=9)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=9)
    if log:
        ax.set_xscale("log")
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:,.3g}", va="center", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)


def _core(out_dir):
    data = json.loads((RESULTS / "core.json").read_text())
    rates = data["builder"]["records_per_s"]
    fig, ax = plt.subplots(figsize=(8.5, 3.0))
    _bars(ax, list(rates), [r / 1e6 for r in rates.values()],
          "Appending 100-byte records into 1 MiB batches", "million records/s (log scale)",
          log=True)
    fig.tight_layout()
    fig.savefig(out_dir / "bench_core.png", dpi=110)
    plt.close(fig)


def _producer(out_dir):
    data = json.loads((RESULTS / "producer.json").read_text())
    names = [r["client"] for r in data]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.0))
    _bars(left, names, [r["records_per_sec"] / 1e3 for r in data],
          "acknowledged records per second", "thousand records/s")
    _bars(right, names, [r["cpu_us_per_record"] for r in data],
          "client CPU time per record (less is better)", "µs per record")
    fig.tight_layout()
    fig.savefig(out_dir / "bench_producer.png", dpi=110)
    plt.close(fig)


def draw(out_dir):
    out_dir = pathlib.Path(out_dir)
    _core(out_dir)
    _producer(out_dir)
