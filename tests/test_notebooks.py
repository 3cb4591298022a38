"""Execute every derivation notebook in ``notebooks/`` (jupytext percent format).

Each ``notebooks/*.py`` file is converted with jupytext and executed cell by cell
in a fresh IPython kernel by nbclient, in a temporary working directory, so that
nothing is written into the repository and no outputs are kept.  The notebooks
assert their key results, so a wrong derivation fails here with the cell's
error.  A first injected cell turns every warning raised while the notebook's
cells run into an error (the kernel-side counterpart of pytest's
``filterwarnings = error``; warnings of the kernel machinery itself excepted);
a last injected cell restores the kernel's filters.

The list of notebooks is read from the folder, so a new notebook is picked up
without editing this file.
"""

from __future__ import annotations

import pathlib
import re

import jupytext
import nbclient
import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.py"))

#: Seconds one cell may run before the test fails (each notebook takes well under 60 s).
CELL_TIMEOUT = 120

# Warnings attributed to the kernel's own machinery (for example ipykernel's
# PendingDeprecationWarning while it shuts down) are not the notebook's: they stay ignored.
_KERNEL_MACHINERY = r"(ipykernel|IPython|jupyter_client|comm|traitlets|tornado|zmq)(\.|$)"
_STRICT_WARNINGS = (
    "import warnings as _nb_warnings\n"
    "_nb_warning_guard = _nb_warnings.catch_warnings()\n"
    "_nb_warning_guard.__enter__()\n"
    "_nb_warnings.simplefilter('error')\n"
    f"_nb_warnings.filterwarnings('ignore', module={_KERNEL_MACHINERY!r})"
)
_RESTORE_WARNINGS = "_nb_warning_guard.__exit__(None, None, None)"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes in IPython tracebacks


class NotebookCellError(AssertionError):
    """A cell of a notebook raised; the message carries the cell's source and traceback."""


def execute_notebook(path: pathlib.Path, workdir: pathlib.Path) -> nbformat.NotebookNode:
    """Run the percent-format notebook ``path`` with ``workdir`` as its working directory.

    Returns the executed notebook (outputs in memory only).  Raises
    :class:`NotebookCellError` with the failing cell's source and error.
    """
    nb = jupytext.read(path)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_STRICT_WARNINGS))
    nb.cells.append(nbformat.v4.new_code_cell(_RESTORE_WARNINGS))
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    try:
        client.execute()
    except CellExecutionError as err:
        message = _ANSI.sub("", str(err))
        raise NotebookCellError(f"{path.name}: a cell failed\n{message}") from None
    return nb


def test_the_folder_holds_the_derivations():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) >= 4, names
    for path in NOTEBOOKS:
        text = path.read_text(encoding="utf-8")
        assert "# %%" in text, f"{path.name} is not in jupytext percent format"
        assert "format_name: percent" in text, f"{path.name} lacks its jupytext header"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    before = sorted(p.name for p in NOTEBOOK_DIR.iterdir())
    nb = execute_notebook(path, tmp_path)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells and all(c.get("execution_count") for c in code_cells)
    # Nothing written next to the notebooks or into the working directory.
    assert sorted(p.name for p in NOTEBOOK_DIR.iterdir()) == before
    assert not any(tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\nassert x == 2, 'deliberately wrong derivation'", "deliberately wrong derivation"),
        ("import warnings\nwarnings.warn('deliberate warning', UserWarning)", "deliberate warning"),
    ],
    ids=["assertion", "warning"],
)
def test_a_failing_cell_fails_with_its_error(source, expected, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(f"# %% [markdown]\n# A broken notebook.\n\n# %%\n{source}\n", encoding="utf-8")
    workdir = tmp_path / "run"
    workdir.mkdir()
    with pytest.raises(NotebookCellError, match=expected) as info:
        execute_notebook(path, workdir)
    assert source.splitlines()[-1] in str(info.value)  # the failing cell's source is shown
