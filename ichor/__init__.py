"""ichor: every correction you give your agent, kept as a preference pair you can train on."""

__version__ = "0.1.0"
