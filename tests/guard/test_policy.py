"""Policy as data: every threshold of the guard is a field of `guard.policy.Policy`, each with its provenance.

A new threshold defined as a module constant anywhere else under guard/ fails here: put it in the policy,
with a line saying what it was measured on. Only known implementation constants (seeds, sizes, rounding,
conversion factors, the sampling error of a statistic) may stay where they are used.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from guard.policy import DEFAULT, Policy

GUARD = Path(__file__).resolve().parents[2] / "guard"

# module -> names of module-level numeric constants that are implementation, not policy
IMPLEMENTATION = {
    "variation.py": {
        "_MEDIAN_SE",  # SE of a median, normal case: mathematics
        "_LOG_IQR_SE",  # SE of log(IQR), normal case: mathematics
        "_SKETCH_LOCATION",  # the KLL sketches' rank error, in IQR units
        "_SKETCH_LOG_SPREAD",  # the sketches' rank error on an IQR
        "_SKETCH_SHARE",  # the sketches' PMF error
        "_SHAPE_SE",  # rough SE of the shape ratios
        "_RESCALE_GRID",  # factors tried per pass of the plain-rescale search
    },
    "units.py": {"_DIGITS"},  # rounding of conversions
    "checks/units/fits.py": {"_FIT_QUANTILES", "_ALL_QUANTILES"},  # which quantiles a fit reads
    "checks/lineage.py": {"_HOUR_MS"},
    "checks/freshness.py": {"_HOUR_MS", "_YEAR_MS"},
    "checks/timeshift/evidence.py": {
        "_HOUR_MS",
        "MAX_WEIGHT",
        "_LAG_QUANTILES",
    },  # hours of a day; a cap on a score's weight
    "statistics.py": {"HOURS", "_SEED", "MAX_BINS"},  # hours of a day; shuffle seed; mapping score's binning
    "checks/swaps/values.py": {"SUMS_REL_TOL"},  # float rounding of sums added in another order
    "runner.py": {"MAX_FINDINGS_PER_KIND", "GROUP_LISTED"},  # how findings are reported, not judged
    "checks/domain.py": {"MAX_LISTED_VALUES"},  # values listed in a message
}


def _is_number(node: ast.expr) -> bool:
    """A numeric literal, a tuple of them, or arithmetic over them (and names): what a threshold looks like."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) or _is_number(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_is_number(e) for e in node.elts)
    return False


def module_constants(source: str) -> set[str]:
    """Names of the module-level numeric constants a source defines."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _is_number(value):
            found |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return found


def test_every_field_has_a_comment_line_above_it() -> None:
    source = (GUARD / "policy.py").read_text()
    lines = source.splitlines()
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Policy")
    annotated = {
        n.target.id: n.lineno for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    assert set(annotated) == {f.name for f in dataclasses.fields(Policy)}
    bare = [name for name, line in annotated.items() if not lines[line - 2].strip().startswith("#")]
    assert not bare, f"policy fields without a provenance comment above them: {bare}"
    assert "provenance" in source


def test_the_default_policy_is_the_policy_as_it_ships() -> None:
    assert Policy() == DEFAULT
    assert all(f.default is not dataclasses.MISSING for f in dataclasses.fields(Policy))


def test_no_threshold_lives_outside_the_policy() -> None:
    stray = {}
    for path in sorted(GUARD.rglob("*.py")):
        name = path.relative_to(GUARD).as_posix()
        if name == "policy.py":
            continue
        extra = module_constants(path.read_text()) - IMPLEMENTATION.get(name, set())
        if extra:
            stray[name] = sorted(extra)
    assert not stray, f"thresholds outside guard/policy.py (move them there, with their provenance): {stray}"


def test_the_scan_sees_a_threshold() -> None:
    assert module_constants("NEW_LIMIT = 0.3  # a threshold\n_PRIVATE = (1, 2.5)\nNAMES = ('a',)\n") == {
        "NEW_LIMIT",
        "_PRIVATE",
    }
