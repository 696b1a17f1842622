"""sluice as the per-task engine of Dask: text files loaded into a
Parquet dataset by Dask's workers, each task running ``sluice.convert``
over its share of the files.

    from dask.distributed import Client
    import sluice.dask

    client = Client()                      # or Client("scheduler:8786")
    s = sluice.dask.load("/data/chunks/*.tsv", "/data/objects", client=client,
                         tsv=True, header=False, key="source_id", buckets=64)
    import dask.dataframe as dd
    dd.read_parquet("/data/objects")

The output must be on a filesystem the client and every worker see at
the same path. The commit protocol is ``sluice.spark``'s (see
``sluice._distributed``): each task attempt writes a directory of its
own, only the results Dask returns are published, keys are checked
bucket by bucket, ``_SUCCESS`` comes last.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, Optional

from . import _distributed


def _attempt(task, files, staging, options, threads, output):
    # A directory of its own for each attempt: a task Dask runs again
    # (its worker died) writes beside the lost attempt, never into it.
    return _distributed.run_task(task, files, staging, options, uuid.uuid4().hex[:12], threads, output)


def load(
    data: Any,
    output: Any,
    *,
    client: Any = None,
    tasks: Optional[int] = None,
    threads_per_task: Optional[int] = None,
    retries: int = 3,
    overwrite: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Loads files into a Parquet dataset at ``output`` with Dask's
    workers running ``sluice.convert`` (see ``sluice.spark.load``: the
    same options, the same summary). ``client``: a
    ``dask.distributed.Client`` (default: the current one). A task whose
    worker dies is run again, up to ``retries`` times."""
    if client is None:
        from dask.distributed import get_client

        client = get_client()
    threads_info = client.nthreads()
    parallelism = max(1, sum(threads_info.values()))
    if threads_per_task is None:
        threads_per_task = 1
    plan = _distributed.Plan(data, output, tasks, parallelism, dict(options, overwrite=overwrite))

    def run_tasks(tasks):
        futures = [
            client.submit(
                _attempt,
                t,
                files,
                plan.staging,
                plan.options,
                threads_per_task,
                plan.output,
                key=f"sluice-convert-{t}-{uuid.uuid4().hex[:8]}",
                retries=retries,
                pure=False,
            )
            for t, files in tasks
        ]
        return client.gather(futures)

    def run_checks(dirs):
        futures = [
            client.submit(_distributed.check_task, d, threads_per_task, retries=retries, pure=False)
            for d in dirs
        ]
        return client.gather(futures)

    return _distributed.run(plan, run_tasks, run_checks, overwrite, threads_per_task)
