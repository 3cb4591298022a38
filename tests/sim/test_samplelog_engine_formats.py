"""Engine logs as engines write them: padding, float32 JSON lines, JSON output, coin errors.

Each case failed before its fix:
- a -1 before a real draft was dropped silently (the row's n changed and the slot
  acceptance went to another slot); in a JSON line a -1 was read as a draft id;
- float32 rows written with ``tolist()`` to a ``.jsonl`` file were refused (read as
  float64, checked at 1e-9), while the same rows in ``.npz`` passed at float32's tolerance;
- ``spectheory audit --json`` printed ``NaN`` (not JSON) for a log without drafts;
- a verifier handing a coin NaN probabilities failed with the coin's bare message,
  naming neither the verifier nor the row, as bad input of the caller's.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from spectheory import InvalidParameterError, VerifierError, check_lossless
from spectheory.sim.samplelog import as_sample_log, load_log

P = [[0.4, 0.3, 0.2, 0.1]] * 2
Q = [[0.25] * 4] * 2


def test_padding_before_a_draft_is_refused():
    with pytest.raises(InvalidParameterError, match=r"row 0 has the padding -1 in slot 0"):
        as_sample_log(P, Q, [[-1, 2], [-1, 1]], [2, 0])
    log = as_sample_log(P, Q, [[3, -1], [1, 2]], [2, 0])  # padding at the end: fine
    assert log.drafts.tolist() == [[3, -1], [1, 2]]


def test_a_json_line_with_a_negative_draft_is_refused(tmp_path):
    path = tmp_path / "pad.jsonl"
    path.write_text(json.dumps({"target": P[0], "draft": Q[0], "drafts": [-1, 2],
                                "output": 2}) + "\n")
    with pytest.raises(InvalidParameterError, match=r"line 1: drafts .* got -1 .*no -1"):
        load_log(path)


def test_float32_rows_in_json_lines_read_as_in_npz(tmp_path):
    rng = np.random.default_rng(0)
    z = (2 * rng.standard_normal((20, 1000))).astype(np.float32)
    e = np.exp(z - z.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)  # float32 rows: sums miss 1 by ~1e-7
    assert np.abs(p.astype(np.float64).sum(1) - 1).max() > 1e-9
    y = p.argmax(1)
    np.savez(tmp_path / "f32.npz", target=p, draft=p, drafts=-np.ones((20, 1), int), outputs=y)
    with open(tmp_path / "f32.jsonl", "w") as f:
        for i in range(20):
            f.write(json.dumps({"target": p[i].tolist(), "draft": p[i].tolist(), "drafts": [],
                                "output": int(y[i])}) + "\n")
    a, b = load_log(tmp_path / "f32.npz"), load_log(tmp_path / "f32.jsonl")
    np.testing.assert_array_equal(a.target, b.target)
    # a float64 row off by 1e-7 is still refused: only exact float32 values read as float32
    row = np.full(4, 0.25) + np.array([1e-7, 0, 0, 0])
    with open(tmp_path / "f64.jsonl", "w") as f:
        f.write(json.dumps({"target": row.tolist(), "draft": Q[0], "drafts": [],
                            "output": 0}) + "\n")
    with pytest.raises(Exception, match="tolerance"):
        load_log(tmp_path / "f64.jsonl")


def test_audit_json_output_is_strict_json(tmp_path):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=30)
    y = np.array([rng.choice(5, p=r) for r in p])
    np.savez(tmp_path / "nd.npz", target=p, draft=p, drafts=-np.ones((30, 1), int), outputs=y)
    out = subprocess.run([sys.executable, "-m", "spectheory", "audit", str(tmp_path / "nd.npz"),
                          "--json"], capture_output=True, text=True, check=True).stdout

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    doc = json.loads(out, parse_constant=refuse)
    assert doc["lossy"] is False


def test_a_coin_refusing_a_verifiers_arguments_names_the_verifier():
    def my_sd(p, q, drafts, coins, *, sampling="iid"):
        x = drafts[0]
        if coins.bernoulli(p[x]):
            return x
        rest = np.maximum(p - q, 0 * p[0])
        with np.errstate(invalid="ignore"):
            law = rest / rest.sum()  # 0/0 where p == q: NaN
        return coins.categorical(law)

    p = np.array([0.4, 0.3, 0.2, 0.1])
    with pytest.raises(VerifierError, match=r"verifier 'my_sd' raised .*categorical.*drafts"):
        check_lossless(my_sd, p, p, n=1, trials=200)


def test_a_json_line_of_another_vocabulary_names_both_sizes(tmp_path):
    """The first line itself mismatched read "line 1 ... differ from line 1's"."""
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps({"target": P[0], "draft": [*Q[0][:3], 0.25], "drafts": [],
                                "output": 0}) + "\n"
                    + json.dumps({"target": [0.5, 0.5, 0.0], "draft": [0.5, 0.5, 0.0],
                                  "drafts": [], "output": 0}) + "\n")
    with pytest.raises(Exception, match=r"line 2: target has 3 entries and draft 3, where "
                                        r"line 1's target has 4"):
        load_log(path)
    path.write_text(json.dumps({"target": P[0], "draft": [0.5, 0.5], "drafts": [],
                                "output": 0}) + "\n")
    with pytest.raises(Exception, match=r"line 1: target has 4 entries and draft 2"):
        load_log(path)
