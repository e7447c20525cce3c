"""Synthetic but realistic memories for scale benchmarks: varied people, places, tools, plans."""

from __future__ import annotations

import random

PEOPLE = [
    "Alice",
    "Bob",
    "Chen",
    "Dana",
    "Emeka",
    "Farah",
    "Gus",
    "Hana",
    "Ivan",
    "Jia",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Yara",
]
PLACES = [
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Denver",
    "Tallinn",
    "Bogotá",
    "Melbourne",
    "Reykjavik",
    "Seoul",
    "Cape Town",
    "Montreal",
    "Porto",
    "Hanoi",
    "Krakow",
    "Austin",
    "Marseille",
]
TOOLS = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "Terraform",
    "Kubernetes",
    "React",
    "Django",
    "FastAPI",
    "Rust",
    "Go",
    "Airflow",
    "Grafana",
    "Snowflake",
    "dbt",
    "Nginx",
    "RabbitMQ",
    "Elasticsearch",
    "Vue",
]
FOODS = ["ramen", "tacos", "sushi", "falafel", "pho", "dumplings", "paella", "curry", "pizza", "bibimbap"]
HOBBIES = [
    "rock climbing",
    "sourdough baking",
    "chess",
    "trail running",
    "pottery",
    "birdwatching",
    "salsa dancing",
    "woodworking",
    "photography",
    "sailing",
    "gardening",
    "the violin",
]
PROJECTS = [
    "billing service",
    "search revamp",
    "mobile app",
    "data warehouse",
    "onboarding flow",
    "fraud model",
    "design system",
    "checkout page",
    "recommendation engine",
    "internal wiki",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

TEMPLATES = [
    "{p} prefers {t} over {t2} for the {proj}.",
    "{p} is allergic to {f} and avoids it at team dinners.",
    "{p} moved to {pl} in {m} and works remotely from there.",
    "The {proj} deadline moved to {m} {d} after the review with {p}.",
    "{p} spends weekends on {h} and wants to try it in {pl}.",
    "We decided to migrate the {proj} from {t2} to {t} because of latency spikes.",
    "{p} owns the on-call rotation for the {proj} during {m}.",
    "The retro found that the {proj} outage was caused by a misconfigured {t} cluster.",
    "{p} recommended a {f} place near the office in {pl}.",
    "Budget for the {proj} is {n},000 dollars for the next quarter.",
    "{p} and {p2} are pairing on the {proj} using {t}.",
    "Never deploy the {proj} on Fridays; {p} insists on a freeze window.",
    "{p} learned {h} last {m} and now teaches a beginner class.",
    "The {proj} load test reached {n}00 requests per second on {t}.",
    "{p} flies to {pl} on {m} {d} for the customer workshop.",
    "{p} dislikes long meetings and prefers written updates about the {proj}.",
]


def _fill(rng: random.Random, template: str) -> str:
    p, p2 = rng.sample(PEOPLE, 2)
    t, t2 = rng.sample(TOOLS, 2)
    return template.format(
        p=p,
        p2=p2,
        t=t,
        t2=t2,
        pl=rng.choice(PLACES),
        f=rng.choice(FOODS),
        h=rng.choice(HOBBIES),
        proj=rng.choice(PROJECTS),
        m=rng.choice(MONTHS),
        d=rng.randint(1, 28),
        n=rng.randint(2, 90),
    )


def synthetic_memories(n: int, *, seed: int = 7) -> list[str]:
    """``n`` distinct memory sentences."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        text = _fill(rng, rng.choice(TEMPLATES))
        if text in seen:
            text = f"{text} (note {len(seen)})"
        seen[text] = None
    return list(seen)


QUESTIONS = [
    "What does {p} prefer for the {proj}?",
    "Who is allergic to {f}?",
    "Where did {p} move?",
    "When is the {proj} deadline?",
    "What does {p} do on weekends?",
    "Why did we migrate the {proj}?",
    "Who is on call for the {proj}?",
    "What caused the {proj} outage?",
    "What is the budget for the {proj}?",
    "When does {p} fly to {pl}?",
]


def synthetic_queries(n: int, *, seed: int = 11) -> list[str]:
    """``n`` questions in the same vocabulary as the memories."""
    rng = random.Random(seed)
    return [_fill(rng, rng.choice(QUESTIONS)) for _ in range(n)]
