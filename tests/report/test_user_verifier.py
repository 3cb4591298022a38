"""``spectheory report --verifier module:function``: the user's verifier in the report's sections.

A synthetic trace (no model): the replay and losslessness sections run with a
user module imported from the current folder; its verifier appears in both
tables, beside every built-in one, and a biased one is flagged.
"""

from __future__ import annotations

import textwrap

import pytest

import spectheory as st
from spectheory._errors import InvalidParameterError
from spectheory.report._core import (
    ReportContext,
    resolve_verifier,
    section_bounds_and_verifiers,
    section_lossless,
)
from spectheory.report._html import Page
from tests.sim.test_replay import synthetic_trace

MODULE = '''
import numpy as np


def my_sd(p, q, drafts, coins, *, sampling="iid"):
    x = drafts[0]
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0.0)
    return coins.categorical(rest / rest.sum())


def first_draft(target, draft, drafts, rng):
    return int(drafts[0])
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "mylab_verifiers.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)  # importable from the current folder, as with python -m
    yield "mylab_verifiers"
    import sys

    sys.modules.pop("mylab_verifiers", None)


def test_resolve_verifier(user_module):
    v = resolve_verifier(f"{user_module}:my_sd")
    assert (v.name, v.protocol, v.kernel) == ("my_sd", "coins", None)
    assert resolve_verifier(f"{user_module}:first_draft").protocol == "blackbox"
    assert resolve_verifier("rrs").kernel == "rrs"
    with pytest.raises(InvalidParameterError, match="cannot be imported"):
        resolve_verifier(f"{user_module}:missing")
    with pytest.raises(InvalidParameterError, match="cannot be imported"):
        resolve_verifier("no_such_module_xyz:f")


def test_report_sections_include_the_users_verifiers(user_module, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import spectheory.sim.bugzoo

    monkeypatch.setattr(spectheory.sim.bugzoo, "BUGS", {})  # the zoo is tested elsewhere
    ctx = ReportContext(out_dir=tmp_path / "out", quick=True, progress=False,
                        trace=synthetic_trace(positions=12, vocab=60),
                        verifiers=(resolve_verifier(f"{user_module}:my_sd"),
                                   resolve_verifier(f"{user_module}:first_draft")))  # fmt: skip
    page = Page("test")
    section_bounds_and_verifiers(ctx, page)
    replayed = (tmp_path / "out" / "replay.csv").read_text()
    assert ",my_sd," in replayed and ",first_draft," in replayed
    # first_draft always keeps a draft: acceptance 1 against alpha* < 1, flagged in the
    # verifiers table (it was shown without a flag); no built-in lossless verifier is.
    above = ctx.summary["verifiers"]["above_bound"]
    assert {a["verifier"] for a in above if a["verifier"] != "typical"} == {"first_draft"}
    assert {a["draft law"] for a in above if a["verifier"] == "first_draft"} == {
        "iid", "without_replacement", "greedy"}
    assert not ctx.summary["verifiers"]["all_as_expected"]
    # the best lossless verifier's gap without replacement leaves first_draft out (it was
    # taken as "the best registered verifier", with a negative gap)
    assert ctx.summary["verifiers"]["optimal"]["without_replacement_best_other_gap"] > 0
    html = page.html()
    assert "Verifiers declared lossless whose simulated acceptance is significantly" in html
    assert "first_draft (exit:1, T = 1, n = 2, greedy: 1.0000 against" in html
    section_lossless(ctx, page)
    verdicts = ctx.summary["lossless"]["verdicts"]
    # Checked under every draft law the function claims (all three, undeclared): the first
    # draft of i.i.d. and of without-replacement drafts follows q, of greedy drafts not, so
    # single-draft speculative sampling on it is lossy there (it was checked under i.i.d.
    # only, and passed, while replay.csv showed the greedy bias).
    assert verdicts["yours: my_sd [iid]"] == "consistent with lossless"
    assert verdicts["yours: my_sd [without_replacement]"] == "consistent with lossless"
    assert verdicts["yours: my_sd [greedy]"].startswith("lossy")
    assert all(verdicts[f"yours: first_draft [{law}]"].startswith("lossy")
               for law in ("iid", "without_replacement", "greedy"))  # fmt: skip


@st.verifier(samplings=("iid", "without_replacement"),
             n_values_by_law={"without_replacement": (3,)})  # fmt: skip
def fresh_target(p, q, drafts, coins, *, sampling):
    return coins.categorical(p)


def test_lossless_section_checks_laws_with_their_own_n(tmp_path, monkeypatch):
    """n = 3 only without replacement (n_values_by_law): that law was skipped in silence
    (the section read n_values alone, found n = 1 unsupported and checked nothing)."""
    import spectheory.sim.bugzoo
    import spectheory.sim.check

    real = spectheory.sim.check.check_lossless
    seen = []

    def few_trials(fn, *args, **kwargs):
        seen.append((getattr(fn, "name", fn), kwargs["n"], kwargs["sampling"]))
        return real(fn, *args, **{**kwargs, "trials": 200})

    monkeypatch.setattr(spectheory.sim.check, "check_lossless", few_trials)
    monkeypatch.setattr(spectheory.sim.bugzoo, "BUGS", {})
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False,
                        trace=synthetic_trace(positions=12, vocab=30),
                        verifiers=(fresh_target,))  # fmt: skip
    section_lossless(ctx, Page("test"))
    mine = [s for s in seen if s[0] == "fresh_target"]
    assert mine == [("fresh_target", 2, "iid"), ("fresh_target", 3, "without_replacement")]
    verdicts = ctx.summary["lossless"]["verdicts"]
    both = {"yours: fresh_target [iid]", "yours: fresh_target [without_replacement]"}
    assert both <= set(verdicts)


@pytest.mark.parametrize("attrs", [("sd",), ("my_sd", "my_sd")])
def test_verifiers_named_alike_in_the_report_are_refused_naming_the_spec(
    user_module, tmp_path, attrs
):
    """Audit: ``--verifier mylab:sd`` is named ``sd`` in the report, beside the built-in
    ``sd``; two modules' ``my_sd`` are both ``my_sd``.  The replay refused the repeat only
    after the trace was recorded (minutes of model work), with "verifiers must have
    distinct names", naming neither spec; now the report refuses it before any work."""
    import sys

    from spectheory.report import build_report

    (tmp_path / "mylab_verifiers_2.py").write_text(textwrap.dedent(MODULE))
    with open(tmp_path / f"{user_module}.py", "a") as f:
        f.write("\nsd = my_sd\n")
    specs = [f"{m}:{a}" for m, a in zip((user_module, "mylab_verifiers_2"), attrs)]
    try:
        match = rf"verifier '{specs[-1]}' is named '{attrs[-1]}'"
        with pytest.raises(InvalidParameterError, match=match):
            build_report(tmp_path / "out", sections=["verifiers"], trace=synthetic_trace(),
                         verifiers=specs, progress=False)  # fmt: skip
    finally:
        sys.modules.pop("mylab_verifiers_2", None)
