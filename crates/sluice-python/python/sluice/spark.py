"""sluice as the per-task engine of a Spark job: text files loaded into a
Parquet dataset by Spark's executors, each task running ``sluice.convert``
over its share of the files.

    from pyspark.sql import SparkSession
    import sluice.spark

    spark = SparkSession.builder.getOrCreate()
    s = sluice.spark.load(spark, "/data/chunks/*.tsv", "/data/objects",
                          tsv=True, header=False,
                          schema="source_id TEXT, chunkId INT, subChunkId INT",
                          key="source_id", buckets=64)
    spark.read.parquet("/data/objects").groupBy("chunkId").count()

The output must be on a filesystem the driver and every executor see at
the same path. See ``sluice._distributed`` for the commit protocol: each
task attempt writes a directory of its own, only the attempts Spark
reports as successful are published (a retried or speculative attempt
never adds rows twice), the keys are checked bucket by bucket in a second
stage, and ``_SUCCESS`` comes last.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from . import _distributed


def load(
    spark: Any,
    data: Any,
    output: Any,
    *,
    tasks: Optional[int] = None,
    threads_per_task: Optional[int] = None,
    overwrite: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Loads files (a path, glob, directory, or a list of them) into a
    Parquet dataset at ``output`` with Spark's executors running
    ``sluice.convert``; the options are those of ``sluice.convert``
    (``schema``, ``key``, ``buckets``, ``tsv``, ``delimiter``, ...).

    The files are shared out by size among ``tasks`` tasks (default:
    twice Spark's default parallelism, fewer for small inputs); each runs
    sluice on ``threads_per_task`` threads (default: ``spark.task.cpus``).
    The schema is inferred once on the driver when not given. With
    ``key``, a second stage checks each bucket; a key found twice fails
    the load (nothing is written) naming both files and lines. Returns a
    dict: rows, bytes, files, tasks, rejected, files_written, buckets,
    schema, seconds, mb_per_s.
    """
    sc = spark.sparkContext
    if threads_per_task is None:
        threads_per_task = int(sc.getConf().get("spark.task.cpus", "1"))
    plan = _distributed.Plan(data, output, tasks, sc.defaultParallelism, dict(options, overwrite=overwrite))
    staging, task_options, threads, output = plan.staging, plan.options, threads_per_task, plan.output

    def convert_share(part):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = f"{ctx.stageId()}-{ctx.partitionId()}-{ctx.taskAttemptId()}"
        for task, files in part:
            yield _distributed.run_task(task, files, staging, task_options, attempt, threads, output)

    def check(part):
        for d in part:
            yield _distributed.check_task(d, threads)

    def run_tasks(tasks):
        return sc.parallelize(tasks, len(tasks)).mapPartitions(convert_share).collect()

    def run_checks(dirs):
        return sc.parallelize(dirs, len(dirs)).mapPartitions(check).collect()

    sc.setJobDescription(f"sluice load into {os.path.basename(plan.output)}")
    return _distributed.run(plan, run_tasks, run_checks, overwrite, threads)
