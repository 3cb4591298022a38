"""Every documentation reference resolves inside the repository.

Code, notebooks, READMEs and docs cite the theory as ``docs/theory.md §x.y`` (optionally
followed by ``(a)`` for a lettered part, and by further ``§x.y`` in the same list) and the
architecture as ``docs/design.md, "Section"``.  These tests check that each such reference names
an existing heading, that Markdown links point at existing files, and that nothing points outside
the repository.  The checks run on the working tree (tracked and untracked, not ignored files).
"""

import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".txt", ".yml", ".yaml", ".cfg", ".rst"}

_NUM = r"\d+(?:\.\d+)*(?:\([a-z]\))?"
# "docs/theory.md §1.5(a)", "docs/theory.md's §2.3", "(docs/theory.md\n    # §5.4", "docs/theory.md
# 2.5", "docs/theory.md section 0", then "§3.3 and §8.1" chained after it.
THEORY_REF = re.compile(
    r"docs/theory\.md(?:'s)?[\s#*,(]*(?:§|section\b)?\s*(?P<first>" + _NUM + r")"
    r"(?P<rest>(?:\s*(?:,|;|/|and|or)?\s*§\s*" + _NUM + r")*)"
)
SECTION_SIGN = re.compile(r"§\s*(" + _NUM + r")")
DESIGN_REF = re.compile(r"docs/design\.md,?[\s#*]*\"(?P<title>[^\"]+)\"")
MD_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
# Pointers outside the repository: the shared background notes and their old citation forms.
FORBIDDEN = [
    re.compile(r"\.\./shared\b"),
    re.compile(r"/work/shared\b"),
    re.compile(r"\b" + "THEORY" + r"\.md\b"),
    re.compile(r"\b" + "DESIGN" + r"\.md\b"),
    re.compile(r"\b" + "THEORY" + r"(?:\.md)?,?\s+(?:§\s*)?\d"),
]


def _repository_files():
    """Tracked and untracked (not ignored) text files of the working tree."""
    git = shutil.which("git")
    if git is not None and (ROOT / ".git").exists():
        out = subprocess.run(
            [git, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout.decode()
        paths = [ROOT / p for p in out.split("\0") if p]
    else:  # a source tree without git: walk it, skipping the usual ignored folders
        skip = {".git", ".venv", "site", "build", "dist", "__pycache__", ".hypothesis"}
        paths = [p for p in ROOT.rglob("*") if not skip.intersection(p.relative_to(ROOT).parts)]
    return sorted(p for p in paths if p.suffix in SUFFIXES and p.is_file())


@cache
def _texts():
    self = Path(__file__).resolve()
    return {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in _repository_files()
        if p.resolve() != self
    }


def theory_sections(text):
    """Map each numbered heading of the theory ("1.5", "0", "8.7") to its section's text."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if m:
            current = m.group(1)
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def design_headings(text):
    return {m.group(1).strip() for m in re.finditer(r"^#{1,4}\s+(.+)$", text, re.MULTILINE)}


def theory_references(text):
    """Every section number cited as docs/theory.md §x.y in ``text``, with its offset."""
    refs = []
    for m in THEORY_REF.finditer(text):
        refs.append((m.start(), m.group("first")))
        refs.extend((m.start(), n) for n in SECTION_SIGN.findall(m.group("rest")))
    return refs


def unresolved_theory(number, sections):
    """None if ``number`` ("1.5(a)", "8.1", "0") names a section (and lettered part), else why."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:\(([a-z])\))?", number)
    if m is None or m.group(1) not in sections:
        return f"no heading {number!r}"
    part = m.group(2)
    if part is not None and f"**({part})" not in sections[m.group(1)]:
        return f"section {m.group(1)} has no part ({part})"
    return None


def _line(text, offset):
    return text.count("\n", 0, offset) + 1


@cache
def _theory():
    return theory_sections((DOCS / "theory.md").read_text(encoding="utf-8"))


@cache
def _design():
    return design_headings((DOCS / "design.md").read_text(encoding="utf-8"))


def find_broken(texts, sections, headings):
    """All broken theory/design references and outside pointers in ``{path: text}``."""
    broken = []
    for path, text in texts.items():
        for offset, number in theory_references(text):
            why = unresolved_theory(number, sections)
            if why:
                broken.append(f"{path}:{_line(text, offset)}: docs/theory.md §{number}: {why}")
        if path == "docs/theory.md":  # the theory's own cross-references are bare §x.y
            for m in SECTION_SIGN.finditer(text):
                why = unresolved_theory(m.group(1), sections)
                if why:
                    broken.append(f"{path}:{_line(text, m.start())}: §{m.group(1)}: {why}")
        for m in DESIGN_REF.finditer(text):
            title = " ".join(m.group("title").split())
            if title not in headings:
                broken.append(f"{path}:{_line(text, m.start())}: docs/design.md {title!r}")
        for pattern in FORBIDDEN:
            for m in pattern.finditer(text):
                broken.append(f"{path}:{_line(text, m.start())}: outside pointer {m.group(0)!r}")
    return broken


def test_theory_has_every_section_number():
    # The numbering of the sections is the citation key: 0, 1 .. 9 with their subsections.
    sections = _theory()
    for top in range(10):
        assert str(top) in sections, top
    assert {"1.5", "2.5", "3.12", "5.8", "7.6", "8.7"} <= set(sections)


def test_every_reference_resolves():
    texts = _texts()
    broken = find_broken(texts, _theory(), _design())
    assert broken == [], "\n".join(broken)


def test_references_are_found():
    # The scanner must see the citations that exist (so that the test above cannot pass vacuously).
    texts = _texts()
    cited = {n for text in texts.values() for _, n in theory_references(text)}
    n_refs = sum(len(theory_references(text)) for text in texts.values())
    assert n_refs >= 200, n_refs
    assert {"0", "1.5(c)", "2.3", "3.3", "5.4", "6.2", "7.5", "8.1", "8.7", "9"} <= cited
    designs = [m for text in texts.values() for m in DESIGN_REF.finditer(text)]
    assert len(designs) >= 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see docs/theory.md §11.3 for details", "no heading '11.3'"),
        ("(docs/theory.md §8.1 and §8.9)", "no heading '8.9'"),
        ("# docs/theory.md\n# §1.5(z)", "no part (z)"),
        ('rules (docs/design.md,\n"Numerics and bad output")', "docs/design.md"),
        ("as in ../" + "shared/notes", "outside pointer"),
        ("from " + "THEORY" + ".md section 2", "outside pointer"),
        ("(" + "THEORY" + " 6.1, forms unconfirmed)", "outside pointer"),
    ],
)
def test_planted_broken_reference_is_caught(text, expected):
    broken = find_broken({"planted.py": text}, _theory(), _design())
    assert len(broken) == 1, broken
    assert expected in broken[0]
    assert broken[0].startswith("planted.py:")


@pytest.mark.parametrize(
    "text",
    [
        "docs/theory.md §1.5(a), §2.3 and §8.7",
        "(docs/theory.md\n    section 0, processing rule)",
        '(docs/design.md,\n"The randomness protocol")',
        "docs/theory.md's form",
    ],
)
def test_valid_references_pass(text):
    assert find_broken({"ok.py": text}, _theory(), _design()) == []


def _slug(title):
    # Python-Markdown's toc slug: lowercase, punctuation dropped, spaces to hyphens.
    s = re.sub(r"[^\w\s-]", "", title.strip().lower())
    return re.sub(r"[-\s]+", "-", s).strip("-")


def test_markdown_links_resolve():
    broken = []
    for path, text in _texts().items():
        if not path.endswith(".md"):
            continue
        here = (ROOT / path).parent
        for m in MD_LINK.finditer(text):
            target = m.group("target")
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            file, _, anchor = target.partition("#")
            dest = (here / file).resolve()
            if not dest.exists() or ROOT not in dest.parents:
                broken.append(f"{path}: link {target!r}")
            elif anchor and dest.suffix == ".md":
                slugs = {_slug(h) for h in design_headings(dest.read_text(encoding="utf-8"))}
                if anchor not in slugs:
                    broken.append(f"{path}: anchor {target!r}")
    assert broken == [], "\n".join(broken)


# The documentation site (mkdocs + mkdocstrings, numpy-style docstrings), built in strict mode in
# a subprocess: a broken link, anchor or cross-reference is an error.  mkdocstrings reads the
# sources statically, so the build imports neither torch nor the model; the script checks it.
_BUILD = """
import sys, yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

cfg = load_config(sys.argv[1], strict=True, site_dir=sys.argv[2])
try:
    build(cfg)
except Abort as exc:
    print("ABORT", exc)
    sys.exit(3)
heavy = sorted(m for m in ("torch", "transformers", "triton") if m in sys.modules)
print("IMPORTED", heavy)
sys.exit(4 if heavy else 0)
"""


def _build_site(config, site):
    return subprocess.run(
        [sys.executable, "-c", _BUILD, str(config), str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_site_builds_in_strict_mode(tmp_path):
    proc = _build_site(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "IMPORTED []" in proc.stdout
    api = (tmp_path / "site" / "api" / "exact" / "index.html").read_text(encoding="utf-8")
    # the API pages hold the docstrings, not only headings
    assert 'id="spectheory.exact.output_distribution"' in api
    assert "Returns" in api


@pytest.mark.parametrize(
    ("link", "ok"),
    [
        ("[notation](theory.md#0-notation-and-conventions)", True),  # the control
        ("[coins][spectheory.coins.RandomCoins]", True),
        ("[a missing page](missing.md)", False),
        ("[a missing anchor](theory.md#no-such-section)", False),
        ("[an unknown object][spectheory.no_such_function]", False),
    ],
)
def test_site_build_fails_on_a_broken_reference(tmp_path, link, ok):
    import yaml  # installed with mkdocs
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "theory.md").write_text((DOCS / "theory.md").read_text(encoding="utf-8"))
    (docs / "index.md").write_text(f"# Home\n\nSee {link}.\n\n::: spectheory.coins\n")
    config.update(docs_dir=str(docs), nav=["index.md", "theory.md"])
    config["plugins"][-1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    proc = _build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "strict mode" in proc.stdout
