"""Dagster definitions, one concern per module; loaded by `bench_assets.definitions`.

Every process that loads the code location (code server, daemon, webserver, each run and each
`bench` command that materializes) imports every module here, and a run executes one stage: so an
asset imports its stage's code (and pandas, scipy, matplotlib through it) in its body, when it
runs, and a module here imports at its top only what defining the assets needs."""
