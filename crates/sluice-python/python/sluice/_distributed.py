"""What a distributed load (``sluice.spark.load``, ``sluice.dask.load``)
does outside the engine that runs its tasks: the files shared out among
tasks by size, each task attempt converting its share into a directory of
its own, the attempts the engine reports as successful published (one a
task: a retried or speculative attempt never adds rows twice), the keys
checked bucket by bucket in a second stage, and ``_SUCCESS`` written last.

The output must be on a filesystem the driver and every worker see at
the same path (a local disk in local mode, NFS, a cluster filesystem
mounted everywhere).

    driver                         tasks (executors)
    expand files, infer schema ─►  convert(share, staging/task-T-ATTEMPT)
    share out by size              (each attempt its own directory)
                              ◄─   summaries of the successful attempts
    move those attempts' files
    into staging/dataset/     ─►   check_bucket(bucket=NN)   (with a key)
                              ◄─   a repeated key, if any
    locate it in the two tasks' inputs (file:line), or
    write _SUCCESS, rename staging/dataset to the output
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._sluice import LoadError, _check_bucket, _expand, _locate_key


def share_out(files: Sequence[Tuple[str, int]], tasks: int) -> List[List[str]]:
    """The files in `tasks` shares of about equal bytes (the largest file
    first to the share with the fewest bytes); each share keeps the input
    order, and no share is empty."""
    tasks = max(1, min(tasks, len(files)))
    shares: List[List[int]] = [[] for _ in range(tasks)]
    sizes = [0] * tasks
    for i in sorted(range(len(files)), key=lambda i: (-files[i][1], i)):
        t = min(range(tasks), key=lambda t: (sizes[t], t))
        shares[t].append(i)
        sizes[t] += max(files[i][1], 1)
    return [[files[i][0] for i in sorted(s)] for s in shares if s]


class Plan:
    """A distributed load worked out on the driver: its tasks' files, the
    options every task gets (the schema fixed once), and where it
    stages."""

    def __init__(self, data: Any, output: str, tasks: Optional[int], parallelism: int, options: Dict[str, Any]):
        from . import _convert_opts, _inputs, infer

        self.output = os.path.abspath(os.fspath(output))
        if os.path.exists(self.output) and not options.get("overwrite"):
            if not (os.path.isdir(self.output) and not os.listdir(self.output)):
                raise LoadError(
                    f"{self.output} already exists; remove it, choose another output, or give overwrite=True"
                )
        if os.path.isdir(self.output) and os.listdir(self.output) and not os.path.exists(
            os.path.join(self.output, "_SUCCESS")
        ):
            raise LoadError(f"overwrite=True: {self.output} is not a dataset (it has no _SUCCESS file)")
        files = _expand(_inputs(data, "load"))
        if not files:
            raise LoadError("no input files given")
        self.files = files
        self.bytes = sum(s for _, s in files)
        if tasks is None:
            # Twice the cores (uneven files even out), a task at least
            # 64 MB of input (each task writes a file a bucket).
            tasks = min(2 * parallelism, max(1, self.bytes // (64 << 20)))
            tasks = max(tasks, min(parallelism, len(files)))
        if tasks < 1:
            raise ValueError("tasks must be at least 1")
        self.shares = share_out(files, tasks)
        opts = dict(options)
        opts.pop("overwrite", None)
        if opts.get("schema") is None:
            # Inferred once, from samples of all the files: every task
            # writes the same columns.
            opts["schema"] = infer([f for f, _ in files], **{k: v for k, v in opts.items() if k != "schema"})
            # The key is now the schema's.
            opts.pop("key", None)
        self.schema = opts["schema"]
        self.options = opts
        # Checked once on the driver, as a task would check them.
        self.task_options = _convert_opts("load", dict(opts))
        self.key = options.get("key") is not None or "PRIMARY KEY" in self.schema.upper()
        self.buckets = int(options.get("buckets") or 0)
        parent = os.path.dirname(self.output) or "."
        name = os.path.basename(self.output)
        self.staging = os.path.join(parent, f".{name}.sluice-staging-{uuid.uuid4().hex[:12]}")
        os.makedirs(self.staging)
        self.dataset = os.path.join(self.staging, "dataset")
        os.makedirs(self.dataset)

    def tasks(self) -> List[Tuple[int, List[str]]]:
        return list(enumerate(self.shares))


def run_task(task: int, files: List[str], staging: str, options: Dict[str, Any], attempt: str, threads: Optional[int], output: str = "") -> Dict[str, Any]:
    """One task attempt (on a worker): its files converted into a
    directory of its own under `staging`; returns its summary with the
    directory. An error of the input (a malformed record, a duplicate
    key within the task) is returned, not raised: running the task again
    would fail the same way, and the driver raises it."""
    from . import Error, convert

    out = os.path.join(staging, f"task-{task:05d}-{attempt}")
    victim = _fault_victim(task)
    if victim is not None:
        victim = _kill_first_attempt(task, victim, out)
    try:
        # The key is checked by the second stage, over all the tasks'
        # files of a bucket: not twice.
        s = convert(files, out, threads=threads, file_prefix=f"part-{task:05d}", check_key=False, **options)
    except Error as e:
        message = str(e)
        prefix = f"converting into {out}; nothing was written: "
        if message.startswith(prefix):
            message = message[len(prefix) :]
        return {"task": task, "error": message.replace(out, output or out), "kind": type(e).__name__}
    d = s.to_dict()
    d["task"] = task
    d["dir"] = out
    d["attempt"] = attempt
    if victim:
        # Written, not yet reported: the worst moment to die.
        os._exit(137)
    return d


def _fault_victim(task: int) -> Optional[str]:
    """Fault injection for the tests: `SLUICE_FAULT_KILL_TASK=T:DIR` kills
    the first attempt of task T; markers go to DIR."""
    fault = os.environ.get("SLUICE_FAULT_KILL_TASK")
    if not fault:
        return None
    t, _, marks = fault.partition(":")
    return marks if int(t) == task and marks else None


def _kill_first_attempt(task: int, marks: str, out: str) -> bool:
    """The first attempt of the task (the first to create the marker
    `DIR/killed-T`) kills its own process (as SIGKILL would) while it
    writes its files, or, should it finish first, after it wrote them,
    before it reports; returns whether this attempt is that one."""
    marker = os.path.join(marks, f"killed-{task}")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
    except FileExistsError:
        # A later attempt: it runs.
        with open(os.path.join(marks, f"retried-{task}"), "a") as f:
            f.write(out + "\n")
        return False
    hidden = os.path.join(os.path.dirname(out), "." + os.path.basename(out) + ".sluice-tmp-")

    def watch() -> None:
        while True:
            parent = os.path.dirname(out)
            for n in os.listdir(parent):
                p = os.path.join(parent, n)
                if p.startswith(hidden):
                    for _, _, fs in os.walk(p):
                        if any(f.endswith((".parquet", ".csv", ".jsonl")) for f in fs):
                            os._exit(137)
            time.sleep(0.001)

    threading.Thread(target=watch, daemon=True).start()
    return True


def publish_attempts(plan: Plan, results: List[Dict[str, Any]]) -> None:
    """The files of one successful attempt a task moved into the staged
    dataset."""
    for r in sorted(results, key=lambda r: r["task"]):
        if r.get("error") is not None:
            raise LoadError(f"loading into {plan.output}; nothing was written: {r['error']}")
    seen = set()
    for r in sorted(results, key=lambda r: r["task"]):
        if r["task"] in seen:
            # Two successful attempts reported for one task: the first
            # is kept (the engine reports one; this guards the rows).
            continue
        seen.add(r["task"])
        for root, _, names in os.walk(r["dir"]):
            rel = os.path.relpath(root, r["dir"])
            for n in names:
                if n.startswith(("_", ".")):
                    continue
                to = os.path.join(plan.dataset, rel) if rel != "." else plan.dataset
                os.makedirs(to, exist_ok=True)
                os.rename(os.path.join(root, n), os.path.join(to, n))
    missing = sorted(set(range(len(plan.shares))) - seen)
    if missing:
        raise LoadError(f"tasks {missing} reported no successful attempt; nothing was written")


def bucket_dirs(plan: Plan) -> List[str]:
    """The directories the key check's tasks each take: every bucket, or
    the whole dataset when not bucketed."""
    if plan.buckets > 1:
        return sorted(
            os.path.join(plan.dataset, d) for d in os.listdir(plan.dataset) if d.startswith("bucket=")
        )
    return [plan.dataset]


def check_task(directory: str, threads: Optional[int]) -> Optional[Dict[str, Any]]:
    """The second stage's task: a key twice among one bucket's files."""
    return _check_bucket(directory, threads)


def report_repeat(plan: Plan, repeat: Dict[str, Any], threads: Optional[int]) -> LoadError:
    """The error of a key found twice: both rows located in the inputs
    of the tasks whose files hold them."""
    places = []
    for path, _row in (repeat["first"], repeat["second"]):
        task = int(os.path.basename(path).split("-")[1])
        found = _locate_key(plan.shares[task], plan.task_options, repeat["key"], threads)
        places.append(found)
    first = places[0][0] if places[0] else repeat["first"][0]
    second = [p for p in places[1] if p != first]
    second = second[0] if second else repeat["second"][0]
    return LoadError(
        f"loading into {plan.output}; nothing was written: duplicate key {repeat['shown']} in {plan.output}: "
        f"{second} repeats the key of {first}"
    )


def finish(plan: Plan, overwrite: bool) -> None:
    """_SUCCESS written last, the staged dataset renamed into place (an
    old dataset moved aside first with overwrite=True), the staging
    directory removed."""
    with open(os.path.join(plan.dataset, "_SUCCESS"), "w"):
        pass
    old = None
    if os.path.exists(plan.output):
        if not os.listdir(plan.output):
            os.rmdir(plan.output)
        elif overwrite:
            old = plan.staging + "-old"
            os.rename(plan.output, old)
    os.rename(plan.dataset, plan.output)
    shutil.rmtree(plan.staging, ignore_errors=True)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def summary(plan: Plan, results: List[Dict[str, Any]], seconds: float) -> Dict[str, Any]:
    kept = {}
    for r in sorted(results, key=lambda r: r["task"]):
        kept.setdefault(r["task"], r)
    rows = sum(r["rows"] for r in kept.values())
    return {
        "output": plan.output,
        "rows": rows,
        "bytes": plan.bytes,
        "files": len(plan.files),
        "tasks": len(plan.shares),
        "rejected": sum(r["rejected"] for r in kept.values()),
        "files_written": sum(r["files_written"] for r in kept.values()),
        "bytes_written": sum(r["bytes_written"] for r in kept.values()),
        "buckets": plan.buckets,
        "schema": plan.schema,
        "seconds": seconds,
        "mb_per_s": plan.bytes / 1e6 / max(seconds, 1e-9),
    }


def run(
    plan: Plan,
    run_tasks: Callable[[List[Tuple[int, List[str]]]], List[Dict[str, Any]]],
    run_checks: Callable[[List[str]], List[Optional[Dict[str, Any]]]],
    overwrite: bool,
    threads: Optional[int],
) -> Dict[str, Any]:
    """The stages, given the engine's way to run each: `run_tasks` the
    conversion tasks (one summary a task, of its successful attempt),
    `run_checks` the key check of each bucket directory."""
    start = time.perf_counter()
    try:
        results = run_tasks(plan.tasks())
        publish_attempts(plan, results)
        if plan.key:
            for repeat in run_checks(bucket_dirs(plan)):
                if repeat is not None:
                    raise report_repeat(plan, repeat, threads)
        finish(plan, overwrite)
    finally:
        shutil.rmtree(plan.staging, ignore_errors=True)
    return summary(plan, results, time.perf_counter() - start)
