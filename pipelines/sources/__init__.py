"""Upstream files: the pinned manifest (``manifest``) and fetching them into ``raw/`` (``fetch``)."""
