"""Exact nearest-neighbour search: blocked feature-space search and edit-distance search."""
