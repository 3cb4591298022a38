"""Published acceptance measurements, with their sources (docs/theory.md §1.6, 6.2, 6.3).

Plain Python data, so that it ships with the package without package-data
configuration.  Every entry names the paper and table it comes from.
"""

from __future__ import annotations

__all__ = [
    "LEVIATHAN_DRAFT_PARAMS",
    "LEVIATHAN_TABLE2",
    "LEVIATHAN_TABLE3",
    "SOURCES",
    "SPEC_BENCH",
]

SOURCES = {
    "leviathan": (
        "Leviathan, Kalman, Matias. Fast Inference from Transformers via Speculative "
        "Decoding. ICML 2023, arXiv:2211.17192"
    ),
    "spec_bench": (
        "Xia et al. Unlocking Efficiency in Large Language Model Inference: A Comprehensive "
        "Survey of Speculative Decoding (Spec-Bench), arXiv:2401.07851; leaderboard "
        "hemingkx/Spec-Bench Leaderboard.md"
    ),
}

#: Leviathan et al. Table 3: alpha (Cor 3.6, 10k target-generated tokens) as
#: {target/task: {draft: (alpha at T=0, alpha at T=1)}}.
LEVIATHAN_TABLE3 = {
    "GPT-like 97M (lm1b)": {
        "unigram": (0.03, 0.03),
        "bigram": (0.05, 0.05),
        "GPT-like 6M": (0.88, 0.89),
    },
    "T5-XXL EnDe": {
        "unigram": (0.08, 0.07),
        "bigram": (0.20, 0.19),
        "T5-small": (0.75, 0.62),
        "T5-base": (0.80, 0.68),
        "T5-large": (0.82, 0.71),
    },
    "T5-XXL CNNDM": {
        "unigram": (0.13, 0.08),
        "bigram": (0.23, 0.16),
        "T5-small": (0.65, 0.53),
        "T5-base": (0.73, 0.55),
        "T5-large": (0.74, 0.56),
    },
    "LaMDA 137B": {
        "LaMDA 100M": (0.61, 0.57),
        "LaMDA 2B": (0.71, 0.71),
        "LaMDA 8B": (0.75, 0.74),
    },
}

#: Parameter counts of the neural drafts of Table 3 (docs/theory.md §6.2: T5 v1.1
#: sizes 77M / 250M / 800M; LaMDA drafts as named).
LEVIATHAN_DRAFT_PARAMS = {
    "T5-small": 77e6,
    "T5-base": 250e6,
    "T5-large": 800e6,
    "LaMDA 100M": 100e6,
    "LaMDA 2B": 2e9,
    "LaMDA 8B": 8e9,
    "GPT-like 6M": 6e6,
}

#: Leviathan et al. Table 2 (T5-XXL 11B target, batch 1, TPU-v4): rows
#: (task, temperature, draft, gamma, alpha, walltime speedup); "best" marks the
#: paper's starred draft.
LEVIATHAN_TABLE2 = [
    ("EnDe", 0, "T5-small", 7, 0.75, 3.4, True),
    ("EnDe", 0, "T5-base", 7, 0.80, 2.8, False),
    ("EnDe", 0, "T5-large", 7, 0.82, 1.7, False),
    ("EnDe", 1, "T5-small", 7, 0.62, 2.6, True),
    ("EnDe", 1, "T5-base", 5, 0.68, 2.4, False),
    ("EnDe", 1, "T5-large", 3, 0.71, 1.4, False),
    ("CNNDM", 0, "T5-small", 5, 0.65, 3.1, True),
    ("CNNDM", 0, "T5-base", 5, 0.73, 3.0, False),
    ("CNNDM", 0, "T5-large", 3, 0.74, 2.2, False),
    ("CNNDM", 1, "T5-small", 5, 0.53, 2.3, True),
    ("CNNDM", 1, "T5-base", 3, 0.55, 2.2, False),
    ("CNNDM", 1, "T5-large", 3, 0.56, 1.7, False),
]

#: Spec-Bench leaderboard (greedy, FP16, batch 1, Vicuna-v1.3 targets, mean of
#: 3 runs): {method: {setting: (tau, overall speedup)}}; tau counts the bonus
#: token; a missing setting was not reported.
SPEC_BENCH = {
    "EAGLE3": {"A100 V-13B": (5.71, 3.02)},
    "SAMD[EAGLE2]": {
        "3090 V-7B": (4.61, 2.38),
        "A100 V-7B": (4.58, 2.73),
        "A100 V-13B": (4.52, 2.77),
        "A100 V-33B": (4.07, 2.59),
    },
    "EAGLE2": {
        "3090 V-7B": (4.35, 2.19),
        "A100 V-7B": (4.34, 2.36),
        "A100 V-13B": (4.43, 2.46),
        "A100 V-33B": (4.05, 2.59),
    },
    "EAGLE": {
        "3090 V-7B": (3.57, 2.03),
        "A100 V-7B": (3.58, 2.10),
        "A100 V-13B": (3.64, 2.16),
        "A100 V-33B": (3.39, 2.43),
    },
    "Hydra": {
        "3090 V-7B": (3.26, 1.91),
        "A100 V-7B": (3.26, 2.07),
        "A100 V-13B": (3.35, 2.20),
        "A100 V-33B": (3.24, 2.22),
    },
    "Recycling": {
        "3090 V-7B": (2.73, 1.40),
        "A100 V-7B": (2.73, 2.22),
        "A100 V-13B": (2.73, 2.17),
        "A100 V-33B": (2.62, 1.83),
    },
    "Medusa": {
        "3090 V-7B": (2.32, 1.44),
        "A100 V-7B": (2.31, 1.71),
        "A100 V-13B": (2.39, 1.80),
        "A100 V-33B": (2.33, 1.76),
    },
    "SpS": {
        "3090 V-7B": (2.28, 1.79),
        "A100 V-7B": (2.28, 1.52),
        "A100 V-13B": (2.19, 1.54),
        "A100 V-33B": (2.01, 1.57),
    },
    "REST": {
        "3090 V-7B": (1.63, 1.28),
        "A100 V-7B": (1.82, 1.48),
        "A100 V-13B": (1.82, 1.38),
        "A100 V-33B": (1.80, 1.48),
    },
    "PLD": {
        "3090 V-7B": (1.73, 1.64),
        "A100 V-7B": (1.75, 1.66),
        "A100 V-13B": (1.67, 1.56),
        "A100 V-33B": (1.54, 1.40),
    },
    "Lookahead": {
        "3090 V-7B": (1.64, 1.13),
        "A100 V-7B": (1.64, 1.34),
        "A100 V-13B": (1.63, 1.30),
        "A100 V-33B": (1.61, 1.25),
    },
}
