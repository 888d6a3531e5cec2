"""`loopx mcp`: the loopx tools over the Model Context Protocol (stdio), on the official `mcp`
SDK (the optional extra `loopx[mcp]`). Beside the CLI: it calls the same functions."""
