"""Every benchmark script imports: a renamed or removed private name breaks it at once.

The benchmarks run by hand, never in the suite, so nothing else would notice
(``bench_embedded.py`` once imported a cache of ``spectheory.verifiers.optimal``
that had been replaced).  Importing runs no benchmark: each one works under
``if __name__ == "__main__"``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_the_benchmarks_folder_is_found():
    assert len(BENCHMARKS) >= 10


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_imports_and_has_a_main(path):
    source = path.read_text()
    if "import torch" in source or "spectheory.torch" in source:
        pytest.importorskip("torch")  # an install without the torch extra
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
