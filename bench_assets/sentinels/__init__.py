"""Sentinel pages and probes: time-to-retrievability of freshly published pages we control."""
