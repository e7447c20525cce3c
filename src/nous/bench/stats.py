"""Percentiles and timing helpers for benchmarks."""

from __future__ import annotations

import numpy as np


def percentiles_ms(samples_s: list[float]) -> dict[str, float]:
    """p50/p95/p99/mean of durations given in seconds, reported in milliseconds."""
    arr = np.asarray(samples_s) * 1000.0
    return {
        "p50": round(float(np.percentile(arr, 50)), 2),
        "p95": round(float(np.percentile(arr, 95)), 2),
        "p99": round(float(np.percentile(arr, 99)), 2),
        "mean": round(float(arr.mean()), 2),
    }
