"""Aggregation: every figure per vendor and scope with n and a 95 % interval, headline eligibility, the leaderboard record."""
