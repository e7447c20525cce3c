"""Pure-numpy inference for the bundled all-MiniLM-L6-v2 sentence-transformers model.

Needs only numpy, ``tokenizers`` and ``safetensors`` (no torch or transformers), so it imports and
loads in a fraction of a second. Output matches sentence-transformers' normalised embeddings to
float32 rounding (cosine > 0.99999).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

# GELU(x) = x * Phi(x) with Phi(x) = sigmoid(x * R(x^2)): the exact erf GELU from a minimax fit of
# erf(t) = tanh(t * P(t^2)), max |erf error| 5.8e-8 in float64 (float32 adds a few ulp of rounding).
# Coefficients of -R, highest power first.
_GELU_R = np.array(
    [
        -3.512558434240514e-09,
        2.645326760986267e-07,
        -7.9295476714992e-06,
        0.00011061264032600399,
        6.51894745769882e-05,
        -0.07266616880574071,
        -1.5957698829820663,
    ],
    dtype=np.float32,
)
_GELU_CHUNK = 1 << 15  # elements per GELU block, sized to stay in L2 cache
_ATTN_CHUNK = 1 << 18  # attention scores per step


def _gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU of a 2-D float32 array, in place, in cache-sized row blocks."""
    rows = max(1, _GELU_CHUNK // x.shape[1])
    u_buf = np.empty((min(rows, x.shape[0]), x.shape[1]), np.float32)
    p_buf = np.empty_like(u_buf)
    with np.errstate(over="ignore"):
        for start in range(0, x.shape[0], rows):
            xs = x[start : start + rows]
            u = np.multiply(xs, xs, out=u_buf[: len(xs)])
            p = np.multiply(u, _GELU_R[0], out=p_buf[: len(xs)])
            for c in _GELU_R[1:-1]:
                p += c
                p *= u
            p += _GELU_R[-1]
            p *= xs
            np.exp(p, out=p)
            p += 1.0
            np.divide(xs, p, out=xs)
    return x


def _layer_norm_(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in place."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= 1.0 / x.shape[-1]
    var += eps
    x *= 1.0 / np.sqrt(var)
    x *= weight
    x += bias
    return x


def _softmax_(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place.

    Attention scores are small, so exp() is taken without subtracting the row maximum; the exact
    max-shifted form is the fallback when that over- or underflows.
    """
    with np.errstate(over="ignore"):
        e = np.exp(x)
    sums = e.sum(axis=-1, keepdims=True)
    if not (np.isfinite(sums).all() and sums.min() > 1e-30):
        x -= x.max(axis=-1, keepdims=True)
        np.exp(x, out=e)
        sums = e.sum(axis=-1, keepdims=True)
    np.multiply(e, 1.0 / sums, out=x)
    return x


class NumpyMiniLM:
    """BERT encoder + mean pooling + L2 normalisation, float32 numpy on the CPU."""

    def __init__(self, model_dir: Path, max_seq_length: int | None = None) -> None:
        model_dir = Path(model_dir)
        config = json.loads((model_dir / "config.json").read_text())
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported hidden_act {config['hidden_act']!r}")
        st_config_path = model_dir / "sentence_bert_config.json"
        st_config = json.loads(st_config_path.read_text()) if st_config_path.exists() else {}
        self.max_seq_length: int = int(
            max_seq_length or st_config.get("max_seq_length") or config["max_position_embeddings"]
        )
        self.hidden: int = config["hidden_size"]
        self.heads: int = config["num_attention_heads"]
        self.layers: int = config["num_hidden_layers"]
        self.eps: float = float(config.get("layer_norm_eps", 1e-12))
        self.dimensions = self.hidden

        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        pad = self._tokenizer.padding or {}
        self._tokenizer.enable_padding(
            pad_id=pad.get("pad_id", config.get("pad_token_id", 0)), pad_token=pad.get("pad_token", "[PAD]")
        )
        # encode_batch_fast (tokenizers >= 0.20) skips offset tracking.
        self._encode_batch = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        self._load_weights(model_dir / "model.safetensors")

    def _load_weights(self, path: Path) -> None:
        """Read safetensors (with or without a ``bert.`` prefix) into matmul-ready float32 arrays."""
        raw = load_file(str(path))
        w = {k.removeprefix("bert."): v for k, v in raw.items()}

        def f32(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name], dtype=np.float32)

        def dense_t(name: str) -> np.ndarray:  # torch Linear stores (out, in); keep (in, out)
            return np.ascontiguousarray(f32(f"{name}.weight").T)

        self._word = f32("embeddings.word_embeddings.weight")
        self._pos = f32("embeddings.position_embeddings.weight")
        self._type = f32("embeddings.token_type_embeddings.weight")
        self._emb_ln = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        scale = np.float32(1.0 / np.sqrt(self.hidden // self.heads))  # folded into the query projection
        self._blocks: list[dict[str, np.ndarray]] = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            qkv_w = [dense_t(att + f"self.{n}") for n in ("query", "key", "value")]
            qkv_b = [f32(att + f"self.{n}.bias") for n in ("query", "key", "value")]
            qkv_w[0] = qkv_w[0] * scale
            qkv_b[0] = qkv_b[0] * scale
            self._blocks.append(
                {
                    "qkv_w": np.ascontiguousarray(np.concatenate(qkv_w, axis=1)),
                    "qkv_b": np.concatenate(qkv_b),
                    "o_w": dense_t(att + "output.dense"),
                    "o_b": f32(att + "output.dense.bias"),
                    "ln1_w": f32(att + "output.LayerNorm.weight"),
                    "ln1_b": f32(att + "output.LayerNorm.bias"),
                    "i_w": dense_t(p + "intermediate.dense"),
                    "i_b": f32(p + "intermediate.dense.bias"),
                    "out_w": dense_t(p + "output.dense"),
                    "out_b": f32(p + "output.dense.bias"),
                    "ln2_w": f32(p + "output.LayerNorm.weight"),
                    "ln2_b": f32(p + "output.LayerNorm.bias"),
                }
            )

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` as L2-normalised float32 rows of shape (len(texts), hidden)."""
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        order = np.argsort(
            [-len(t) for t in texts], kind="stable"
        )  # longest first, like sentence-transformers
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            batch = self._encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in batch], dtype=np.intp)
            type_ids = np.array([e.type_ids for e in batch], dtype=np.intp)
            mask = np.array([e.attention_mask for e in batch], dtype=bool)
            out[idx] = self._forward(ids, type_ids, mask)
        return out

    def _forward(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Encoder pass over one padded batch; returns normalised mean-pooled vectors.

        Per-token work runs on the packed real tokens only (padding dropped); attention alone uses
        the padded (batch, seq) layout.
        """
        b, n = ids.shape
        flat = mask.reshape(-1)
        packed = not flat.all()
        positions = np.broadcast_to(np.arange(n), (b, n))
        if packed:
            ids, type_ids, positions = ids[mask], type_ids[mask], positions[mask]
        x = self._word[ids.reshape(-1)]
        x += self._pos[positions.reshape(-1)]
        x += self._type[type_ids.reshape(-1)]
        x = _layer_norm_(x, *self._emb_ln, self.eps)
        lengths = mask.sum(axis=1)
        for blk in self._blocks:
            qkv = x @ blk["qkv_w"]
            qkv += blk["qkv_b"]
            if packed:
                padded = np.zeros((b * n, qkv.shape[1]), np.float32)
                padded[flat] = qkv
                qkv = padded
            ctx = self._attention(qkv.reshape(b, n, 3, self.heads, -1), lengths)
            att = (ctx[flat] if packed else ctx) @ blk["o_w"]
            att += blk["o_b"]
            att += x
            x = _layer_norm_(att, blk["ln1_w"], blk["ln1_b"], self.eps)
            inter = x @ blk["i_w"]
            inter += blk["i_b"]
            y = _gelu_(inter) @ blk["out_w"]
            y += blk["out_b"]
            y += x
            x = _layer_norm_(y, blk["ln2_w"], blk["ln2_b"], self.eps)
        pooled = np.add.reduceat(x, np.concatenate(([0], np.cumsum(lengths)[:-1])), axis=0)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)  # the mean's 1/length cancels out
        return pooled

    def _attention(self, qkv: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Self-attention over (batch, seq, 3, heads, head_dim); returns (batch*seq, hidden).

        Works on groups of sequences trimmed to the group's longest, so padding costs little and a
        long sequence's scores stay cache-sized. Rows past a sequence's length are left undefined.
        """
        b, n, _, nh, d = qkv.shape
        ctx = np.empty((b, n, nh, d), np.float32)
        group = max(1, _ATTN_CHUNK // (nh * n * n))
        for s in range(0, b, group):
            lens = lengths[s : s + group]
            m = int(lens.max())
            blk = qkv[s : s + group, :m]
            scores = blk[:, :, 0].transpose(0, 2, 1, 3) @ blk[:, :, 1].transpose(0, 2, 3, 1)
            if lens.min() < m:  # mask padding keys
                scores += np.where(np.arange(m) < lens[:, None], np.float32(0), np.float32(-1e9))[
                    :, None, None
                ]
            _softmax_(scores)
            ctx[s : s + group, :m] = (scores @ blk[:, :, 2].transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
        return ctx.reshape(b * n, nh * d)
