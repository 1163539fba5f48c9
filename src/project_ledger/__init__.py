"""project-ledger: a persistent, per-project memory for coding agents, served over MCP."""
