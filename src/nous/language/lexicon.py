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
    can may shall broke spoke became drank sank shook hid bit blew dug fed hung lay struck
    """
)
# Adverbs that can follow "I" without being its verb ("I just", "I really").
ADVERBS = _words(
    """
    just really also always never still often usually recently finally actually even only first
    once sometimes ever definitely totally absolutely currently now already probably mostly kinda
    sorta truly honestly personally seriously literally basically generally typically rarely hardly
    barely almost nearly constantly normally eventually soon then
    """
)
# Words that say nothing about a conversation's topic: chat filler, the words of asking for help,
# and common verbs (a topic is a thing, not an action).
GENERIC = _words(
    """
    help helps helped helping example examples code implementation implement implementing implemented
    way ways question questions issue issues problem problems thanks need needs needed want wants wanted
    use uses used using try tries tried trying work works worked working let lets provide provided
    providing suggest suggested suggestions improve improved improving improvements ensure ensuring
    make makes making create creates created creating add adds added adding handle handles handled
    check checks checked checking review reviewed reviewing set sets setting get gets getting give
    understand understanding explain explained see look looking find found show showed shows start
    started starting current currently following here below above step steps approach sure correctly
    properly better best specific specifically basic simple detailed possible actually well sounds
    idea ideas thought thoughts point points part parts bit lot lots able going done doing does
    something anything everything someone anyone everyone maybe perhaps though although however
    since still already yet also even really pretty quite rather much many more most less least
    new old good great nice awesome amazing cool fine okay ok yes yeah hey hello hi wow glad happy
    day days week weeks today tomorrow yesterday time times year years month months morning night
    people person thing things stuff kind sort type types feel feeling felt think thinking thought
    know knowing knew said says say tell told talk talked talking ask asked asking answer answered
    keep kept put come came coming take took taken go went goes gone got like liked likes love loved
    loves enjoy enjoyed recommend recommended consider considering considered include including
    included integrate integrating integrated optimize optimizing optimized write writing written
    wrote fix fixing fixed manage managing managed means mean meant seem seems seemed appreciate
    appreciated definitely absolutely certainly hmm hm umm identify identified additional assistance
    further various different certain overall related relevant potential common general main key
    important proper properly correct ideal next last first second third soon later ago calculate
    total number without within across along among around behind beyond toward towards upon via per
    versus near onto throughout despite except inside outside big small real super excited exciting
    scary hard past another huge little whole entire full free true incredible crazy wild tough fun
    funny interesting favorite favourite special beautiful lovely perfect kinda sorta gonna wanna
    stuff totally literally always never often usually hear heard listen bye goodbye cheers congrats
    congratulations btw wait remember remembered believe believed gotta dunno lemme gimme tho lol
    lmao omg haha hahaha yup nope nah ugh yay
    """
)
# The days of the week, the months and the days said relative to today: a date, never a name or a
# topic ("Jonas: April and recital" is no label).
CALENDAR = _words(
    """
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december today tomorrow yesterday tonight weekend
    """
)
