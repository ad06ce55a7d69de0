"""Group tables both replay engines and the published simulator are compared on (tests/zeus/)."""

from __future__ import annotations

#: The differential tests replay every ElasticFlow group of at most this many jobs.
MAX_JOBS = 40

#: (start s, end s, runtime_ratio) of one imagenet group, in table order. Bursts of overlapping jobs
#: (two arrive together at 1527 s) separated by idle gaps. On V100 at eta 0.5, beta 1.5 the early
#: stopping cuts 15 runs before the target: their retries overlap runs of other jobs, retries of
#: retries follow, and job 7's first retry ends (1481 s) before the next job arrives (1527 s).
RETRY_JOBS: list[tuple[float, float, float]] = [
    (0, 391, 1.0), (657, 690, 0.8), (679, 694, 1.2), (693, 993, 1.0), (1068, 1304, 0.9), (1076, 1089, 1.1),
    (1095, 1288, 1.0), (1091, 1144, 0.7), (1527, 1614, 1.3), (1550, 1627, 1.0), (1527, 1679, 0.6), (1723, 1752, 1.0),
    (1739, 2095, 1.4), (1730, 2083, 1.0), (1754, 1895, 0.8), (2394, 2655, 1.0), (2443, 2508, 1.2), (2444, 2694, 1.0),
    (2699, 2816, 0.9), (2747, 2952, 1.0), (2707, 3092, 1.1), (2727, 3006, 1.0), (3252, 3271, 0.5), (3254, 3613, 1.0),
    (3272, 3427, 1.5),
]  # fmt: skip
