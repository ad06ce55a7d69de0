"""Zeus² heterogeneous GPUs: split a global batch across different GPUs and pick each GPU's power limit.

Modules, in the order data flows:

- ``fit``: per GPU and power limit, least-squares quadratics in batch size of time (s) and of
  average power (W = energy / time), as the published algorithm fits them;
- ``model``: cost models over those fits: the published per-GPU sum and the synchronous
  data-parallel model (an iteration lasts as long as the slowest GPU), with the Zeus eta knob;
- ``compositions``: the batch splits of a global batch, in lexicographic order, in chunks;
- ``search``: the exact optimum by vectorised enumeration (any number of GPUs), the published
  methods (brute force, heuristic, baseline) and the published baseline as its code computes it;
- ``allocations``: the allocations table of the ``hetero_allocations`` asset and the CLI;
- ``curves``: cost over the split for every pair of power limits (the figure's data);
- ``cli``: ``python -m pipelines hetero``.

No Dagster import here; ``pipelines.defs.hetero`` wires it.
"""
