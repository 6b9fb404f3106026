"""The `bench` command."""
