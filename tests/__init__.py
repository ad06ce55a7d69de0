"""The test suite, one folder per domain of ``pipelines/``; shared helpers in ``tests.support``.

A package (as is each folder), so that test modules of the same name in two folders do not collide
and ``tests.support`` imports from the tests and from ``bench/`` alike.
"""
