"""ichor for Hermes. The code is the installed `ichor` package: pip install hermes-ichor."""

from ichor.hermes import register  # noqa: F401
