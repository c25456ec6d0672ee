"""git-lanes: git-native coordination for many AI coding agents in one repository.

Kept import-free so that `git lanes --version` and the agent-hook path pay for nothing they do not use.
"""

__version__ = "0.1.0"
