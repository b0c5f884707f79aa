"""Facts about the code anyone can check: no import cycle between modules, imports only in the house's direction,
every error of the one tree mapped by every front door, DataHub's SDK only behind controlplane/datahub/, a guard
that reads no file (from profiles only its value types), checks that stand alone, and a small controlplane root."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tables", "profiles", "guard", "remediations", "training", "controlplane", "chaos", "mcp_server", "demo")
# who may import whom (DESIGN.md): profiles <- guard <- remediations <- controlplane <- (chaos, mcp_server, demo);
# tables <- (profiles, remediations, controlplane); training <- controlplane
ALLOWED = {
    "tables": {"tables"},
    "profiles": {"profiles", "tables"},
    "guard": {"guard", "profiles"},
    "remediations": {"remediations", "guard", "profiles", "tables"},
    "training": {"training"},
    "controlplane": {"controlplane", "guard", "profiles", "tables", "remediations", "training"},
    "chaos": {"chaos", "controlplane", "guard", "profiles", "tables", "remediations", "training", "demo"},
    "demo": {"demo", "controlplane", "guard", "profiles", "tables", "remediations", "training"},
    "mcp_server": {"mcp_server", "controlplane", "chaos", "guard", "profiles", "tables", "remediations", "training"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules `path` imports, anywhere in the file (a lazy import inside a function counts too)."""
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                targets.add(name)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        edges = _imports(path, modules) - {name}
        if path.name == "__init__.py":  # a package importing its own submodules is how it registers them
            graph[name] = edges
        else:
            graph[name] = {e for e in edges if not (name.startswith(e + ".") and modules[e].name == "__init__.py")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_modules():
    assert _cycles(_graph()) == []


def test_a_cycle_would_be_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_follow_the_house_direction():
    wrong = sorted(
        f"{source} imports {target}"
        for source, targets in _graph().items()
        for target in targets
        if target.split(".")[0] not in ALLOWED[source.split(".")[0]]
    )
    assert wrong == []


def test_controlplane_imports_none_of_chaos_demo_or_the_mcp_server():
    reached = {t.split(".")[0] for s, ts in _graph().items() if s.startswith("controlplane") for t in ts}
    assert not reached & {"chaos", "demo", "mcp_server"}


def _error_classes() -> list[type]:
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    from controlplane.errors import KintsugiError

    seen, queue = [], [KintsugiError]
    while queue:
        cls = queue.pop()
        seen.append(cls)
        queue.extend(c for c in cls.__subclasses__() if c not in seen)
    return seen


@pytest.mark.parametrize("front_door", ["cli", "http", "mcp"])
def test_every_error_class_is_mapped_by_every_front_door(front_door):
    from controlplane.api.errors import STATUS, status_of
    from controlplane.cli.errors import exit_code_of
    from mcp_server.server import error_result

    classes = _error_classes()
    assert len(classes) > 20
    for cls in classes:
        error = cls.__new__(cls)
        error.message, error.fix = "what was wrong", "what to do"
        if front_door == "cli":
            assert exit_code_of(error) == 2, cls
        elif front_door == "http":
            if cls.__name__ == "KintsugiError":
                continue  # the base itself is never raised bare... and maps to 500 if it were
            assert any(issubclass(cls, kind) for kind, _ in STATUS), f"{cls.__module__}.{cls.__name__} has no row"
            assert status_of(error) in (401, 403, 404, 409, 413, 422, 500, 503)
        else:
            result = error_result(error)
            assert result.is_error and result.structured_content["error"]["code"] == cls.code, cls


def _imported_names(path: Path) -> set[str]:
    """Every module name `path` imports (ours or not), anywhere in the file; `from a import b` counts a and a.b."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _datahub_sdk_importers() -> list[str]:
    return sorted(
        name
        for name, path in _modules().items()
        if not _within(name, "controlplane.datahub")
        and any(_within(n, sdk) for n in _imported_names(path) for sdk in ("datahub", "datahub_actions"))
    )


def test_only_controlplane_datahub_imports_the_datahub_sdk():
    """Only controlplane/datahub/ talks to DataHub: every other room reads and writes through its record modules."""
    assert _datahub_sdk_importers() == []


def test_the_sdk_detector_sees_an_import_anywhere_in_a_file(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from datahub.metadata import schema_classes as s\n    return s\n")
    assert any(_within(n, "datahub") for n in _imported_names(module))


# guard/ reads only what it is handed: from profiles only its value types; nothing that reads a table or a file
PROFILES_VALUE_TYPES = (
    "profiles.profile",
    "profiles.sketches",
    "profiles.reference",
    "profiles.relations",
    "profiles.calendar",
    "profiles.cores",
    "profiles.snapshot_types",
    "profiles.repeats_types",
)
IO_MODULES = ("tables", "pyarrow.dataset", "pyarrow.parquet", "pyspark")
IO_CALLS = ("open", "read_text", "read_bytes", "write_text", "write_bytes")


def _io_of(path: Path) -> list[str]:
    """What in `path` touches a file or a table: I/O imports, profiles' readers and engines, open()/read_text()."""
    found = set()
    for name in _imported_names(path):
        if any(_within(name, io) for io in IO_MODULES):
            found.add(f"imports {name}")
        elif (
            _within(name, "profiles") and name != "profiles" and not any(_within(name, v) for v in PROFILES_VALUE_TYPES)
        ):
            found.add(f"imports {name}")
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called in IO_CALLS:
                found.add(f"calls {called}()")
    return sorted(found)


def _guard_io() -> dict[str, list[str]]:
    return {name: io for name, path in sorted(_modules().items()) if _within(name, "guard") and (io := _io_of(path))}


def test_the_io_detector_sees_a_reader(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import pyarrow.parquet as pq\nfrom profiles.snapshot import read_snapshot\nopen('x')\n")
    assert _io_of(module) == [
        "calls open()",
        "imports profiles.snapshot",
        "imports profiles.snapshot.read_snapshot",
        "imports pyarrow.parquet",
    ]


def test_guard_imports_no_io():
    assert _guard_io() == {}


# each check stands alone: what one finding says of another is settled by guard.causes. A check is a module of
# guard/checks, or a package there whose modules hold its mechanisms (they import one another, never another check)


def _check_of(module: str) -> str:
    return ".".join(module.split(".")[:3])


def _checks_importing_checks() -> list[str]:
    return sorted(
        source
        for source, targets in _graph().items()
        if _within(source, "guard.checks") and source != "guard.checks"
        for target in targets
        if _within(target, "guard.checks") and _check_of(target) != _check_of(source)
    )


def test_no_check_imports_another_check():
    assert _checks_importing_checks() == []


# the control plane's rooms, lowest first: a room imports only rooms before it (its own modules aside). The words and
# the errors; the passport's signing; the DataHub door; what a team writes (YAML, ODCS); the pipeline spec; a run's
# record and its context; the models (MLflow, the gate, governance, trust); the loop's stages; taking writes back;
# the champion's moves; onboarding; the loop's story; the watch; the front door's services; then its doors.
ROOMS = (
    "vocab",
    "errors",
    "signing",
    "workspace",
    "datahub",
    "documents",
    "spec",
    "runs",
    "models",
    "stages",
    "takeback",
    "champion",
    "onboard",
    "pipeline",
    "watch",
    "frontdoor",
    "api",
    "cli",
    "__main__",
)


def _room(module: str) -> str | None:
    """The control plane room a module sits in: its folder under controlplane/, or its own name at the root."""
    parts = module.split(".")
    return parts[1] if parts[0] == "controlplane" and len(parts) > 1 else None


def _against_the_rooms(graph: dict[str, set[str]]) -> list[str]:
    """Imports inside controlplane/ from a room to one after it in ROOMS (or to or from a room not placed in it)."""
    place = {room: index for index, room in enumerate(ROOMS)}
    wrong = []
    for source, targets in graph.items():
        for target in targets:
            rooms = _room(source), _room(target)
            if None in rooms or rooms[0] == rooms[1]:
                continue
            if any(r not in place for r in rooms) or place[rooms[0]] < place[rooms[1]]:  # type: ignore[index]
                wrong.append(f"{source} imports {target}")
    return sorted(wrong)


def test_the_control_planes_rooms_import_in_their_declared_order():
    assert _against_the_rooms(_graph()) == []


def test_an_import_against_the_rooms_would_be_found():
    graph = {
        "controlplane.runs.journal": {"controlplane.stages.pin"},
        "controlplane.stages.pin": {"controlplane.errors"},
    }
    assert _against_the_rooms(graph) == ["controlplane.runs.journal imports controlplane.stages.pin"]
    assert _against_the_rooms({"controlplane.newroom.x": {"controlplane.errors"}}) == [
        "controlplane.newroom.x imports controlplane.errors"  # a room must be placed before it is used
    ]


def test_controlplane_root_holds_the_story_and_the_words_only():
    root = sorted(p.name for p in (ROOT / "controlplane").glob("*.py"))
    assert len(root) <= 8, root


def test_only_the_story_ends_a_run():
    """The loop's stages return their result or `Blocked`; `controlplane.pipeline` alone calls `finish`."""
    calls = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "controlplane" / "stages").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finish"
    )
    assert calls == []


def report() -> list[str]:
    """The house in figures, as `make architecture` prints them: each line one of the facts above."""
    graph = _graph()
    wrong = [(s, t) for s, ts in graph.items() for t in ts if t.split(".")[0] not in ALLOWED[s.split(".")[0]]]
    root = sorted(p.name for p in (ROOT / "controlplane").glob("*.py"))
    return [
        f"modules {len(graph)}, imports between them {sum(len(t) for t in graph.values())}",
        f"import cycles: {len(_cycles(graph))}",
        f"imports against the house's direction: {len(wrong)}",
        f"control plane rooms, lowest first: {' < '.join(ROOMS)}",
        f"imports against the rooms' order: {len(_against_the_rooms(graph))}",
        f"modules outside controlplane/datahub importing datahub.*: {len(_datahub_sdk_importers())}",
        f"guard modules touching a file or a table: {len(_guard_io())}",
        f"guard checks importing another check: {len(_checks_importing_checks())}",
        f"controlplane root modules: {len(root)} (at most 8): {', '.join(root)}",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
