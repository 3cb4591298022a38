"""The package version, written once: ``pyproject.toml`` reads it (setuptools ``attr:``)."""

__version__ = "0.1.0"
