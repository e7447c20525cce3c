"""The re-ranker's term shares count what a question is about, not the speakers it names."""

from __future__ import annotations

from nous._text import keyword_terms
from nous.retrieval.rerank import FEATURES, CandidateFacts, feature_matrix, stem


def _turn(speaker: str, text: str) -> CandidateFacts:
    return CandidateFacts(
        rrf=1.0,
        rank=0,
        cosine=0.5,
        content=f"{speaker}: {text}",
        context=None,
        session_strength=0.0,
        graph=0.0,
        speaker=speaker,
        role="user",
    )


def test_the_speakers_names_are_not_topic_terms() -> None:
    question = "When does the dance studio of Jon and Gina open?"
    cheer = _turn("Gina", "Go get 'em, Jon!")
    answer = _turn("Jon", "The dance studio opens in May.")
    terms = {stem(t) for t in keyword_terms(question)}
    x = feature_matrix([cheer, answer], terms, question, 50)
    passage, speaker = FEATURES.index("cover_passage"), FEATURES.index("speaker")
    assert x[0, passage] == 0.0  # the cheer shares only the two names
    assert x[1, passage] == 1.0  # "dance studio open" is all the question asks about
    assert x[0, speaker] == x[1, speaker] == 1.0  # naming a turn's speaker still counts


def test_a_role_is_no_name_and_a_question_of_names_alone_keeps_them() -> None:
    question = "Who is Priya?"
    said = CandidateFacts(
        rrf=1.0,
        rank=0,
        cosine=0.5,
        content="user: Priya is my sister.",
        context=None,
        session_strength=0.0,
        graph=0.0,
        speaker="user",
        role="user",
    )
    terms = {stem(t) for t in keyword_terms(question)}
    x = feature_matrix([said], terms, question, 50)
    assert x[0, FEATURES.index("cover_passage")] == 1.0
