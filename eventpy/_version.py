"""The package's version: the one place it is changed (pyproject.toml reads it from here). `eventpy
--version`, `eventpyc --version` and a broker's refusal of another protocol version name it."""

__version__ = "0.1.0"
