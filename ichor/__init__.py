"""ichor: every correction you give your agent, kept as a preference pair you can train on."""

__version__ = "0.1.0"

# The name on the package index (`pip install hermes-ichor`); the import name stays `ichor`.
DISTRIBUTION = "hermes-ichor"
