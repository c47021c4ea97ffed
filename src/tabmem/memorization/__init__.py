"""Replica detection, per-record memorization, epoch tracking and training dynamics."""
