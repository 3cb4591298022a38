"""spectheory.experiments: the layering rule (no library package imports a study) and the settings.

The studies' real-model runs are in test_cli_experiment.py (through the command line, their
one entry point) and test_draft_scaling.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from spectheory import InvalidParameterError

ROOT = Path(__file__).resolve().parents[2]
#: The library packages: layers below the studies, which must not import them.
LIBRARY = ("lm", "sim", "trees", "solvers", "verifiers", "exact", "torch", "live")
EXPERIMENTS = "spectheory.experiments"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute name of ``from X import ...`` (relative levels resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def _hits(name: str) -> bool:
    return name == EXPERIMENTS or name.startswith(EXPERIMENTS + ".")


def experiment_imports(source: str, module: str, is_package: bool = False) -> list[tuple]:
    """``(line, name)`` of every import of ``spectheory.experiments`` in ``source``.

    Every import statement counts, at the top or inside a function (a lazy import is still a
    dependency): ``import spectheory.experiments.x``, ``from spectheory.experiments import x``,
    ``from spectheory import experiments``, their relative forms, and
    ``importlib.import_module("spectheory.experiments...")`` with a literal name.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if _hits(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
            out += [(node.lineno, n) for n in names if _hits(n)][:1]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = node.args[:1]
            if called in ("import_module", "__import__") and args:
                arg = args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out += [(node.lineno, arg.value)] if _hits(arg.value) else []
    return out


def _library_files():
    return sorted(p for pkg in LIBRARY for p in (ROOT / "spectheory" / pkg).rglob("*.py"))


def test_the_library_packages_exist_and_are_scanned():
    files = _library_files()
    scanned = {p.relative_to(ROOT / "spectheory").parts[0] for p in files}
    assert scanned == set(LIBRARY)
    assert len(files) > 50


def test_no_library_package_imports_an_experiment():
    offenders = []
    for path in _library_files():
        found = experiment_imports(path.read_text(encoding="utf-8"), _module(path),
                                   path.name == "__init__.py")  # fmt: skip
        offenders += [f"{path.relative_to(ROOT)}:{line} imports {name}" for line, name in found]
    assert not offenders, "library packages must not import experiments:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "planted",
    [
        "from ..experiments import trees\n",
        "from ..experiments.trees import TreesSettings\n",
        "from .. import experiments\n",
        "import spectheory.experiments.draft_length as D\n",
        "from spectheory.experiments import draft_scaling\n",
        "from spectheory import experiments\n",
        "def f():\n    from ...experiments import trees\n",  # lazy, from a subpackage
        "import importlib\nimportlib.import_module('spectheory.experiments.trees')\n",
    ],
)
def test_the_checker_finds_a_planted_import(planted):
    # planted in spectheory/lm/planted.py, or spectheory/lm/sub/planted.py for the 3-dot form
    module = "spectheory.lm.sub.planted" if "..." in planted else "spectheory.lm.planted"
    found = experiment_imports("import numpy as np\n" + planted, module)
    assert len(found) == 1 and _hits(found[0][1])
    assert found[0][0] >= 2  # the planted line, not the innocent first one


def test_the_checker_lets_library_imports_through():
    source = (
        "from .. import exact\nfrom ..sim import experiments_like\nimport spectheory.lm\n"
        "from . import report\nimport importlib\nimportlib.import_module('spectheory.sim')\n"
    )
    assert experiment_imports(source, "spectheory.lm.planted") == []


def test_the_checker_fails_on_a_planted_file(tmp_path, monkeypatch):
    # the whole scan, not only the helper: a library file with an experiment import fails it
    pkg = tmp_path / "spectheory"
    for name in LIBRARY:
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "trees" / "lm.py").write_text("def f():\n    from ..experiments import trees\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    with pytest.raises(AssertionError, match=r"spectheory/trees/lm.py:2 imports"):
        test_no_library_package_imports_an_experiment()


# --------------------------------------------------------------------------- settings


def test_trees_settings_refuse_bad_values_by_name():
    from spectheory.experiments.trees import EAGLE_SHAPES, TreesSettings

    assert TreesSettings().budgets == tuple(EAGLE_SHAPES)
    quick = TreesSettings.quick(trials=7)
    assert (quick.prompts, quick.budgets, quick.trees, quick.ref_trials, quick.trials) == (
        2, (8,), 2, 40, 7,
    )  # fmt: skip
    for bad, match in [
        ({"budgets": (12,)}, "budgets must be among"),
        ({"budgets": ()}, "budgets must be among"),
        ({"trees": 0}, "trees"),
        ({"offset": -1}, "offset must be an integer >= 0; got -1"),
        ({"temperature": float("inf")}, "temperature"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            TreesSettings(**bad)


def test_draft_length_settings_refuse_bad_values_by_name():
    from spectheory.experiments.draft_length import DraftLengthSettings

    assert DraftLengthSettings().capacity_layers == tuple(range(1, 30))
    assert DraftLengthSettings(capacity_layers=()).capacity_layers == ()
    for bad, match in [
        ({"capacity_layers": (2, 3)}, r"capacity_layers must hold at least 3 layers .* \(2, 3\)"),
        ({"holdout": 1.0}, r"holdout must be in \(0, 1\); got 1.0"),
        ({"costs": (0.1, 0.0)}, "costs must be finite numbers > 0"),
        ({"layer": 0}, "layer"),
        ({"weight": -1.0}, "weight must be a finite number >= 0; got -1.0"),
        ({"seed": -2}, "seed must be an integer >= 0; got -2"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            DraftLengthSettings(**bad)


def test_importing_a_study_loads_no_kernel_or_model_library():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import spectheory.experiments.draft_scaling, spectheory.experiments.draft_length\n"
        "import spectheory.experiments.trees\n"
        "print(sorted(m for m in ('numba', 'scipy', 'torch', 'transformers') if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_trees_intervals_match_the_textbook_formulas():
    # oracle: Student's t for one mean, Welch-Satterthwaite for two, written out here
    from scipy import stats

    from spectheory.experiments.trees import _ci, _diff_ci

    rng = np.random.default_rng(5)
    a, b = rng.normal(2.0, 1.0, 9), rng.normal(1.5, 2.0, 6)
    m, lo, hi = _ci(a)
    half = stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size)
    np.testing.assert_allclose([m, lo, hi], [a.mean(), a.mean() - half, a.mean() + half],
                               rtol=1e-12)  # fmt: skip
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = stats.t.ppf(0.975, dof) * np.sqrt(va + vb)
    d = a.mean() - b.mean()
    np.testing.assert_allclose(_diff_ci(a, b, False), [d, d - half, d + half], rtol=1e-10)
    np.testing.assert_allclose(_diff_ci(a[:6], b, True), _ci(a[:6] - b), rtol=1e-12)
    assert _diff_ci([1.0, 1.0], [2.0, 2.0, 2.0], False) == (-1.0, -1.0, -1.0)
    assert np.isnan(_diff_ci([1.0], [2.0, 3.0], False)[1])


def test_trees_tau_intervals_stay_within_the_range_of_tau():
    # Few trees with a large spread: the 95% t-interval of tau reached below 1 (e.g.
    # "chain traversal trees 4 tau 2.162 CI [-0.229, 4.554]") and beyond D + 1, although
    # every block holds the bonus or correction token and at most D drafts.
    from spectheory.experiments.trees import _tau_rows, summary_lines
    from spectheory.sim._stats import mean_interval

    means = {(8, "chain", "token"): [1.0, 1.2, 8.8], (8, "spectr", "rrs"): [1.0, 5.0]}
    raw = [mean_interval(m) for m in means.values()]
    assert all(lo < 1 for _, lo, _ in raw) and raw[1][2] > 5  # the plain t-intervals leave it
    rows = _tau_rows(means, {(8, "chain", "token"): 9, (8, "spectr", "rrs"): 5})
    for r, (m, lo, hi) in zip(rows, raw, strict=True):
        assert r["tau"] == m and 1 <= r["ci_low"] <= r["tau"] <= r["ci_high"] <= r["tau_max"]
        assert (r["ci_low"], r["ci_high"]) == (max(lo, 1.0), min(hi, r["tau_max"]))
    assert rows[0]["ci_low"] == 1.0 and rows[1]["ci_high"] == 5.0
    # one tree: no interval, as before
    (one,) = _tau_rows({(8, "eagle", "nss"): [2.5]}, {(8, "eagle", "nss"): 5})
    assert one["tau"] == 2.5 and np.isnan(one["ci_low"]) and np.isnan(one["ci_high"])
    text = "\n".join(summary_lines(rows, []))
    assert "tau [95% CI within 1..tau_max]" in text and "bonus or correction token" in text
    assert "     8     chain     token     3       9  3.667 [1.000, 9.000]" in text


def test_trees_stated_depth_bounds_every_drawn_tree():
    # tau_max = D + 1 is only a bound if no drafter draws a tree deeper than its D.
    from spectheory.coins import RandomCoins
    from spectheory.experiments.trees import EAGLE_SHAPES, _drafters

    def draft(prefix):
        return np.full(6, 1 / 6)

    coins = RandomCoins(np.random.default_rng(0))
    for budget in EAGLE_SHAPES:
        sequoia = (-1, 0, 0, 1, 3)
        for name, (drafter, _, depth) in _drafters(budget, sequoia).items():
            depths = {drafter(draft, coins=coins).depth for _ in range(3)}
            assert depths == {depth}, (budget, name, depths, depth)


def test_private_statistics_refuse_unequal_lengths():
    # Both gave a numpy broadcast error (or a silent broadcast) on mismatched input.
    from spectheory.experiments.draft_scaling import _slope
    from spectheory.experiments.trees import _diff_ci

    with pytest.raises(ValueError, match=r"x's length \(3,\).*\(2,\)"):
        _slope([1, 10, 100], [0.1, 0.2])
    assert _slope([1, 10, 100], [0.1, 0.2, 0.3]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="paired samples must have equal shapes"):
        _diff_ci([1.0, 2.0, 3.0], [1.0, 2.0], paired=True)
