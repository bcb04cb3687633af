"""A static checker for CONTRIBUTING.md's layering rules, over the ``ast`` of every module.

It reads imports at module level and inside functions (``import x``, ``from . import y``,
``from ..z import w``; relative imports resolved to full module names) and checks:

- ``layers``: ``layout/`` uses only ``errors``, ``storage``, ``java_numbers`` and ``layout/``;
  ``orc/`` also ``layout/`` and ``orc/``; ``expressions/`` only ``errors``, ``java_numbers`` and
  ``expressions/`` (third-party:
  sqlglot and pyarrow). None of them imports pyspark or SQLAlchemy (``layout/`` and ``orc/``
  not sqlglot either).
- ``spark``: only modules under ``spark/`` import pyspark or a ``spark/`` module.
- ``store``: ``scan/`` and ``write/`` import neither ``metastore/`` nor ``txn`` / ``resolve``.
- ``executor``: an executor-side module reaches no driver-side module over the static import
  graph, transitively. Importing ``a.b.c`` also runs ``a`` and ``a.b``'s ``__init__``, so those
  are edges too (a module's own package is an edge "at line 0"). Imports under
  ``if TYPE_CHECKING:`` never run and are left out of this rule (and only this rule).
  Driver-side outside the package: SQLAlchemy (the store's client) and sqlglot (tasks receive
  compiled predicates, never SQL text).
- ``transactions``: only ``txn.py`` and ``metastore/`` call the store's transaction verbs. An
  ``ast`` check cannot know a receiver's type, so it flags what it can name: any call of
  ``.open_transaction(...)``, and ``.commit(...)`` / ``.abort(...)`` whose
  receiver's last name is ``metastore``, ``store`` or ``ms`` (leading underscores ignored,
  e.g. ``self._metastore.commit(...)``). ``txn.commit(...)`` on a ``Transaction`` is the one
  path and passes.
- ``private``: no ``from x import _y`` of another module's private name (dunder names and
  private *submodules* such as ``._version`` are fine).
- ``private-attribute``: no use of another module's private attribute, ``obj._y`` where the
  module defines no ``_y`` of its own (a function, class, method, assignment or argument of that
  name). ``self._y`` / ``cls._y`` pass (inherited), and so do the few private names of other
  libraries acidorc has to reach (:data:`FOREIGN_PRIVATE`: py4j's handles of a SparkSession,
  SQLAlchemy's row mapping).
- ``cycles``: no import cycle between modules, function-level imports included (those under
  ``if TYPE_CHECKING:`` never run and are left out), with ``importlib.import_module("...")`` of
  a literal name counted as an import. The one exception is a declared door (:data:`DOORS`): the
  engine-free ``table`` opens ``spark.table`` by name for ``AcidTable.forPath`` / ``forName``.

Each violation names the rule, the importing module, the imported module and the line.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path

EXECUTOR_SIDE = ("scan.reader", "scan.visibility", "scan.splits", "write.task", "write.rows", "orc.**",
                 "layout.**", "dml.events", "maintenance.compaction_tasks", "errors", "storage", "faults",
                 "settings", "java_numbers", "streaming.change_reader")
DRIVER_SIDE = ("metastore.**", "txn", "resolve", "writes", "table", "tables", "heartbeat", "completeness",
               "scan.planner", "maintenance.compactor", "maintenance.initiator", "maintenance.cleaner",
               "dml.execution", "dml.row_conflicts", "commit", "maintenance.auto_compact",
               "streaming.change_plan", "streaming.changes")
DRIVER_SIDE_EXTERNAL = ("sqlalchemy", "sqlglot")

# what each low layer may import from its own package (relative names; "x.**" is x and below)
LAYER_ALLOWED = {
    "layout": ("errors", "storage", "java_numbers", "layout.**"),
    "orc": ("errors", "storage", "java_numbers", "layout.**", "orc.**"),
    "expressions": ("errors", "java_numbers", "expressions.**"),
}
LAYER_FORBIDDEN_EXTERNAL = {
    "layout": ("pyspark", "sqlalchemy", "sqlglot"),
    "orc": ("pyspark", "sqlalchemy", "sqlglot"),
    "expressions": ("pyspark", "sqlalchemy"),
}
STORE_FREE = ("scan.**", "write.**")
STORE_SIDE = ("metastore.**", "txn", "resolve")
TRANSACTION_HOMES = ("txn", "metastore.**")
STORE_RECEIVERS = ("metastore", "store", "ms")
STORE_VERBS = ("commit", "abort")
#: the declared doors: (importer, imported), relative names, that may close an import cycle
DOORS = (("table", "spark.table"),)
#: private attributes of other libraries acidorc reaches on purpose
FOREIGN_PRIVATE = ("_jsparkSession", "_jvm", "_jdf", "_jsc", "_mapping", "_asdict", "_replace", "_fields",
                   "_call")  # pyarrow builds a compute call by name only through Expression._call


@dataclass(frozen=True)
class Import:
    importer: str            # full module name
    imported: str            # full module name (a package module or an external one)
    line: int
    names: tuple[str, ...]   # the names of a ``from ... import`` (empty for ``import x``)
    type_only: bool          # under ``if TYPE_CHECKING:``


@dataclass(frozen=True)
class Violation:
    rule: str
    importer: str
    imported: str
    line: int
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.importer} (line {self.line}) -> {self.imported}: {self.detail}"


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]


def load_package(root: Path) -> dict[str, Module]:
    """Every module under the package directory ``root``, by full dotted name."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, type_only: bool = False):
    """Every node with whether it sits under ``if TYPE_CHECKING:`` (its body, not its else)."""
    yield node, type_only
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.body:
            yield from _walk(child, True)
        for child in node.orelse:
            yield from _walk(child, type_only)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, type_only)


def _dynamic_import(node: ast.AST) -> str | None:
    """The module an ``importlib.import_module("literal")`` call names (absolute names only)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str) and not node.args[0].value.startswith(".")):
        return None
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")
    return node.args[0].value if named else None


def imports_of(module: Module, modules: dict[str, Module]) -> list[Import]:
    """The imports of one module, at any depth, with relative names resolved (and the literal
    names of ``importlib.import_module`` calls, as imports of no names)."""
    found = []
    for node, type_only in _walk(module.tree):
        dynamic = _dynamic_import(node)
        if dynamic is not None:
            found.append(Import(module.name, dynamic, node.lineno, ("<import_module>",), type_only))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module.name, alias.name, node.lineno, (), type_only))
        elif isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            if node.level:
                base = module.package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = tuple(alias.name for alias in node.names)
            submodules = [n for n in names if f"{target}.{n}" in modules]
            for n in submodules:
                found.append(Import(module.name, f"{target}.{n}", node.lineno, (), type_only))
            rest = tuple(n for n in names if n not in submodules)
            if rest or not submodules:
                found.append(Import(module.name, target, node.lineno, rest, type_only))
    return found


def _matches(name: str, package: str, patterns: tuple[str, ...]) -> bool:
    for pattern in patterns:
        full = f"{package}.{pattern}"
        if full.endswith(".**"):
            stem = full[:-3]
            if name == stem or name.startswith(stem + "."):
                return True
        elif name == full:
            return True
    return False


def _external(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _rel(name: str, package: str) -> str:
    return name[len(package) + 1:] if name.startswith(package + ".") else name


def _check_layers(imp: Import, package: str) -> list[Violation]:
    rel = _rel(imp.importer, package)
    layer = rel.split(".")[0]
    if layer not in LAYER_ALLOWED or rel == imp.importer:
        return []
    if imp.imported == package or imp.imported.startswith(package + "."):
        if not _matches(imp.imported, package, LAYER_ALLOWED[layer]):
            return [Violation("layers", imp.importer, imp.imported, imp.line,
                              f"{layer}/ may import only {', '.join(LAYER_ALLOWED[layer])} of {package}")]
    elif _external(imp.imported, LAYER_FORBIDDEN_EXTERNAL[layer]):
        return [Violation("layers", imp.importer, imp.imported, imp.line,
                          f"{layer}/ imports nothing above the file format (no Spark, store or SQL parser)")]
    return []


def _check_spark(imp: Import, package: str) -> list[Violation]:
    if _matches(imp.importer, package, ("spark.**",)):
        return []
    if any(imp.importer == f"{package}.{a}" and imp.imported == f"{package}.{b}" for a, b in DOORS):
        return []  # the declared door from the core to an engine
    if _external(imp.imported, ("pyspark", "py4j")) or _matches(imp.imported, package, ("spark.**",)):
        return [Violation("spark", imp.importer, imp.imported, imp.line,
                          f"only {package}.spark imports pyspark or a spark/ module")]
    return []


def _check_store(imp: Import, package: str) -> list[Violation]:
    if _matches(imp.importer, package, STORE_FREE) and _matches(imp.imported, package, STORE_SIDE):
        return [Violation("store", imp.importer, imp.imported, imp.line,
                          "scan/ and write/ receive a resolved table or a Transaction; they never import "
                          "metastore/, txn or resolve")]
    return []


def _check_private(imp: Import, package: str) -> list[Violation]:
    if imp.imported == imp.importer:
        return []
    private = [n for n in imp.names if n.startswith("_") and not (n.startswith("__") and n.endswith("__"))]
    if not private:
        return []
    return [Violation("private", imp.importer, imp.imported, imp.line,
                      f"imports private name(s) {', '.join(private)} of another module")]


def _defined_names(tree: ast.Module) -> set[str]:
    """Every name a module defines itself: functions, classes, assignments, arguments."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _check_private_attributes(module: Module) -> list[Violation]:
    defined = _defined_names(module.tree)
    found = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if name in defined or name in FOREIGN_PRIVATE:
            continue
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            continue  # inherited from a base class
        found.append(Violation("private-attribute", module.name, ast.unparse(node), node.lineno,
                               f"uses {name}, a private attribute of another module: make it public there"))
    return found


def _cycles(modules: dict[str, Module], all_imports: list[Import], package: str) -> list[Violation]:
    """Strongly connected components of the module graph (declared doors left out)."""
    doors = {(f"{package}.{a}", f"{package}.{b}") for a, b in DOORS}
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for imp in all_imports:
        if imp.type_only:
            continue
        target = imp.imported
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != imp.importer and (imp.importer, target) not in doors:
            graph[imp.importer].setdefault(target, imp.line)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):  # Tarjan's algorithm, iteratively
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    found = []
    for component in components:
        members = set(component)
        first = component[0]
        target = min(t for t in graph[first] if t in members)
        edges = ", ".join(f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in members)
        found.append(Violation("cycles", first, target, graph[first][target],
                               f"import cycle through {len(component)} modules: {edges}"))
    return found


def _receiver_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _check_transactions(module: Module, package: str) -> list[Violation]:
    if _matches(module.name, package, TRANSACTION_HOMES):
        return []
    found = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        verb = node.func.attr
        receiver = _receiver_name(node.func.value)
        if verb == "open_transaction" or (
                verb in STORE_VERBS and receiver is not None and receiver.lstrip("_") in STORE_RECEIVERS):
            found.append(Violation("transactions", module.name, f"{receiver or '<expr>'}.{verb}", node.lineno,
                                   f"only {package}.txn and {package}.metastore open, commit or abort a "
                                   "transaction on the store"))
    return found


def _runtime_graph(all_imports: list[Import], modules: dict[str, Module]) -> dict[str, list[Import]]:
    """Runtime edges: each import, plus the ``__init__`` of every package on the way."""
    graph: dict[str, list[Import]] = {name: [] for name in modules}
    for name in modules:  # importing a module first runs its package's __init__ (line 0: no import statement)
        parent = name.rpartition(".")[0]
        if parent in modules:
            graph[name].append(Import(name, parent, 0, (), False))
    for imp in all_imports:
        if imp.type_only:
            continue
        parts = imp.imported.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in modules or i == len(parts):
                graph[imp.importer].append(Import(imp.importer, prefix, imp.line, imp.names, False))
    return graph


def _check_executor(modules: dict[str, Module], graph: dict[str, list[Import]], package: str) -> list[Violation]:
    found = []
    for start in sorted(m for m in modules if _matches(m, package, EXECUTOR_SIDE)):
        # breadth-first: the shortest chain to each driver-side module
        came_from: dict[str, Import] = {}
        queue = deque([start])
        seen = {start}
        while queue:
            current = queue.popleft()
            for edge in graph.get(current, []):
                target = edge.imported
                if target in seen:
                    continue
                seen.add(target)
                came_from[target] = edge
                if _matches(target, package, DRIVER_SIDE) or _external(target, DRIVER_SIDE_EXTERNAL):
                    chain = [target]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]].importer)
                    chain.reverse()
                    first = came_from[chain[1]]
                    found.append(Violation("executor", start, target, first.line,
                                           "executor-side module reaches a driver-side one: "
                                           + " -> ".join(chain)))
                    continue  # do not walk through a driver-side module: its own imports are its business
                if target in modules:
                    queue.append(target)
    return found


def check_package(root: Path) -> list[Violation]:
    """All layering violations of the package in directory ``root``."""
    root = Path(root)
    package = root.name
    modules = load_package(root)
    all_imports = [imp for module in modules.values() for imp in imports_of(module, modules)]
    found: list[Violation] = []
    for imp in all_imports:
        for rule in (_check_layers, _check_spark, _check_store, _check_private):
            found.extend(rule(imp, package))
    for module in modules.values():
        found.extend(_check_transactions(module, package))
        found.extend(_check_private_attributes(module))
    found.extend(_cycles(modules, all_imports, package))
    found.extend(_check_executor(modules, _runtime_graph(all_imports, modules), package))
    return sorted(found, key=lambda v: (v.rule, v.importer, v.line, v.imported))
