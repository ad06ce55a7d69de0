"""Fan tasks out over Dask, or run them in this process: the layer the sweeps and the Dagster resource share.

A *scheduler* names where tasks run:

* ``"auto"`` (``AutoRunner``): in this process where that is faster, else on a ``"local"`` cluster. The
  first tasks of a map run here and are timed; from the rest's estimated seconds (``rest x`` the
  measured seconds per task) against a local cluster's (``LOCAL_START_SECONDS`` + the same work spread
  over its workers, a task taking its CPU seconds on a worker's one core) it goes on here or, where the
  cluster ends ``LOCAL_MARGIN`` times sooner, starts it for the rest, and says which with the estimate;
* ``"none"``: in this process, one after another (``SerialRunner``; Dask is not imported);
* ``"local"``: a ``distributed.LocalCluster`` started here and closed on exit: one worker process
  per core, one thread each (the replay is pure-Python CPU work, so processes, not threads),
  listening on 127.0.0.1 only, no dashboard. Inside a Dask worker (a step that dagster-dask's
  executor runs there) ``"local"`` is that worker's own cluster, reached with ``worker_client``;
* ``"slurm"``: workers submitted as Slurm jobs by dask-jobqueue (``jobqueue``: the
  ``slurm`` extra), adaptive by default, the jobs cancelled on exit; waits for the first worker;
* an address (``tcp://HOST:PORT``, anything ``distributed.Client`` accepts): that cluster;
* ``None``: ``$DASK_SCHEDULER_ADDRESS`` when set (read at call time, never at import), else ``"auto"``.

``fan_out`` sends the shared inputs to the workers once (scattered and broadcast to every worker),
runs ``fn(task, **shared)`` per task and returns the results in task order. A task running on a
worker that dies is run again elsewhere by the scheduler (up to
``distributed.scheduler.allowed-failures`` times, 3 by default). Dask's active memory manager may
drop all copies of the scattered inputs but one (its ``ReduceReplicas`` policy, on by default), and
a worker that dies can take that one along: Dask then cancels the tasks that need it, and
``DaskRunner.map`` scatters the inputs again and resubmits those tasks (``RESUBMITS`` times at
most). As long as ``fn`` is deterministic, the results depend neither on the worker count nor on
the completion order.
``DaskRunner.map_parts`` also gives each task one of a list of parts, each part scattered once to one worker (not
broadcast) and moved by Dask where its tasks run, with at most a window of tasks in flight (whatif's partitions:
``pipelines.clusters.partition_tasks``, which may instead have the tasks read a part from a folder every worker reads).
Workers need this package importable (same version), not the data or a shared filesystem.

The modules, top down: ``schedulers`` (the scheduler names, ``connect``), ``auto`` (``AutoRunner``), ``background``
(``Background``: a command's own work beside a cluster's start),
``runners`` (the ``Runner`` protocol, ``SerialRunner``, ``DaskRunner``, ``fan_out``), ``local``
(``local_cluster``) and ``jobqueue`` (Dask workers as Slurm jobs).
"""
