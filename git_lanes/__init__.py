"""git-lanes: git-native coordination for many AI coding agents in one repository.

The SDK's names load on first use (`from git_lanes import AgentSession`), so that `git lanes --version` and the
agent-hook path, which import this package, pay for nothing they do not use.

- `AgentSession`: one agent's session on a repository (`session.work(...)`, claims, board, waiting).
- `Lanes`: the API every face calls, for anything the session does not offer.
- `LanesError` and its kinds `UserError`, `NotFound`, `Conflict` (a race lost, something moved: exit 3 in the
  CLI) and `GateFailed` (a required gate failed: exit 4); each has a stable `code` and a `hint`.
  `RepositoryGone` (a UserError) says the repository a session held open was removed or moved since.
- `LanesWarning`: what a session's call went on past (the CLI's `warning:` lines), given to `warnings`.
"""

__version__ = "0.2.0"

_LAZY = {
    "AgentSession": "git_lanes.sdk",
    "Work": "git_lanes.sdk",
    "LanesWarning": "git_lanes.sdk",
    "Lanes": "git_lanes.api",
    "LanesError": "git_lanes.errors",
    "UserError": "git_lanes.errors",
    "NotFound": "git_lanes.errors",
    "Conflict": "git_lanes.errors",
    "GateFailed": "git_lanes.errors",
    "RepositoryGone": "git_lanes.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'git_lanes' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
