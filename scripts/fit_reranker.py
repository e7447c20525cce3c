"""Choose the re-ranker's weights and its calibration by leave-one-out over every development
set (reproduces retrieval/rerank.py).

    D=../shared/datasets
    .venv/bin/python scripts/fit_reranker.py dump conv.json $D/locomo $D/beam
    .venv/bin/python scripts/fit_reranker.py dump agent.json $D/agent
    .venv/bin/python scripts/fit_reranker.py dump agent_locomo.json $D/agent distractors=$D/locomo
    .venv/bin/python scripts/fit_reranker.py dump agent_beam.json $D/agent distractors=$D/beam
    .venv/bin/python scripts/fit_reranker.py fit conv.json agent.json agent_locomo.json agent_beam.json \
        fixed=fires:2.0 weight_agent=0.5 weight_agent+locomo=0.25 weight_agent+beam=0.25 \
        calibrate_on=agent,agent+locomo,agent+beam

``dump`` stores every conversation (LoCoMo files or labelled conversations) or agent-memory
scenario of each folder in a fresh store (the event pipeline off, as in the benchmarks) and
records, per question, the re-ranker features of the head of the base ranking and which
candidates are relevant (an evidence turn; an expected memory). With ``distractors=DIR``, each
scenario's store first ingests one conversation of DIR (in turn): a store that grew with
conversations about other things (dataset ``agent+DIR``). ``fit`` trains a pairwise logistic
model (each relevant candidate against each other one of the same question) on all units but one
— a conversation, or a scenario in every store it was written to — and scores the held-out one
(recall_all@10 / recall_any@5 of conversations, hit@1 / hit@5 of scenarios, when the head is
re-ordered by the model), for each unit in turn. Every dataset carries the same total weight
unless ``weight_<dataset>=x`` says otherwise, so a large one cannot dictate the weights. The
score is then calibrated (Platt scaling of the ranking logit, on each question's first ten
candidates, unanswerable questions included): the held-out reliability table, the held-out
abstention AUROC of the scenarios, the share of right first answers each minimum score keeps,
the spread of the weights across folds and the weights fitted on everything are printed.
Options: ``query_features=crowd`` (a question-level calibration feature, tried and not shipped),
``calibrate_on=dataset,...``, ``weight_<dataset>=x``, ``drop=feature,...``, ``l2=x``, ``focus=x``
(pairs with a high-ranked negative weigh more), ``fixed=feature:weight,...`` (a weight set by
rule, before calibration: the rest are fit around it).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from nous import Memory, Nous, Settings
from nous.bench.agent import load_scenarios, write_scenario
from nous.bench.labelled import LabelledConversation, from_locomo, load_labelled
from nous.embeddings.local import LocalEmbeddingProvider
from nous.retrieval import RecallQuery
from nous.retrieval.rerank import BIAS, FEATURES, WEIGHTS


def _load(directory: Path) -> list[LabelledConversation]:
    out = []
    for path in sorted(directory.glob("*.json")):
        head = path.read_text(encoding="utf-8")[:4000]
        out.append(load_labelled(path) if '"sessions"' in head else from_locomo(path))
    return out


def _is_agent_dir(directory: Path) -> bool:
    first = next(iter(sorted(directory.glob("*.json"))), None)
    return first is not None and '"memories"' in first.read_text(encoding="utf-8")[:20000]


def _settings(tmp: str) -> Settings:
    return Settings(home=Path(tmp), database_url=f"sqlite:///{tmp}/fit.db", events_worker="off")


def _row(memory: Memory) -> dict[str, object]:
    return {"kind": memory.kind.value, "category": memory.category}


async def _dump_agent(
    directory: Path, provider: LocalEmbeddingProvider, distractors: list[Path]
) -> list[dict[str, object]]:
    """Agent scenarios: a candidate is relevant when it stands for an expected memory; questions
    nothing answers are kept (no relevant candidate) for calibrating the score. With
    ``distractors`` (folders of conversations), scenario i's store first ingests conversation i
    (in turn) of each folder: a store that grew with conversations about other things."""
    records: list[dict[str, object]] = []
    others = [[c.conversation for c in _load(d)] for d in distractors]
    name = "+".join([directory.name, *(d.name for d in distractors)])
    for position, scenario in enumerate(load_scenarios(directory)):
        with tempfile.TemporaryDirectory() as tmp:
            async with Nous(_settings(tmp), agent_id=scenario.agent_id, embedding_provider=provider) as nous:
                for conversations in others:
                    await nous.ingest(conversations[position % len(conversations)])
                ids = await write_scenario(nous, scenario)
                retriever = nous._retriever
                assert retriever is not None
                for q in scenario.questions:
                    at = q.asked_at or scenario.now
                    rows = await retriever.rerank_features(
                        RecallQuery(text=q.question, limit=10, user_id=q.user_id, now=at, as_of=at)
                    )
                    records.append(
                        {
                            "dataset": name,
                            "conversation": scenario.id,
                            "category": q.kind,
                            "question": q.question,
                            "groups": 0 if q.abstain else 1,
                            "x": np.stack([x for _, x in rows]).tolist() if rows else [],
                            "covers": [[0] if ids.get(m.id, set()) & set(q.expect) else [] for m, _ in rows],
                            "stale": [bool(ids.get(m.id, set()) & set(q.not_current)) for m, _ in rows],
                            "candidates": [_row(m) for m, _ in rows],
                        }
                    )
        print(f"{name}/{scenario.id}: {len(scenario.questions)} questions", file=sys.stderr)
    return records


async def dump(out: Path, directories: list[Path], distractors: list[Path]) -> None:
    provider = LocalEmbeddingProvider()
    records: list[dict[str, object]] = []
    for directory in directories:
        if _is_agent_dir(directory):
            records += await _dump_agent(directory, provider, distractors)
            continue
        for item in _load(directory):
            with tempfile.TemporaryDirectory() as tmp:
                async with Nous(_settings(tmp), agent_id="fit", embedding_provider=provider) as nous:
                    await nous.ingest(item.conversation)
                    retriever = nous._retriever
                    assert retriever is not None
                    for q in item.questions:
                        rows = await retriever.rerank_features(
                            RecallQuery(text=q.question, limit=10, now=q.asked_at)
                        )
                        covers = [
                            [
                                g
                                for g, group in enumerate(q.evidence)
                                if set(m.provenance.turn_ids) & set(group)
                            ]
                            for m, _ in rows
                        ]
                        records.append(
                            {
                                "dataset": directory.name,
                                "conversation": item.name,
                                "category": q.category,
                                "question": q.question,
                                "groups": len(q.evidence),
                                "x": np.stack([x for _, x in rows]).tolist() if rows else [],
                                "covers": covers,
                                "candidates": [_row(m) for m, _ in rows],
                            }
                        )
            print(f"{directory.name}/{item.name}: {len(item.questions)} questions", file=sys.stderr)
    out.write_text(json.dumps({"features": FEATURES, "records": records}))


def _order(r: dict, w: np.ndarray, b: float) -> np.ndarray:
    return np.argsort(-(np.asarray(r["x"]) @ w + b), kind="stable")


def _recall(records: list[dict], w: np.ndarray, b: float, k: int, mode: str) -> float:
    """recall_all@k / recall_any@k of conversation questions; hit@k of agent questions."""
    hits = []
    for r in records:
        if not r["groups"]:
            continue  # nothing answers it: for calibration only
        if len(r["x"]) == 0:
            hits.append(0.0)
            continue
        order = _order(r, w, b)[:k]
        found = {g for i in order for g in r["covers"][i]}
        hits.append(float(len(found) == r["groups"]) if mode == "all" else float(bool(found)))
    return float(np.mean(hits)) if hits else float("nan")


def _training_set(records: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    datasets = {r["dataset"] for r in records}
    per_dataset = {d: sum(1 for r in records if r["dataset"] == d) for d in datasets}
    xs, ys, ws = [], [], []
    for r in records:
        x = np.asarray(r["x"])
        if len(x) == 0 or not r["groups"]:
            continue
        y = np.array([1.0 if c else 0.0 for c in r["covers"]])
        weight = 1.0 / per_dataset[r["dataset"]] / len(x)  # each dataset, then each question, weighs the same
        xs.append(x)
        ys.append(y)
        ws.append(np.full(len(x), weight))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-3, *, by_rule: dict[int, float] | None = None
) -> tuple[np.ndarray, float]:
    """Weighted L2-regularised logistic regression by Newton's method (intercept unpenalised).
    Features of ``by_rule`` (default FIXED) keep their set weight: they enter as an offset, and
    only the rest are fit."""
    fixed = {i: v for i, v in (FIXED if by_rule is None else by_rule).items() if i < x.shape[1]}
    free = [i for i in range(x.shape[1]) if i not in fixed]
    offset = sum((x[:, i] * v for i, v in fixed.items()), np.zeros(len(x)))
    weights, bias = _fit_free(x[:, free], y, w, l2, offset)
    full = np.zeros(x.shape[1])
    full[free] = weights
    for i, v in fixed.items():
        full[i] = v
    return full, bias


def _fit_free(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, offset: np.ndarray
) -> tuple[np.ndarray, float]:
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = w / w.sum()
    theta = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ theta + offset)))
        grad = xb.T @ (w * (p - y)) + penalty * theta
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def _pairwise_set(records: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Differences x_relevant - x_other within each question (each question weighs the same)."""
    datasets = {r["dataset"] for r in records}
    per_dataset = {d: sum(1 for r in records if r["dataset"] == d) for d in datasets}
    xs, ws = [], []
    for r in records:
        x = np.asarray(r["x"])
        pos = [i for i, c in enumerate(r["covers"]) if c]
        neg = [i for i, c in enumerate(r["covers"]) if not c]
        if not pos or not neg:
            continue
        diffs = (x[pos][:, None, :] - x[neg][None, :, :]).reshape(-1, x.shape[1])
        xs.append(diffs)
        share = DATASET_WEIGHT.get(r["dataset"], 1.0) / per_dataset[r["dataset"]]
        # Optionally, negatives high in the base ranking weigh more (the top is what is read).
        ranks = np.asarray(neg, dtype=np.float64)
        pair = np.tile(1.0 / (1.0 + ranks / FOCUS[0]) if FOCUS[0] else np.ones(len(neg)), len(pos))
        ws.append(share * pair / pair.sum())
    x, w = np.concatenate(xs), np.concatenate(ws)
    # Symmetric pairs (d, 1) and (-d, 0) keep the intercept at zero.
    return np.vstack([x, -x]), np.r_[np.ones(len(x)), np.zeros(len(x))], np.r_[w, w]


def fit_model(records: list[dict], objective: str) -> tuple[np.ndarray, float]:
    if objective == "pairwise":
        w, _ = fit_logistic(*_pairwise_set(records), l2=L2[0])
        # Place the intercept where pointwise logistic would put it, for a calibrated sigmoid.
        x, y, sw = _training_set(records)
        m, target = x @ w, float(np.sum(sw * y) / sw.sum())
        lo, hi = -50.0, 50.0  # bisection: mean predicted relevance = share of relevant candidates
        for _ in range(100):
            bias = (lo + hi) / 2
            mean = float(np.sum(sw / (1.0 + np.exp(-(m + bias)))) / sw.sum())
            lo, hi = (bias, hi) if mean < target else (lo, bias)
        return w, (lo + hi) / 2
    return fit_logistic(*_training_set(records))


DATASET_WEIGHT: dict[str, float] = {}
FIXED: dict[int, float] = {}  # fit option fixed=name:weight,...: column -> weight set by rule
L2 = [1e-3]  # fit option l2=x

FOCUS: list[float] = [
    0.0
]  # fit option focus=x: a pair weighs 1 / (1 + base rank of its negative / x)  # fit option weight_<dataset>=x (default 1 each)
CALIBRATION_DEPTH = 10  # the score is calibrated on what callers see: each question's first ten


def _logits(r: dict, w: np.ndarray) -> np.ndarray:
    return np.asarray(r["x"]) @ w


QUESTION_FEATURES: list[str] = []  # fit option query_features=crowd (tried, not shipped)


def _question_row(logits: np.ndarray) -> np.ndarray:
    """Features of the question as a whole, for calibration only (the shipped score has none):
    ``crowd``, how many candidates rival the best on the ranking's pairwise scale (log of the
    softmax denominator: 0 when one candidate stands alone; unrelated candidates far below add
    almost nothing)."""
    crowd = float(np.log(np.exp(logits - logits.max()).sum())) if len(logits) else 0.0
    return np.asarray([crowd for name in QUESTION_FEATURES if name == "crowd"])


def _calibration_set(records: list[dict], w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (logit, question features...), relevant, weight of each question's first
    CALIBRATION_DEPTH candidates under ``w``; every dataset weighs the same, every question the
    same within it; unanswerable questions count (all their candidates are irrelevant)."""
    per_dataset = {d: sum(1 for r in records if r["dataset"] == d) for d in {r["dataset"] for r in records}}
    xs, ys, ws = [], [], []
    for r in records:
        if len(r["x"]) == 0:
            continue
        s = _logits(r, w)
        top = np.argsort(-s, kind="stable")[:CALIBRATION_DEPTH]
        q = _question_row(s)
        xs.append(np.column_stack([s[top], np.tile(q, (len(top), 1))]) if len(q) else s[top][:, None])
        ys.append(np.array([1.0 if r["covers"][i] else 0.0 for i in top]))
        ws.append(np.full(len(top), 1.0 / per_dataset[r["dataset"]] / len(top)))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def calibrate(records: list[dict], w: np.ndarray, on: set[str] | None) -> tuple[np.ndarray, float]:
    """relevance = sigmoid(a * (x . w) + b . q + c), fitted on the calibration set of the datasets
    ``on`` (all when None); returns ([a, b...], c)."""
    x, y, sw = _calibration_set([r for r in records if on is None or r["dataset"] in on], w)
    return fit_logistic(x, y, sw, l2=1e-4, by_rule={})  # the features' fixed weights are not its columns


def _relevance(r: dict, w: np.ndarray, cal: tuple[np.ndarray, float]) -> np.ndarray:
    coef, c = cal
    q = _question_row(_logits(r, w))
    return 1.0 / (1.0 + np.exp(-(coef[0] * _logits(r, w) + (q @ coef[1:] if len(q) else 0.0) + c)))


def auroc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(np.mean((p > n) + 0.5 * (p == n)))


def _reliability(predicted: list[tuple[str, float, float]]) -> None:
    """Held-out predicted relevance against observed frequency, in bins, per dataset."""
    edges = [0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0001]
    datasets = sorted({d for d, _, _ in predicted})
    print("\n| predicted | " + " | ".join(f"{d}: n / mean p / observed" for d in datasets) + " |")
    print("|---|" + "---|" * len(datasets))
    for lo, hi in itertools.pairwise(edges):
        cells = []
        for d in datasets:
            inside = [(p, y) for dd, p, y in predicted if dd == d and lo <= p < hi]
            if inside:
                ps, ys = zip(*inside, strict=True)
                cells.append(f"{len(inside)} / {np.mean(ps):.3f} / {np.mean(ys):.3f}")
            else:
                cells.append("–")
        print(f"| {lo:.2f}–{min(hi, 1.0):.2f} | " + " | ".join(cells) + " |")


def _fold(r: dict) -> tuple[str, str]:
    """What one fold holds out: a conversation of its dataset; a scenario in every store it was
    written to (as written, and beside each set of distractors)."""
    return (
        ("agent", r["conversation"])
        if r["dataset"].startswith("agent")
        else (r["dataset"], r["conversation"])
    )


MINIMUMS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.15)


def _minimums(
    firsts: dict[str, list[tuple[float, bool]]], tops: dict[str, tuple[list[float], list[float]]]
) -> None:
    """Held out, per dataset and minimum score: the share of right first answers kept, and of
    unanswerable questions given nothing."""
    datasets = sorted(firsts)
    print(
        "\n| minimum | "
        + " | ".join(f"right firsts kept: {d}" for d in datasets)
        + " | unanswerable given nothing |"
    )
    print("|---|" + "---|" * (len(datasets) + 1))
    for m in MINIMUMS:
        kept = []
        for d in datasets:
            right = [score for score, ok in firsts[d] if ok]
            kept.append(f"{np.mean([s >= m for s in right]):.3f}" if right else "–")
        negs = [s for d, (_, neg) in tops.items() for s in neg]
        nothing = f"{np.mean([s < m for s in negs]):.3f}" if negs else "–"
        print(f"| {m:.2f} | " + " | ".join(kept) + f" | {nothing} |")


def fit(*paths_and_options: str) -> None:
    paths = [Path(p) for p in paths_and_options if p.endswith(".json")]
    options = dict(o.split("=", 1) for o in paths_and_options if "=" in o)
    objective, drop = options.get("objective", "pairwise"), options.get("drop", "")
    on = set(options["calibrate_on"].split(",")) if "calibrate_on" in options else None
    if "l2" in options:
        L2[0] = float(options["l2"])
    if "focus" in options:
        FOCUS[0] = float(options["focus"])
    for key, value in options.items():
        if key.startswith("weight_"):
            DATASET_WEIGHT[key.removeprefix("weight_")] = float(value)
    records: list[dict] = []
    names: list[str] = []
    for path in paths:
        data = json.loads(path.read_text())
        records += data["records"]
        names = list(data["features"])
    wanted = options.get("query_features", "off")
    if wanted not in ("off", "crowd"):
        raise SystemExit(f"query_features={wanted}: only 'crowd' (or 'off') is computed")
    QUESTION_FEATURES[:] = [] if wanted == "off" else [wanted]
    keep = [i for i, n in enumerate(names) if n not in drop.split(",")]
    names = [names[i] for i in keep]
    for r in records:
        r["x"] = [[row[i] for i in keep] for row in r["x"]]
    for item in filter(None, options.get("fixed", "").split(",")):
        name, value = item.split(":")
        FIXED[names.index(name)] = float(value)
    folds = sorted({_fold(r) for r in records})
    rank_only = np.zeros(len(names))
    rank_only[names.index("rank")] = 1.0
    print("| held-out | questions | base all@10 or hit@1 | re-ranker | base any@5 or hit@5 | re-ranker |")
    print("|---|---|---|---|---|---|")
    fold_weights = []
    by_dataset: dict[str, dict[str, list[float]]] = {}
    predicted: list[tuple[str, float, float]] = []  # held out: (dataset, relevance, relevant)
    tops: dict[str, tuple[list[float], list[float]]] = {}  # held out top-1 scores: answerable, not
    firsts: dict[str, list[tuple[float, bool]]] = {}  # held out, answerable: (top-1 score, right)
    for fold in folds:
        train = [r for r in records if _fold(r) != fold]
        w, b = fit_model(train, objective)
        cal = calibrate(train, w, on)
        fold_weights.append(np.append(cal[0][0] * w, cal[1]))  # on the calibrated scale, as shipped
        for dataset in sorted({r["dataset"] for r in records if _fold(r) == fold}):
            test = [r for r in records if _fold(r) == fold and r["dataset"] == dataset]
            agent = any(not r["groups"] for r in test) or test[0].get("stale") is not None
            k1, m1, k2, m2 = (1, "any", 5, "any") if agent else (10, "all", 5, "any")
            figures = (
                _recall(test, rank_only, 0.0, k1, m1),
                _recall(test, w, b, k1, m1),
                _recall(test, rank_only, 0.0, k2, m2),
                _recall(test, w, b, k2, m2),
            )
            answered = sum(1 for r in test if r["groups"])
            for key, value in zip(("base", "rerank", "base5", "rerank5"), figures, strict=True):
                by_dataset.setdefault(dataset, {}).setdefault(key, []).extend([value] * answered)
            unit = test[0]["conversation"]
            print(f"| {dataset}/{unit} | {answered} | " + " | ".join(f"{v:.3f}" for v in figures) + " |")
            pos, neg = tops.setdefault(dataset, ([], []))
            for r in test:
                if len(r["x"]):
                    p = _relevance(r, w, cal)
                    top = np.argsort(-p, kind="stable")[:CALIBRATION_DEPTH]
                    predicted += [(dataset, float(p[i]), 1.0 if r["covers"][i] else 0.0) for i in top]
                    (pos if r["groups"] else neg).append(float(p.max()))
                    if r["groups"]:
                        firsts.setdefault(dataset, []).append((float(p[top[0]]), bool(r["covers"][top[0]])))
    for dataset, t in sorted(by_dataset.items()):
        print(
            f"| **{dataset} (held out, pooled)** | {len(t['base'])} | "
            + " | ".join(f"{np.mean(t[k]):.3f}" for k in ("base", "rerank", "base5", "rerank5"))
            + " |"
        )
    for dataset, (pos, neg) in sorted(tops.items()):
        if neg:
            print(f"\nheld-out abstention AUROC ({dataset}, top-1 relevance): {auroc(pos, neg):.3f}")
    _minimums(firsts, tops)
    _reliability(predicted)
    stack = np.stack(fold_weights)
    w_all, _ = fit_model(records, objective)
    (a_all, *q_all), c_all = calibrate(records, w_all, on)
    print("\n| feature | all data | fold mean | fold min | fold max | shipped |")
    print("|---|---|---|---|---|---|")
    for i, name in enumerate([*names, "bias"]):
        shipped = BIAS if name == "bias" else (WEIGHTS[FEATURES.index(name)] if name in FEATURES else 0.0)
        value = c_all if name == "bias" else a_all * w_all[i]
        spread = stack[:, i]
        print(
            f"| {name} | {value:.3f} | {spread.mean():.3f} | {spread.min():.3f} | "
            f"{spread.max():.3f} | {shipped:.3f} |"
        )
    print(
        f"\ncalibration: relevance = sigmoid({a_all:.3f} * (x . w) + {np.round(q_all, 3).tolist()} . q + {c_all:.3f})"
    )
    print("WEIGHTS =", np.round(a_all * w_all, 3).tolist(), "BIAS =", round(c_all, 3))
    if q_all:
        print("question feature weights (not shipped):", np.round(q_all, 3).tolist())


if __name__ == "__main__":
    command, target, *rest = sys.argv[1:]
    if command == "dump":
        folders = [Path(d) for d in rest if not d.startswith("distractors=")]
        extra = [Path(d.split("=", 1)[1]) for d in rest if d.startswith("distractors=")]
        asyncio.run(dump(Path(target), folders, extra))
    elif command == "fit":
        fit(target, *rest)
    else:
        raise SystemExit(__doc__)
