"""Scoring: one verdict per vendor per golden row, re-derived from the archived responses."""
