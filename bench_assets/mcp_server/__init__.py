"""`bench mcp`: answers for agents over a published snapshot's files (never the warehouse, never the
holdout): `published` reads the folder and answers, `server` exposes them as MCP tools."""
