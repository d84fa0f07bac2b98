"""Unit tests of the import graphs of tools/mlfcluster and tools/mlffault, read from the source
with ast: every import sits at the top of its module (none inside a function, class or
statement, where it would hide a circle), and the graph of each package's modules has no circle;
mlffault uses mlfcluster and mlfcluster imports nothing of mlffault (no circle between the two);
a planted circle and a planted function-level import in a copy of mlfcluster are found."""
import ast
import os
import shutil
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "tools", "mlfcluster")
NAME = "mlfcluster"
FAULT = os.path.join(HERE, "..", "..", "tools", "mlffault")


def module_imports(path, modules, name=NAME):
    """(the modules of the package NAME the file PATH imports, [misplaced imports as "FILE:LINE:
    ..."]). MODULES: the names of the package's modules; imports of anything else are not edges."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    top = {id(n) for n in tree.body}
    deps, misplaced = set(), []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if id(node) not in top:
            misplaced.append("%s:%d: import below the module's top level" % (os.path.basename(path), node.lineno))
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == name and len(parts) > 1 and parts[1] in modules:
                    deps.add(parts[1])
            continue
        if node.level == 0 and (node.module or "").split(".")[0] != name:
            continue  # the standard library or another package
        if node.level > 1:
            misplaced.append("%s:%d: import from outside the package" % (os.path.basename(path), node.lineno))
            continue
        mod = (node.module or "").split(".")
        mod = mod[1:] if node.level == 0 else mod
        if mod and mod[0]:
            if mod[0] in modules:
                deps.add(mod[0])
        else:  # from . import a, b
            deps.update(a.name for a in node.names if a.name in modules)
    return deps, misplaced


def packages_imported(path):
    """The top-level names the file PATH imports by absolute import (e.g. "os", "mlfcluster")."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add((node.module or "").split(".")[0])
    return out


def package_graph(pkgdir, name=NAME):
    """({module: set of package modules it imports}, [misplaced imports]) of the package NAME in
    the folder PKGDIR."""
    files = sorted(f for f in os.listdir(pkgdir) if f.endswith(".py"))
    modules = {f[:-3] for f in files}
    graph, misplaced = {}, []
    for f in files:
        deps, bad = module_imports(os.path.join(pkgdir, f), modules, name)
        graph[f[:-3]] = deps - {f[:-3]}
        misplaced += bad
    return graph, misplaced


def find_circle(graph):
    """A circle of GRAPH as [a, b, ..., a], or None when the graph is a DAG."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


class ImportGraph(unittest.TestCase):
    def test_package_is_a_dag_with_top_level_imports(self):
        graph, misplaced = package_graph(PACKAGE)
        self.assertIn("records", graph)
        self.assertEqual(misplaced, [])
        self.assertIsNone(find_circle(graph), "import circle: %s" % " -> ".join(find_circle(graph) or []))

    def test_edges(self):
        graph, _ = package_graph(PACKAGE)
        self.assertIn("records", graph["results"])   # from .records import ...
        self.assertIn("links", graph["results"])
        self.assertIn("results", graph["cli"])       # from . import ..., results, ...
        self.assertEqual(graph["records"], set())


class FaultImportGraph(unittest.TestCase):
    def test_package_is_a_dag_with_top_level_imports(self):
        graph, misplaced = package_graph(FAULT, "mlffault")
        self.assertEqual(misplaced, [])
        self.assertIsNone(find_circle(graph), "import circle: %s" % " -> ".join(find_circle(graph) or []))
        self.assertIn("checks", graph["cli"])
        self.assertIn("soak", graph["cli"])
        self.assertIn("checks", graph["soak"])
        self.assertEqual(graph["checks"], set())

    def test_mlffault_uses_mlfcluster_never_the_reverse(self):
        self.assertIn("mlfcluster", packages_imported(os.path.join(FAULT, "checks.py")))
        for f in sorted(os.listdir(PACKAGE)):
            if f.endswith(".py"):
                self.assertNotIn("mlffault", packages_imported(os.path.join(PACKAGE, f)),
                                 "mlfcluster/%s imports mlffault" % f)


class Planted(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.pkg = os.path.join(self.dir, NAME)
        shutil.copytree(PACKAGE, self.pkg, ignore=shutil.ignore_patterns("__pycache__"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def append(self, module, text):
        with open(os.path.join(self.pkg, module + ".py"), "a", encoding="utf-8") as f:
            f.write(text)

    def test_circle_found(self):
        self.append("records", "\nfrom .results import summary  # noqa: E402\n")
        graph, misplaced = package_graph(self.pkg)
        self.assertEqual(misplaced, [])
        c = find_circle(graph)
        self.assertIsNotNone(c)
        self.assertEqual(c[0], c[-1])
        self.assertIn("records", c)
        self.assertIn("results", c)

    def test_absolute_circle_found(self):
        self.append("records", "\nimport mlfcluster.links  # noqa: E402\n")
        self.assertIsNotNone(find_circle(package_graph(self.pkg)[0]))

    def test_function_import_found(self):
        self.append("records", "\n\ndef late():\n    from . import results\n    return results\n")
        graph, misplaced = package_graph(self.pkg)
        self.assertEqual(len(misplaced), 1)
        self.assertRegex(misplaced[0], r"^records\.py:\d+: import below the module's top level$")


if __name__ == "__main__":
    unittest.main()
