"""Tests of benchmarks/compare_draft_losses.py helpers that need no model.

``with_more_docs`` grows a corpus with further documentation sequences without
re-sampling its cached sampled part; ``markdown`` renders merged runs whose
temperatures cover different ``n``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from spectheory.lm.corpus import Corpus, CorpusSettings

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_draft_losses.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("compare_draft_losses", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _corpus(seqs, starts, sources, settings=None):
    return Corpus(
        sequences=tuple(np.asarray(s, dtype=np.int64) for s in seqs),
        loss_start=np.asarray(starts, dtype=np.int64),
        sources=tuple(sources),
        settings=settings or CorpusSettings(doc_sequences=2),
    )


DOCS = [[1, 2, 3], [4, 5, 6, 7], [8, 9, 10], [11, 12, 13, 14, 15]]
DOC_STARTS = [0, 1, 0, 2]


def test_with_more_docs_keeps_docs_then_appends_new_docs_then_sampled(bench):
    sources = "doc doc sampled sampled".split()
    corpus = _corpus([*DOCS[:2], [20, 21, 22], [30, 31]], [0, 1, 1, 0], sources)
    more = CorpusSettings(doc_sequences=4, samples_per_prompt=0)
    docs = _corpus(DOCS, DOC_STARTS, ["doc"] * 4, more)
    out = bench.with_more_docs(corpus, docs)
    # the independent expectation, written out: 4 docs in their order, then the 2 sampled ones
    want = [*DOCS, [20, 21, 22], [30, 31]]
    assert [s.tolist() for s in out.sequences] == want
    assert out.loss_start.tolist() == [*DOC_STARTS, 1, 0]
    assert out.sources == ("doc",) * 4 + ("sampled",) * 2
    assert out.settings == corpus.settings
    # positions with a label: len - 1 - start per sequence
    assert out.num_loss_tokens == sum(len(s) - 1 - b for s, b in zip(want, [*DOC_STARTS, 1, 0]))
    assert out.sha256 != corpus.sha256


def test_with_more_docs_of_equal_size_is_the_corpus(bench):
    corpus = _corpus([*DOCS[:2], [20, 21]], [0, 1, 0], "doc doc sampled".split())
    docs = _corpus(DOCS[:2], DOC_STARTS[:2], ["doc"] * 2)
    assert bench.with_more_docs(corpus, docs).sha256 == corpus.sha256


def test_with_more_docs_refuses_other_docs_or_sampled_docs_corpus(bench):
    corpus = _corpus([*DOCS[:2], [20, 21]], [0, 1, 0], "doc doc sampled".split())
    other = _corpus([DOCS[1], DOCS[0], DOCS[2]], [1, 0, 0], ["doc"] * 3)
    with pytest.raises(SystemExit, match="does not extend"):
        bench.with_more_docs(corpus, other)
    shorter = _corpus(DOCS[:1], DOC_STARTS[:1], ["doc"])
    with pytest.raises(SystemExit, match="does not extend"):
        bench.with_more_docs(corpus, shorter)
    with pytest.raises(SystemExit, match="holds sampled"):
        bench.with_more_docs(corpus, _corpus(DOCS[:3], [0, 1, 0], "doc doc sampled".split()))


def test_markdown_shows_a_dash_for_n_not_evaluated_at_a_temperature(bench):
    def row(loss, T, n, law, v):
        r = {"loss": loss, "T": T, "n": n, "law": law, "value": v}
        r.update(ci_lo=v - 0.01, ci_hi=v + 0.01)
        r.update(diff="", diff_lo="", diff_hi="")
        if loss != "kl":
            r.update(diff=0.02, diff_lo=0.01, diff_hi=0.03)
        return r

    rows = [row(x, 1.0, 1, "-", 0.3) for x in ("kl", "tv")]
    rows += [row(x, 1.0, 2, "iid", 0.4) for x in ("kl", "tv")]
    rows += [row(x, 0.7, 1, "-", 0.5) for x in ("kl", "tv")]
    args = bench.parse_args([])
    metrics = {
        "train_seconds": 1.0,
        "validation_kl_initial": 2.0,
        "validation_kl": 1.0,
        "validation_loss_initial": 2.0,
        "validation_loss": 1.0,
    }
    summary = {
        "args": vars(args),
        "corpus_positions": 10,
        "held_out": "sampled",
        "training": {"kl": metrics, "tv": metrics},
    }
    md = bench.markdown(rows, ["kl", "tv"], summary)
    t07 = md.split("## T = 0.7")[1]
    assert "| `kl` | 0.500 [0.490, 0.510] | - |" in t07
    assert "| `tv` | 0.500 [0.490, 0.510]<br>+0.020 [+0.010, +0.030] | - |" in t07
    t1 = md.split("## T = 1")[1].split("## T = 0.7")[0]
    assert "| `kl` | 0.300 [0.290, 0.310] | 0.400 [0.390, 0.410] |" in t1
