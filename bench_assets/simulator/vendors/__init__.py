"""One module per simulated vendor. Each exposes `VENDOR`, `routes(sim)` and `unauthorized(req)`."""
