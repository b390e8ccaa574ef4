"""Broker-less content-based publish/subscribe (paper 004): peers arrange themselves in an overlay
that meets each subscriber's delay requirement under its bandwidth constraint."""

from ._space import Box, Dimension, Space, coarser, covered, matches, merge, overlaps

__all__ = ["Box", "Dimension", "Space", "coarser", "covered", "matches", "merge", "overlaps"]
