"""pyproject.toml allows Python 3.10, whose standard library has no `tomllib` (3.11 added it): every module,
test and script takes it from `git_lanes.model.config`, which falls back to `tomli` there, or imports it only
behind a `sys.version_info` check or an ImportError fallback of its own."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("git_lanes", "tests", "contrib", "bench")
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _guarded(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether `node` sits in an `if` whose test reads `sys.version_info`, or in a `try` that falls back when
    the import fails."""
    while id(node) in parents:
        child, node = node, parents[id(node)]
        if isinstance(node, ast.If) and "version_info" in ast.unparse(node.test):
            return True
        if isinstance(node, ast.Try) and child in node.body and any(
                handler.type is not None
                and IMPORT_ERRORS & {name.id for name in ast.walk(handler.type) if isinstance(name, ast.Name)}
                for handler in node.handlers):
            return True
    return False


def unguarded_tomllib_imports(source: str, name: str) -> list[str]:
    tree = ast.parse(source, filename=name)
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = []
    for node in ast.walk(tree):
        modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                   else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        if "tomllib" in modules and not _guarded(node, parents):
            found.append(f"{name}:{node.lineno}")
    return found


def test_tomllib_is_imported_only_where_python_3_10_gets_tomli():
    files = [file for top in SOURCES for file in sorted((ROOT / top).rglob("*.py"))]
    assert len(files) > 100, "the sources were not found"
    found = [hit for file in files
             for hit in unguarded_tomllib_imports(file.read_text(), str(file.relative_to(ROOT)))]
    assert found == [], "import it as `from git_lanes.model.config import tomllib`: " + ", ".join(found)


def test_the_check_sees_an_unguarded_import_and_passes_a_guarded_one():
    assert unguarded_tomllib_imports("import tomllib\n", "x.py") == ["x.py:1"]
    assert unguarded_tomllib_imports("def f():\n    from tomllib import loads\n", "x.py") == ["x.py:2"]
    guarded = "import sys\nif sys.version_info >= (3, 11):\n    import tomllib\nelse:\n    import tomli as tomllib\n"
    assert unguarded_tomllib_imports(guarded, "x.py") == []
    fallback = "try:\n    import tomllib\nexcept ModuleNotFoundError:\n    import tomli as tomllib\n"
    assert unguarded_tomllib_imports(fallback, "x.py") == []
    assert unguarded_tomllib_imports("try:\n    import tomllib\nexcept ValueError:\n    pass\n", "x.py") == ["x.py:2"]
    assert unguarded_tomllib_imports("from git_lanes.model.config import tomllib\n", "x.py") == []
