"""Vendor fetch: what is sent, paced and retried, every attempt archived as evidence, and what it costs."""
