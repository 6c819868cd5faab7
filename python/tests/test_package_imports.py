"""The df11 package's modules import one another in one direction: no module imports another
that imports it back, directly or through others, counting imports made inside functions too
(a deferred import is still a dependency)."""
import ast
import os

import df11

PACKAGE = os.path.dirname(df11.__file__)


def _local_imports(path, modules):
    """The package's modules that the module at `path` imports (`from . import x`,
    `from .x import y`, `from df11.x import y`, `import df11.x`), anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:
                found.update(a.name for a in node.names if a.name in modules)
            elif node.level == 1:
                found.add(node.module.split(".")[0])
            elif node.level == 0 and (node.module or "").startswith("df11."):
                found.add(node.module.split(".")[1])
            elif node.level == 0 and node.module == "df11":
                found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("df11."):
                    found.add(a.name.split(".")[1])
    return found & modules


def _graph():
    modules = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py")}
    return {m: _local_imports(os.path.join(PACKAGE, m + ".py"), modules) - {m}
            for m in modules}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n, path + [n])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_packages_modules_import_in_one_direction():
    graph = _graph()
    assert "engine" in graph and "coded" in graph["vllm_plugin"]
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
