"""Does a near-identical statement say something different? Checks cosine cannot make.

Sentence embeddings put "I love dogs" and "I don't love dogs" (or "7 days" and "10 days",
"from Postgres to MongoDB" and "from MongoDB to Postgres", "two adults" and "two adults and one
child") closer than most true paraphrases, so similarity alone would merge them as duplicates and
lose the change; and they put "2,000 mg" and "2 g" apart although they say the same.

What is compared (``find_conflict``), on each statement's reading (``nous.memory.meaning``):

- **Change markers** ("no longer", "stopped", "migrated to", "now", "these days") on one side
  only: the newer statement replaces the older one.
- **Values**: numbers with units normalised, times of day, dates; any value on one side that
  the other lacks is a different statement, however it is worded.
- **Polarity, modality and quantifiers**: "not" / "may not" / "prohibited" on one side only;
  "may" against "must"; "always" against "sometimes", "all" against "only".
- **Edits.** A paraphrase rewords freely; an update or a contradiction keeps the sentence and
  changes a slot. When two statements are mostly the same words in the same order (a token
  sequence match of at least ``EDIT_RATIO``, or a short statement with one or two words
  replaced), any changed word other than filler ("I think", "btw", "really") is a real change,
  and words added with "and" are an added item ("French" / "French and Italian").

Each reason is reported as a ``ConflictKind`` for the caller's message. A statement judged
different is kept beside the old one (linked, or superseding it); only the absence of any
difference lets the similarity call two statements duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum

from nous.memory.meaning import (
    CHANGE_MARKERS,
    NEGATORS,
    Reading,
    describe,
    lemma,
    marker_kinds,
    normalise,
    read,
    same_quantities,
)


def _words(text: str) -> list[str]:
    return text.split()


class ConflictKind(StrEnum):
    NUMBER = "changed_number"
    ADDED_NUMBER = "number_on_one_side"  # a detail one statement gives and the other lacks
    NEGATION = "negation"
    MODALITY = "changed_modality"
    QUANTIFIER = "quantifier"
    TENSE = "change_over_time"
    ORDER = "swapped_roles"
    SET = "changed_set"
    SUBSTITUTION = "changed_detail"


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why two similar statements are not the same statement."""

    kind: ConflictKind
    detail: str


_FILLER = frozenset(
    _words("i think btw really just actually basically so also um ok okay the a an be do there")
)
# Words whose swap keeps a statement's meaning: prepositions of time and place that say the same
# relation ("on / during weekends", "in / at the office") and determiners. Directional words
# (from, to, before, after, over, under...) are not here: swapping them changes the statement.
_INTERCHANGEABLE = frozenset(_words("on in at during within throughout the a an this that these those its"))
# Words that add an item to a list: "two cats" / "two cats and a dog".
_COORDINATION = frozenset(_words("and plus both well"))
# Words that differ in meaning although one begins with the other ("with" / "without").
_NEVER_VARIANTS = frozenset(_words("with without not no none able unable like unlike"))
EDIT_RATIO = 0.6  # token-sequence similarity from which two statements count as an edit


def _same_word(x: str, y: str) -> bool:
    """Spelling variants, typos and abbreviations: colour / color, cancelled / canceled, min /
    minute, tyres / tires, alergic / allergic."""
    if x in _NEVER_VARIANTS or y in _NEVER_VARIANTS or x.isdigit() or y.isdigit():
        return False
    if min(len(x), len(y)) >= 3 and (x.startswith(y) or y.startswith(x)):
        return True
    return len(x) >= 4 and x[0] == y[0] and SequenceMatcher(a=x, b=y).ratio() >= 0.8


def _unify_spelling(ta: list[str], tb: list[str]) -> list[str]:
    """``tb`` with each word that is a spelling variant of a word of ``ta`` replaced by it."""
    vocab = set(ta)
    return [t if t in vocab else next((v for v in vocab if _same_word(v, t)), t) for t in tb]


def has_change_marker(text: str) -> bool:
    """Whether ``text`` states a lasting change ("no longer", "moved to", "was pushed back")."""
    return CHANGE_MARKERS.search(normalise(text)) is not None


def find_conflict(a: str, b: str) -> Conflict | None:
    """The reason ``a`` and ``b`` differ in meaning despite looking alike, or None.

    What the statements say is compared first (``nous.memory.meaning``): a change marker on one
    side only, other values (units converted, numbers in words read), a negation on one side only,
    another modality or quantifier. Then the words, once normalised (lemmas, "the user" = "I",
    spelling variants): an edit of the same sentence that adds a coordinated item ("two cats and a
    dog") or changes a slot is a different statement; a rewording is left to the similarity."""
    ra, rb = read(a), read(b)
    # An explicit change ("was pushed back to Monday", "no longer") on one side says more than the
    # changed number or detail it brings: the newer statement replaces the older one.
    if marker_kinds(ra.markers) != marker_kinds(rb.markers):
        return Conflict(
            ConflictKind.TENSE, f"{', '.join(ra.markers) or '-'} / {', '.join(rb.markers) or '-'}"
        )
    if not same_quantities(ra, rb):
        if not ra.quantities or not rb.quantities:  # more detail on one side, not another value
            return Conflict(ConflictKind.ADDED_NUMBER, describe(ra.quantities or rb.quantities))
        return Conflict(ConflictKind.NUMBER, f"{describe(ra.quantities)} / {describe(rb.quantities)}")
    if ra.negations % 2 != rb.negations % 2 and (
        _aligned(ra.tokens, rb.tokens) or _denies(ra, rb) or _denies(rb, ra)
    ):
        # A negation on one side, of the same sentence or of what the other side says ("not
        # allergic to penicillin" / "allergic to penicillin"): "dislike" / "don't like", "vegan" /
        # "eats no meat", "never trade on weekends" / "weekend trading is thin" are left alone.
        return Conflict(ConflictKind.NEGATION, "negated on one side only")
    if ra.modality and rb.modality and ra.modality != rb.modality:
        return Conflict(
            ConflictKind.MODALITY, f"{' '.join(sorted(ra.modality))} / {' '.join(sorted(rb.modality))}"
        )
    qa, qb = ra.quantifiers, rb.quantifiers
    # "every Monday" / "on Mondays" say the same; "always" / "sometimes", "all" / "only" do not.
    if qa != qb and ((qa and qb) or (qa | qb) - {"all", "most"}) and _aligned(ra.tokens, rb.tokens):
        return Conflict(ConflictKind.QUANTIFIER, f"{' '.join(sorted(qa))} / {' '.join(sorted(qb))}")
    # Markers and negations were compared above; what is left is the statement they apply to.
    # Negations stay as one word, where they stand: "do not contact X; go through Y" is not
    # "contact X; do not go through Y".
    marker_words = {lemma(w) for m in ra.markers + rb.markers for w in m.split()} - NEGATORS
    ta = ["not" if t in NEGATORS else t for t in ra.tokens if t not in marker_words]
    tb = ["not" if t in NEGATORS else t for t in rb.tokens if t not in marker_words]
    tb = _unify_spelling(ta, tb)
    if _copula_swap(ta, tb):
        return None  # "Tom is my manager" / "my manager is Tom"
    ca = [t for t in ta if t not in _FILLER]
    cb = [t for t in tb if t not in _FILLER]
    if ca == cb:
        return None
    if sorted(ca) == sorted(cb):
        if any(ca[k:] + ca[:k] == cb for k in range(1, len(ca))):
            return None  # a phrase moved to the front: "on weekends Maria volunteers at ..."
        return Conflict(ConflictKind.ORDER, "same words in another order")
    # Words added on one side only, with a phrase or one word moved ("My doctor told me to take X
    # at night" / "X at night, per my doctor"; "We don't allow pets in the flat" / "Pets are not
    # allowed in the apartment"): more detail, as when nothing moved. Two words that trade places
    # ("Alice pays Bob" / "Bob pays Alice") are not one word moved.
    only_a, only_b = [t for t in ca if t not in cb], [t for t in cb if t not in ca]
    if not only_a or not only_b:
        ka, kb = [t for t in ca if t in cb], [t for t in cb if t in ca]
        blocks = SequenceMatcher(a=ka, b=kb, autojunk=False).get_matching_blocks()
        kept = {i for block in blocks for i in range(block.a, block.a + block.size)}
        displaced = {ka[i] for i in range(len(ka)) if i not in kept}
        # a person who moves may have changed roles: "Tom is my manager at work" / "I am Tom's manager"
        moved = (len(displaced) <= 1 and not displaced & _PERSONS) or any(
            ka[k:] + ka[:k] == kb for k in range(1, len(ka))
        )
        # an item added with "and" (or an "and" moved) is judged below, as in an edit
        if moved and len(ka) == len(kb) and not set(ca + cb) & _COORDINATION:
            return None
    matcher = SequenceMatcher(a=ca, b=cb, autojunk=False)
    changed_a, changed_b = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            changed_a.extend(ca[i1:i2])
            changed_b.extend(cb[j1:j2])
    # An edit keeps the sentence and changes a slot: mostly the same words in the same order, or a
    # short statement with one or two words replaced ("I support Arsenal" / "I support Chelsea").
    slot = 0 < len(changed_a) <= 2 and 0 < len(changed_b) <= 2 and matcher.ratio() > 0
    added = not changed_a or not changed_b  # one statement is the other with words added
    if matcher.ratio() < EDIT_RATIO and not slot and not added:
        return None  # reworded: a paraphrase or another statement, for the similarity to judge
    changed = set(changed_a) | set(changed_b)
    if changed <= _INTERCHANGEABLE:
        return None  # "on weekends" / "during weekends": the same statement
    if not changed_a or not changed_b:  # words on one side only
        if changed & _COORDINATION:
            return Conflict(ConflictKind.SET, f"{' '.join(changed_a or changed_b)} on one side only")
        return None  # more detail, not a different statement
    return Conflict(
        ConflictKind.SUBSTITUTION, f"{' '.join(sorted(set(changed_a)))} / {' '.join(sorted(set(changed_b)))}"
    )


def _denies(negating: Reading, other: Reading) -> bool:
    """Whether ``negating`` negates a word ``other`` affirms, and the two say mostly the same (two
    thirds of the shorter one's content words are in the other)."""
    if not negating.negated & set(other.tokens):
        return False
    mine, theirs = (
        {t for t in r.tokens if t not in _FILLER and t not in NEGATORS} for r in (negating, other)
    )
    return len(mine & theirs) >= 2 / 3 * min(len(mine), len(theirs))


def _aligned(ta: tuple[str, ...], tb: tuple[str, ...]) -> bool:
    """Whether two token sequences are one sentence, edited (a sequence match of ``EDIT_RATIO``)."""
    return SequenceMatcher(a=ta, b=tb, autojunk=False).ratio() >= EDIT_RATIO


def _copula_swap(ca: list[str], cb: list[str]) -> bool:
    """ "X is Y" / "Y is X": the same words around one "be", its sides swapped."""
    ca, cb = [t for t in ca if t not in _ARTICLES], [t for t in cb if t not in _ARTICLES]
    if ca.count("be") != 1 or cb.count("be") != 1:
        return False
    i, j = ca.index("be"), cb.index("be")
    return ca[:i] == cb[j + 1 :] and ca[i + 1 :] == cb[:j]


_ARTICLES = frozenset(_words("the a an"))
_PERSONS = frozenset(_words("i we you he she they him her us them"))
