"""Sentinel pages and probes: time-to-retrievability of freshly published pages we control."""

# UTC: 00:00, 06:00, 12:00, 18:00; here, so the schedule's definition reads it without loading `pages`
PROBE_CRON = "0 */6 * * *"
