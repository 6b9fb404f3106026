"""Agent-ready trials: can an autonomous agent obtain a working key with no human in the loop."""
