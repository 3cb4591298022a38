"""The ``torch``/``model`` markers are derived correctly (tests/_markers.py)."""

import sys
import textwrap

import pytest

from tests import _markers

ROOT = _markers.ROOT


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("spectheory/torch/chain.py", {"torch"}),
        # no torch import of its own: its package's __init__ imports torch
        ("spectheory/torch/_backend.py", {"torch"}),
        ("spectheory/solvers/ot_dual.py", set()),
        ("spectheory/__init__.py", set()),
        ("spectheory/lm/trace.py", set()),  # imports torch lazily, inside functions
    ],
)
def test_module_markers_follow_the_import_graph(path, expected):
    assert _markers.module_markers(ROOT / path) == frozenset(expected)


def test_function_markers_from_body_and_fixtures(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "heavy.py").write_text("import transformers\n")
    (pkg / "test_mod.py").write_text(
        textwrap.dedent(
            """
            import numpy as np

            def test_core():
                assert np.ones(1)[0] == 1

            def test_lazy_torch():
                import torch

            def test_real(smol):
                pass

            def test_loads():
                from spectheory.lm import load_model
                load_model()

            def test_through_heavy():
                from . import heavy

            def _tiny_model():
                from transformers import GPT2Config

            def fixture_via_helper():
                return _tiny_model()

            def test_via_fixture_helper():
                fixture_via_helper()

            def test_patches_the_loader(monkeypatch):
                monkeypatch.setattr(object, "load_model", None)
            """
        )
    )
    monkeypatch.setattr(_markers, "ROOT", tmp_path)
    path = pkg / "test_mod.py"
    assert _markers.module_markers(path) == frozenset()
    got = _markers.function_markers(path)
    both = frozenset({"torch", "model"})
    assert got == {
        "test_lazy_torch": frozenset({"torch"}),
        "test_real": both,
        "test_loads": both,
        "test_through_heavy": both,
        # a helper's imports reach its callers (tests/lm/test_draft_kinds.py's gpt2 fixture)
        "_tiny_model": both,
        "fixture_via_helper": both,
        "test_via_fixture_helper": both,
        "test_patches_the_loader": both,  # the patched path still fingerprints the model file
    }


def test_doctest_markers():
    assert _markers.doctest_markers(">>> import torch\n") == {"torch"}
    assert _markers.doctest_markers(">>> m = load_model()\n") == {"torch", "model"}
    assert _markers.doctest_markers(">>> import numpy as np\n") == frozenset()


@pytest.mark.parametrize(
    ("markexpr", "off"),
    [
        ("", set()),
        ("not model", {"model"}),
        ("not torch", {"torch", "model"}),
        ("not model and not torch", {"torch", "model"}),
        ("model", set()),  # model tests need torch too
        ("torch and not model", {"model"}),
        ("slow", set()),  # a slow test may need either
        ("not slow and not model", {"model"}),
    ],
)
def test_deselected(markexpr, off):
    assert _markers.deselected(markexpr) == off


def test_guard_refuses_deselected_libraries():
    guard = _markers.ImportGuard({"torch"})
    with pytest.raises(ModuleNotFoundError, match="'torch' marker"):
        guard.find_spec("torch.nn")
    with pytest.raises(ModuleNotFoundError, match="'torch' marker"):
        guard.find_spec("triton")
    assert guard.find_spec("numpy") is None
    assert guard.find_spec("transformers") is None
    assert guard not in sys.meta_path
