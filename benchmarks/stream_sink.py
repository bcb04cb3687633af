"""Streaming sink benchmark: the per-micro-batch cost of ``df.writeStream.format("acidorc")``
against a plain ``df.write.format("acidorc")`` append of the same rows, in one SparkSession.

    python benchmarks/stream_sink.py [--batches N] [--rows R] [--repeat K]

The input is N Parquet files of R rows. The streaming query reads them one file per micro-batch
(``maxFilesPerTrigger=1``, ``Trigger.AvailableNow``); the batch side appends each file with its
own ``spark.read.parquet(file).write.format("acidorc")`` job. Both run once more into Spark's
``noop`` sink, so the report also gives what the sink itself adds per batch on each side (acidorc
minus noop): a micro-batch also pays for Spark's offset and commit logs, and the sink for a
second commit process and the exactly-once check in the store. Per-batch times are the
median over ``--repeat`` rounds (round robin, so drifting load hits every scenario alike).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SCENARIOS = ("stream_acidorc", "batch_acidorc", "stream_noop", "batch_noop")


def make_input(directory: Path, batches: int, rows: int) -> list[Path]:
    directory.mkdir(parents=True)
    files = []
    for b in range(batches):
        ids = pa.array(range(b * rows, (b + 1) * rows), pa.int64())
        table = pa.table({"id": ids, "name": pa.array([f"n{i % 1000}" for i in range(rows)]),
                          "amount": pa.array([float(i % 10_000) / 100 for i in range(rows)])})
        path = directory / f"part-{b:04d}.parquet"
        pq.write_table(table, path)
        files.append(path)
    return files


def run_stream(spark, src: Path, schema, out: Path, checkpoint: Path, fmt: str) -> None:
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(src))
    writer = df.writeStream.format(fmt).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    query = writer.start(str(out)) if fmt == "acidorc" else writer.start()
    query.awaitTermination()
    query.stop()


def run_batches(spark, files: list[Path], out: Path, fmt: str) -> None:
    for f in files:
        writer = spark.read.parquet(str(f)).write.format(fmt).mode("append")
        writer.save(str(out)) if fmt == "acidorc" else writer.save()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=10, help="micro-batches (input files) per run")
    ap.add_argument("--rows", type=int, default=10_000, help="rows per micro-batch")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of every scenario")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    stamp = bc.timestamp()
    with bc.scratch_dir(None, "stream-sink") as (work, _url):
        files = make_input(work / "in", args.batches, args.rows)
        spark = bc.start_spark("acidorc-stream-sink-benchmark", args.driver_memory, work / "warehouse")
        try:
            schema = spark.read.parquet(str(files[0])).schema
            meter = bc.CpuMeter(bc.jvm_pid(spark))
            # one warm-up of each side (Python workers, the data source's first import)
            run_stream(spark, work / "in", schema, work / "warm_s", work / "warm_ck", "acidorc")
            run_batches(spark, files[:2], work / "warm_b", "acidorc")
            outs: dict[str, Path] = {}

            def run_one(key: str, rep: int) -> dict:
                out = outs[key] = work / f"{key}_{rep}"
                side, fmt = key.split("_")
                if side == "stream":
                    action = lambda: run_stream(spark, work / "in", schema, out, work / f"ck_{key}_{rep}", fmt)  # noqa: E731
                else:
                    action = lambda: run_batches(spark, files, out, fmt)  # noqa: E731
                return meter.run(action)

            runs, loads, contention = bc.round_robin(SCENARIOS, args.repeat, run_one, meter)
            from acid_source import AcidTable

            expected = args.batches * args.rows
            for key in ("stream_acidorc", "batch_acidorc"):
                table = AcidTable.load(str(outs[key]))
                assert table.scan().count() == expected, key
                assert len(table.history()) == args.batches, key
        finally:
            bc.stop_spark(spark)
    per_batch = {k: bc.median(r["wall"] for r in rs) / args.batches for k, rs in runs.items()}
    cpu = {k: {p: v / args.batches for p, v in zip(("jvm", "py"), vals)} for k, vals in bc.cpu_medians(runs).items()}
    ratio = per_batch["stream_acidorc"] / per_batch["batch_acidorc"]
    sink_stream = per_batch["stream_acidorc"] - per_batch["stream_noop"]
    sink_batch = per_batch["batch_acidorc"] - per_batch["batch_noop"]
    lines = [bc.header_line("stream sink", stamp, f"{args.batches} micro-batches of {args.rows:,} rows, "
                            f"{args.repeat} rounds"),
             f"  {'scenario':<18}{'wall/batch':>12}{'JVM CPU/batch':>15}{'Python CPU/batch':>18}"]
    for k in SCENARIOS:
        c = cpu.get(k)
        lines.append(f"  {k:<18}{per_batch[k] * 1000:>10.0f}ms"
                     + (f"{c['jvm'] * 1000:>13.0f}ms{c['py'] * 1000:>16.0f}ms" if c else ""))
    lines += [f"streaming sink / plain append, per micro-batch: {ratio:.2f}x "
              f"({per_batch['stream_acidorc'] * 1000:.0f} ms vs {per_batch['batch_acidorc'] * 1000:.0f} ms)",
              f"what acidorc adds over Spark's noop sink per batch: streaming {sink_stream * 1000:.0f} ms, "
              f"plain append {sink_batch * 1000:.0f} ms",
              bc.contention_line(contention or 0.0, load=str(loads[-1]))]
    bc.print_report(lines)
    machine = bc.machine_info(args.driver_memory, loads, contention)
    bc.write_results(args.results_dir, "stream_sink", stamp, machine, {
        "params": vars(args) | {"results_dir": bc.rel_path(args.results_dir)},
        "per_batch_seconds": per_batch, "cpu_per_batch_seconds": cpu, "ratio_stream_to_append": ratio,
        "sink_seconds_per_batch": {"stream": sink_stream, "append": sink_batch},
        "runs": runs,
    })


if __name__ == "__main__":
    main()
