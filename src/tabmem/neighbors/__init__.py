"""Exact nearest-neighbour search: every distance, the blocked search (:class:`NeighborIndex`), edit-distance search."""

from tabmem.neighbors.index import NeighborIndex

__all__ = ["NeighborIndex"]
