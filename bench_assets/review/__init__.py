"""Vendor review: packets, the business-day gate, and next quarter's rotation plan."""
