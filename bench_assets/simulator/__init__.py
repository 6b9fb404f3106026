"""The embedded default: one local HTTP server that speaks every vendor's API and serves the planted
pages, with per-vendor behaviour (ranking, coverage, latency, faults, price)."""
