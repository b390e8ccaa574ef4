"""The `replay` extra: which of its packages a command needs and how a user installs them.

The hint names the install a user of a wheel or an sdist runs, not only a checkout's: `eventpy
replay` run from `pip install eventpy` used to say `run make venv or pip install -e '.[replay]'`,
commands that work only inside the repository."""

from __future__ import annotations

import importlib.util

INSTALL = "pip install 'eventpy[replay]'"
INSTALL_HINT = f"{INSTALL}; in a checkout: pip install -e '.[replay]'"


def missing(*modules: str) -> list[str]:
    """The modules of `modules` that cannot be imported here (found without importing them: pyspark
    and matplotlib take about a second each, paid again when the replay imports them)."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def missing_message(modules: list[str]) -> str:
    """One line for a command that cannot run without `modules` (from missing())."""
    return f"it needs {' and '.join(modules)}, which the replay extra installs: {INSTALL_HINT}"
