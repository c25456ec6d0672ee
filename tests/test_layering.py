"""DESIGN.md §4's import rules, checked on every source file's parsed imports (new modules are covered as
they appear): pygit2 only in the storage layer; `model` imports no other layer; the domain and the ledger
never reach up to the API or a face, and neither print nor read the environment; faces never touch pygit2
or the store; command modules load nothing heavy when they are imported."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "git_lanes"
FACES = {"cli", "demo", "mcp", "http", "hooks", "lite", "sdk", "__main__"}
GIT_LIBRARIES = {"pygit2", "dulwich"}
# Whatever a layer may import from git_lanes, besides itself; `errors` is the one shared hierarchy.
ALLOWED = {
    "model": {"errors"},
    "store": {"errors", "model"},
    "ledger": {"errors", "model", "store"},
    "domain": {"errors", "model", "store", "ledger"},
    "api": {"errors", "model", "store", "ledger", "domain"},
}


@dataclass(frozen=True)
class Import:
    file: Path
    line: int
    module: str
    top_level: bool  # executed when the module is imported, not inside a function

    def __str__(self) -> str:
        return f"{self.file.relative_to(PACKAGE.parent)}:{self.line} imports {self.module}"


def source_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20, "the package was not found"
    return files


def layer_of(file: Path) -> str:
    parts = file.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def module_name(file: Path) -> str:
    parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(file: Path, source: str | None = None) -> list[Import]:
    tree = ast.parse(source if source is not None else file.read_text(), filename=str(file))
    package = module_name(file) if file.name == "__init__.py" else module_name(file).rpartition(".")[0]
    nested = {id(node) for func in ast.walk(tree) if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(func)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from git_lanes.store import repo` imports the submodule git_lanes.store.repo too
            names = [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        else:
            continue
        found += [Import(file, node.lineno, name, id(node) not in nested) for name in names]
    return found


def git_lanes_layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "git_lanes" or len(parts) < 2:
        return None
    return parts[1]


ALL_IMPORTS = [imp for file in source_files() for imp in imports_of(file)]


def violations(predicate) -> list[str]:
    return [str(imp) for imp in ALL_IMPORTS if predicate(imp)]


def test_only_the_store_imports_a_git_library():
    assert violations(lambda imp: imp.module.split(".")[0] in GIT_LIBRARIES
                      and layer_of(imp.file) != "store") == []


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_lower_layers_import_only_what_is_beneath_them(layer):
    def breaks_rule(imp: Import) -> bool:
        target = git_lanes_layer(imp.module)
        return layer_of(imp.file) == layer and target is not None and target != layer \
            and target not in ALLOWED[layer] and imp.module != "git_lanes"
    assert violations(breaks_rule) == []


def test_faces_never_touch_the_store_or_pygit2():
    def breaks_rule(imp: Import) -> bool:
        return layer_of(imp.file) in FACES and (imp.module.split(".")[0] in GIT_LIBRARIES
                                                or git_lanes_layer(imp.module) == "store")
    assert violations(breaks_rule) == []


def test_command_modules_import_nothing_heavy_at_import_time():
    """`--help` and repo-less commands load command modules; the API, domain and store load inside the
    action that needs them."""
    heavy = {"api", "domain", "store", "ledger"}

    def breaks_rule(imp: Import) -> bool:
        return layer_of(imp.file) == "cli" and imp.top_level and (
            git_lanes_layer(imp.module) in heavy or imp.module.split(".")[0] in GIT_LIBRARIES)
    assert violations(breaks_rule) == []


@pytest.mark.parametrize("layer", ["model", "domain", "ledger"])
def test_pure_layers_neither_print_nor_read_the_environment(layer):
    found = []
    for file in source_files():
        if layer_of(file) != layer:
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"print",
                                                                                                 "input"}:
                found.append(f"{file.name}:{node.lineno} calls {node.func.id}")
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "getcwd", "stdout",
                                                                 "stderr"}:
                found.append(f"{file.name}:{node.lineno} uses {node.attr}")
    assert found == []


def test_the_checker_sees_a_violation():
    """The rules above are only as good as the parser: planted violations must be caught."""
    planted = PACKAGE / "model" / "planted.py"
    imports = imports_of(planted, "from ..store import repo\nimport pygit2\n\ndef f():\n    import dulwich\n")
    assert {(imp.module, imp.top_level) for imp in imports} == {
        ("git_lanes.store", True), ("git_lanes.store.repo", True), ("pygit2", True), ("dulwich", False)}


def string_imports(file: Path, source: str | None = None) -> list[str]:
    """The "git_lanes.<layer>…" strings a module of a lower layer holds that name a layer above it: what
    importlib would load by name, which the import rules above cannot see."""
    layer = layer_of(file)
    found = []
    for node in ast.walk(ast.parse(source if source is not None else file.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            target = git_lanes_layer(node.value.split(":")[0].strip())
            if target is not None and target != layer and target not in ALLOWED[layer]:
                found.append(f"{file.name}:{node.lineno} names {node.value!r}")
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_lower_layers_name_no_layer_above_them_by_a_string(layer):
    """A string import is invisible to the import rules above (the ledger once loaded the domain's fold by
    its import path): collaborators are passed in instead."""
    assert [f for file in source_files() if layer_of(file) == layer for f in string_imports(file)] == []


def test_the_string_checker_sees_a_violation():
    planted = PACKAGE / "ledger" / "planted.py"
    found = string_imports(planted, 'import importlib\nFOLD = "git_lanes.domain.coordination:FOLD"\n'
                                    'importlib.import_module(FOLD)\nOK = "git_lanes.store.repo"\n')
    assert found == ["planted.py:2 names 'git_lanes.domain.coordination:FOLD'"]


def import_graph() -> dict[str, set[str]]:
    """Module -> the git_lanes modules it imports, at any depth of its code (a lazy import inside a function
    still ties the two modules together). Importing one's own package is no edge: the package is always
    initialised first."""
    modules = {module_name(f) for f in source_files()}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in ALL_IMPORTS:
        source = module_name(imp.file)
        if imp.module in modules and imp.module != source and not source.startswith(imp.module + "."):
            graph[source].add(imp.module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_in_a_circle():
    """A cycle (tasks -> tickets -> tasks, hidden by an import inside a function) makes two modules one."""
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
