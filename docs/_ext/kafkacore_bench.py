"""The ``.. kafkacore-bench:: core|producer|broker|broker_small|purgatory|topics|scale|spark_read`` directive: a benchmark's results as a table.

Read from ``benchmarks/results/<name>.json`` each time the docs build, so the page shows the
figures the last ``make bench`` wrote, never a pasted copy.
"""

import json
import pathlib

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _table(title, header, rows, widths):
    lines = [f".. list-table:: {title}", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return lines + [""]


def core_lines(data):
    b = data["builder"]
    out = [f"Measured {data['when']} on {data['machine']}.", ""]
    fastest_peer = b["records_per_s"]["aiokafka (compiled)"]
    rows = [
        [name, f"{rate / 1e6:,.2f}", f"{rate / fastest_peer:.2f}"]
        for name, rate in b["records_per_s"].items()
    ]
    out += _table(
        f"Appending {b['records']:,} records into {b['batch_size'] // 1024} KiB batches",
        ["builder", "million records/s", "vs aiokafka"], rows, "50 25 25",
    )
    crc = b["crc32c_gb_per_s"]
    out += _table("CRC-32C over 1 MiB", ["implementation", "GB/s"],
                  [[name, f"{rate:.2f}"] for name, rate in crc.items()], "70 30")
    rows = [
        [name, f"{v['rate'] / 1e6:,.2f}", f"{v['baseline'] / 1e6:,.2f}", f"{v['ratio']:.2f}"]
        for name, v in data["pool"].items()
    ]
    out += _table("BufferPool and CopyOnWriteMap",
                  ["operation", "million/s", "baseline (million/s)", "ratio"], rows, "46 18 18 18")
    return out


def producer_lines(data):
    ours = next(r for r in data if r["client"] == "kafkacore")
    rows = [
        [r["client"], f"{r['acked']:,}", f"{r['records_per_sec']:,.0f}",
         f"{r['cpu_us_per_record']:.2f}", f"{ours['records_per_sec'] / r['records_per_sec']:.2f}"]
        for r in data
    ]
    return _table("Producing 100-byte records, acks=all",
                  ["client", "records acked", "records/s", "CPU µs/record", "kafkacore is ×"],
                  rows, "28 18 18 18 18")


def broker_lines(data):
    rows = data["rows"]
    by = {(r["broker"], r["client"], r["acks"]): r for r in rows}
    out = [f"Measured {data['when']} on {data['machine']}, {data['records']:,} records per run,"
           f" {data['repeat']} runs each: the best and the median.", ""]
    table = []
    for r in sorted(rows, key=lambda r: (r["client"] != "kafkacore", r["client"], r["acks"],
                                         r["broker"] != "kafkacore")):
        tansu = by.get(("tansu", r["client"], r["acks"]))
        table.append([
            r["client"], f"acks={r['acks']}", r["broker"],
            f"{r['records_per_sec']:,.0f}",
            f"{r['records_per_sec'] / tansu['records_per_sec']:.2f}" if tansu else "",
            f"{r['median_records_per_sec']:,.0f}",
            f"{r['median_records_per_sec'] / tansu['median_records_per_sec']:.2f}" if tansu else "",
            f"{r['broker_cpu_us_per_record']:.2f}",
        ])
    return out + _table("Producing 100-byte records in 1 MiB batches into each broker",
                        ["producer", "acks", "broker", "best records/s", "× tansu",
                         "median records/s", "× tansu", "broker CPU µs/record (least)"],
                        table, "14 9 11 14 8 14 8 22")


def broker_small_lines(data):
    """The small-request and fetch cases of bench_broker.py --small: medians, × tansu."""
    loads = ", ".join(f"{x:.1f}" for x in data["loads"])
    out = [f"Measured {data['when']} on {data['machine']}, {data['repeat']} rounds, medians; "
           f"load average (1 min) at each round's start and at the end: {loads}.", ""]
    table = []
    for case, by in data["medians"].items():
        tansu = by.get("tansu", {})
        for broker in ("kafkacore", "tansu"):
            m = by.get(broker)
            if m is None:
                continue

            def cell(key, fmt, m=m, broker=broker, tansu=tansu):
                if key not in m:
                    return ""
                text = fmt.format(m[key])
                if broker == "kafkacore" and tansu.get(key):
                    text += f" (×{m[key] / tansu[key]:.2f})"
                return text

            table.append([case, broker, cell("records_per_sec", "{:,.0f}"),
                          cell("broker_cpu_us_per_record", "{:.2f}"),
                          cell("broker_cpu_us_per_request", "{:.1f}"),
                          cell("p50_ms", "{:.1f}"), cell("p99_ms", "{:.1f}")])
    return out + _table("Small requests and fetch, our broker (× tansu) and tansu",
                        ["case", "broker", "records/s", "broker CPU µs/record",
                         "broker CPU µs/request", "p50 ms", "p99 ms"], table,
                        "14 10 16 16 16 14 14")


def purgatory_lines(data):
    out = [f"Measured {data['when']} on {data['machine']}: CPU time, median of {data['rounds']}"
           f" rounds of {data['measured_ops']:,} operations per loop, every size's four loops"
           f" taking turns ({data['turn_ms']} simulated ms each, {data['block_turns']} turns of"
           f" one size before the next), µs per operation.", ""]
    rows = []
    for size, r in data["sizes"].items():
        c, n = r["us_per_op"], r["net_us_per_op"]
        loop_wheel = c["no timer, the wheel's operations"]
        loop_heap = c["no timer, the heap's operations"]
        rows.append([
            f"{int(size):,}", f"{c['timing wheel']:.2f}", f"{c['heap (lazy deletion)']:.2f}",
            f"{loop_wheel:.2f}", f"{loop_heap:.2f}",
            f"{n['timing wheel']:.2f}", f"{n['heap (lazy deletion)']:.2f}",
            f"{r['net_heap_over_wheel']:.1f}",
        ])
    out += _table("Add, then complete early (90%) or expire, with n operations outstanding",
                  ["outstanding", "wheel", "heap", "no timer (wheel's ops)",
                   "no timer (heap's ops)", "wheel net", "heap net", "heap net / wheel net"],
                  rows, "13 10 10 15 15 11 11 15")
    largest = list(data["sizes"])[-1]
    ratios = [r["heap (lazy deletion)"] / r["timing wheel"]
              for r in data["sizes"][largest]["net_per_round"]]
    return out + [
        f"Net cost at {int(largest):,} over {int(list(data['sizes'])[0]):,} (median of the"
        f" rounds'): wheel ×{data['net_wheel_largest_over_smallest']:.2f}"
        f" (round by round: {', '.join(f'{x:.2f}' for x in data['net_wheel_growth_per_round'])}),"
        f" heap ×{data['net_heap_largest_over_smallest']:.2f}."
        f" Heap net over wheel net at {int(largest):,}, round by round:"
        f" {', '.join(f'{x:.1f}' for x in ratios)}.", ""]


def topics_lines(data):
    rows = data["rows"]
    few, many = f"at_{data['few']}", f"at_{data['topics']}"
    out = [f"Measured {data['when']} on {data['machine']}: {data['topics']:,} single-partition"
           f" topics in CreateTopics requests of {data['batch']}, one at a time; Metadata and"
           f" produce: the median of {data['probes']} requests, at {data['few']} topics and at"
           f" {data['topics']:,}.", ""]
    table = []
    for r in rows:
        t = r["per_thousand_s"]
        table.append([
            r["broker"], f"{t[0]:.2f}", f"{t[1]:.2f}", f"{t[-1]:.2f}", f"{sum(t):.1f}",
            f"{r[few]['metadata_one_topic_ms']:.2f} → {r[many]['metadata_one_topic_ms']:.2f}",
            f"{r[few]['produce_one_record_ms']:.2f} → {r[many]['produce_one_record_ms']:.2f}",
            f"{r['load_before']} → {r['load_after']}"])
    rounds, cpu = data.get("rounds_of_a_thousand_s"), data.get("rounds_cpu_s")
    if rounds and cpu:
        out += _table(f"1,000 topics in a fresh broker, {len(rounds['kafkacore'])} rounds,"
                      f" the brokers taking turns (load average {data['rounds_load'][0]} →"
                      f" {data['rounds_load'][1]})",
                      ["broker", "seconds, each round", "broker CPU seconds, each round"],
                      [[k, ", ".join(f"{x:.2f}" for x in rounds[k]),
                        ", ".join(f"{x:.2f}" for x in cpu[k])] for k in rounds], "14 43 43")
    out += _table(f"Creating {data['topics']:,} topics (seconds per thousand)",
                  ["broker", "1st thousand s", "2nd thousand s", "last thousand s", "all s",
                   "Metadata, one topic, ms", "produce one record, ms", "load average"],
                  table, "12 10 10 10 8 18 18 14")
    for kind, ratios in data.get("ratios", {}).items():
        out += [f"{kind} over tansu: " + ", ".join(
            f"{k.replace('_', ' ')} ×{v:.2f}" for k, v in ratios.items()) + ".", ""]
    return out


def scale_lines(data):
    points = data["points"]
    out = [f"Measured {data['when']} on {data['machine']}: one run, replication factor 3, topics"
           f" of {data['per_topic']} partitions, {data['window_s']:g} s per figure; CPU is % of"
           f" one core, the mean of the three brokers; the load average of the machine at the"
           f" start and end of each figure beside it.", ""]
    rows = [[f"{p['partitions']:,}", f"{p['created']:,}", f"{p['create_s']:.1f}",
             f"{1000 * p['create_s'] / p['created']:.1f}", f"{p['first_write_s']:.1f}",
             f"{p['rest']['cpu_pct_mean']:.1f}",
             f"{p['rest']['fetcher_cpu_pct_mean']:.1f}", f"{p['rest']['rss_mib_mean']:.0f}",
             f"{p['leaders_moved']}", "{} → {}".format(*p["rest"]["load"])] for p in points]
    out += _table("Partitions: creating them, then each broker at rest (no client)",
                  ["partitions", "created", "create s", "ms per partition",
                   "a record into each, s", "broker CPU %", "fetchers' CPU %", "RSS MiB",
                   "leaders moved", "load average"],
                  rows, "10 8 8 9 10 9 10 8 9 13")
    rows = []
    for p in points:
        for r in p["connections"]:
            # the three brokers' CPU above their rest, per record acknowledged
            per_record = 3 * (r["cpu_pct_mean"] - p["rest"]["cpu_pct_mean"]) * 1e4 / max(
                r["acked_per_s"], 1e-9)
            rows.append([f"{p['partitions']:,}", f"{r['connections']:,}",
                         f"{r['cpu_pct_mean']:.1f}", f"{r['fetcher_cpu_pct_mean']:.1f}",
                         f"{per_record:,.0f}",
                         f"{r['rss_mib_mean']:.0f}", f"{r['acked_per_s']:,.0f}",
                         f"{r['p50_ms']:.0f}", f"{r['p99_ms']:.0f}", f"{r['errors']}",
                         "{} → {}".format(*r["load"])])
    out += _table(f"Connections, each producing one {data['record_bytes']}-byte record"
                  f" every {data['interval_s']:g} s (acks=all) to the next partition",
                  ["partitions", "connections", "broker CPU %", "fetchers' CPU %",
                   "cluster CPU µs per record", "RSS MiB", "records/s acked", "p50 ms",
                   "p99 ms", "errors", "load average"],
                  rows, "9 9 8 8 10 7 9 8 8 7 12")
    fp, fc, x = data["fits"]["partitions"], data["fits"]["connections"], data["extrapolation"]
    out += [
        "Least-squares lines (the worst point's miss from its line in brackets): a broker at"
        f" rest {fp['cpu_pct_mean']['intercept']:.1f} % + {100 * fp['cpu_pct_mean']['slope']:.2f}"
        f" % per 100 partitions ({fp['cpu_pct_mean']['worst_miss']:.0%}), of which its fetchers"
        f" {100 * fp['fetcher_cpu_pct_mean']['slope']:.2f} % per 100 partitions"
        f" ({fp['fetcher_cpu_pct_mean']['worst_miss']:.0%}); RSS"
        f" {fp['rss_mib_mean']['intercept']:.0f} MiB + {1000 * fp['rss_mib_mean']['slope']:.1f}"
        f" MiB per 1,000 partitions ({fp['rss_mib_mean']['worst_miss']:.0%}); at the most"
        f" partitions, {1024 * fc['rss_mib_mean']['slope']:.1f} KiB per open connection;"
        f" a record produced cost the three brokers "
        + ", ".join(f"{v:,.0f} µs at {int(n):,} partitions"
                    for n, v in x["cluster_us_per_record_measured"].items())
        + " (measured at the highest rate the cluster kept up with)."
        + ("".join(f" At {n:,} partitions and {c:,} connections it fell behind: {a:,.0f}"
                   f" records/s acknowledged of {c / data['interval_s']:,.0f} offered."
                   for n, c, a in x["fell_behind"])), "",
        f"Extrapolated to {x['partitions']:,} partitions and {x['connections']:,} connections"
        f" on three brokers: the fetchers {x['fetcher_cpu_pct_per_broker']:.0f} % of a core per"
        f" broker, the broker at rest {x['rest_cpu_pct_per_broker']:.0f} %; a record taken at"
        f" the dearest measured, {x['cluster_us_per_record']:,.0f} µs of the cluster's CPU,"
        f" so with the connections' {x['records_per_s']:,.0f} records/s each broker needs"
        f" {x['cpu_pct_per_broker']:.0f} % of a core"
        + (f" (at the cheapest measured, {x['cluster_us_per_record_cheapest']:,.0f} µs,"
           f" {x['cpu_pct_per_broker_cheapest']:.0f} %)"
           if "cpu_pct_per_broker_cheapest" in x else "")
        + f"; RSS {x['rss_mib_per_broker']:.0f}"
        f" MiB per broker; creating the partitions from none {x['create_s']:.0f} s (the fitted line of a partition's"
        f" creation time against the partitions already there, summed)."
        + (" That is more than the one core a broker's Python code can use (one process, one"
           " GIL)." if x["cpu_pct_per_broker"] > 100 else
           " That fits in the one core a broker's Python code can use (one process, one GIL),"
           f" with {100 - x['cpu_pct_per_broker']:.0f} % left for anything else."), ""]
    return out


def spark_read_lines(data):
    v = data["versions"]
    out = [f"{data['rows']:,} rows of {data['value_bytes']} bytes in six partitions, Spark"
           f" {v['pyspark']} {data['master']} on {data['machine']}, our broker; each approach"
           f" warmed up once, then the fastest of {data['repeats']} runs (every run in brackets)."
           " CPU is per row read, of Spark's JVM, its Python workers (the driver's planning"
           " processes included) and the broker; the read of no rows is the cost of a query"
           " whatever its size, spread over the rows of the others.", ""]
    rows = [[name, f"{r['rows_per_s']:,.0f}",
             ", ".join(f"{run['rows_per_s'] / 1e3:,.0f}k" for run in r["runs"]),
             *(f"{r['cpu_us_per_row'][who]:.2f}"
               for who in ("spark jvm", "python workers", "broker"))]
            for name, r in data["reading"].items()]
    out += _table("spark.read.format(\"kafkacore\") and its ceiling",
                  ["approach", "rows/s", "runs", "JVM CPU µs/row", "Python CPU µs/row",
                   "broker CPU µs/row"], rows, "40 12 16 11 11 10")
    out += _table("Ratios (one run)", ["ratio", "value"],
                  [[name, f"{value:.2f}"] for name, value in data["ratios"].items()], "80 20")
    out += [", ".join(f"{goal}: {'met' if met else 'not met'}"
                      for goal, met in data["goals met"].items()) + ".", ""]
    return out


class BenchTable(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        name = self.arguments[0]
        path = RESULTS / f"{name}.json"
        self.env.note_dependency(str(path))
        data = json.loads(path.read_text())
        lines = {"core": core_lines, "producer": producer_lines, "broker": broker_lines,
                 "broker_small": broker_small_lines, "purgatory": purgatory_lines,
                 "topics": topics_lines, "scale": scale_lines,
                 "spark_read": spark_read_lines}[name](data)
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source=str(path)), self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive("kafkacore-bench", BenchTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
