"""loopx: canonical, verifiable state for long-running coding-agent work."""

__version__ = "0.1.0"
