"""`bench reproduce`: every public verdict and figure re-derived from a published folder alone."""
