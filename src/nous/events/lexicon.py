"""Word lists for the offline summariser and extractor (English)."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words and chat filler: never key phrases, not content.
STOP_WORDS = _words(
    """
    a about above after again against all also am amazing an and any anything are as at awesome be
    because been before being below between both but by can cool could definitely did do does doing
    down during each even ever every everything feel felt few for from further get glad going gonna
    good got great had happy has have having he her here hers herself hey hi him himself his how i
    if in into is it its itself just kind know like lot lots love made make maybe me more most much
    my myself nice no nor not now of off on once one only or other our ours out over own pretty
    really right said same she should so some something such sure than thank thanks that the their
    theirs them then there these they thing things think this those through time to today too
    totally two under until up very want was way we well were what when where which while who whom
    why will with would wow yeah yes yesterday you your yours yourself
    """
)
# Past tenses and modals that take no agreement change ("I went" -> "Caroline went").
IRREGULAR_PAST = _words(
    """
    went was were had did got made took saw came found felt thought knew told gave bought ran met
    left began brought built caught chose drew drove ate fell fought flew forgot grew heard held
    kept led lent lost meant paid put read rode rose said sat sent set shot sang slept spent stood
    stole swam taught tore threw understood woke wore won wrote could would should might must will
    can may shall
    """
)
# Adverbs that can follow "I" without being its verb ("I just", "I really").
ADVERBS = _words(
    """
    just really also always never still often usually recently finally actually even only
    """
)
