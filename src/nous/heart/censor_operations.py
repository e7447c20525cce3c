"""Which operation an action performs and which a censor forbids, read from their verbs.

The meaning check of a censor (an embedding of its reason and its pattern's words) reads topic,
not direction: "summarise the audit log" and "purge the audit log" are close, and so are "enable
MFA" and "disable MFA". ``operation_differs`` is the brake on it: when every main verb of the
action is one that cannot do what the censor forbids — it only looks (check, list, read), or it
does the opposite (enable against disable, grant against revoke, mask against export, create
against delete) — the meaning check does not fire. The pattern still does.

It fails safe. A censor whose words name no known operation, an action whose main verb is not in
the table (a command such as ``aws s3 ls``, a verb like "make" or "roll"), or any main verb that
could do the forbidden operation: the meaning check fires as before. Reading more verbs into an
action, or more operations into a censor that names one, only ever makes it fire more.

Words are lemmatised with ``lemminflect`` (its tables ship in the package): "deleting" is
"delete", "summarising" is "summarise"; its dictionary also says whether a word can be a verb
at all, which is how a second verb in an action ("… and delete it") is told from a noun
("… errors and warnings").
"""

from __future__ import annotations

import re
from functools import lru_cache

# Operation classes.
LOOK = "look"  # reads without changing or passing anything on: check, read, inspect
SHOW = "show"  # reads and shows the result to the requester: show, list, summarise
CHANGE = "change"  # changes something in place: set, update, run, deploy, move
CREATE = "create"  # makes something new: create, add, import, install
DESTROY = "destroy"  # removes something: delete, drop, purge, wipe, revoke's data kin
ENABLE = "enable"  # switches something on: enable, start, turn on
DISABLE = "disable"  # switches something off or interrupts it: disable, stop, shut down, restart
GRANT = "grant"  # gives rights: grant, authorise, promote
REVOKE = "revoke"  # takes rights away: revoke, deny, demote
COPY = "copy"  # passes a copy of something on or out, leaving it in place: export, send, print
PROTECT = "protect"  # hides or locks content: mask, redact, encrypt

# The operations that cannot do what a censor forbids, by the forbidden operation. Looking never
# does anything but look; showing passes content to the requester, so it is a way of copying it
# out; copying leaves the original in place, so it destroys nothing. An operation forbidden here
# with nothing listed (look, show: a censor against looking) lets no verb off.
CANNOT_DO: dict[str, frozenset[str]] = {
    DESTROY: frozenset({LOOK, SHOW, CREATE, COPY}),
    CREATE: frozenset({LOOK, SHOW, DESTROY}),
    DISABLE: frozenset({LOOK, SHOW, ENABLE}),
    ENABLE: frozenset({LOOK, SHOW, DISABLE}),
    GRANT: frozenset({LOOK, SHOW, REVOKE}),
    REVOKE: frozenset({LOOK, SHOW, GRANT}),
    COPY: frozenset({LOOK, PROTECT}),
    PROTECT: frozenset({LOOK, SHOW, COPY}),
    CHANGE: frozenset({LOOK, SHOW}),
    LOOK: frozenset(),
    SHOW: frozenset(),
}


def _table(*groups: tuple[str | tuple[str, ...], str]) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for words, operation in groups:
        for word in (words,) if isinstance(words, str) else words:
            table.setdefault(word, set()).add(operation)
    return {word: frozenset(ops) for word, ops in table.items()}


# Verbs (lemmas) and phrasal verbs ("verb particle"), with what they do. Words mostly used as
# nouns in agent actions and censors' reasons ("build", "log", "audit", "access", "report") and
# verbs too light to say what they do ("make", "open", "get", "turn" alone) are left out: a word not
# here is unknown, and an unknown main verb keeps the meaning check. A word may do several things
# ("write" creates, changes and copies out); it cannot do a forbidden operation only if none of
# its operations can.
OPERATIONS: dict[str, frozenset[str]] = _table(
    (
        (
            "check", "read", "inspect", "examine", "verify", "validate", "look", "look up",
            "look at", "look into", "view", "browse", "search", "find", "query", "count",
            "measure", "monitor", "watch", "review", "analyse", "analyze", "compute",
            "calculate", "compare", "peek", "grep", "diff", "ls",
        ),
        LOOK,
    ),
    (
        (
            "show", "list", "display", "summarise", "summarize", "describe", "explain",
            "print", "tell", "preview",
        ),
        SHOW,
    ),
    (
        (
            "set", "change", "update", "modify", "edit", "alter", "raise", "lower", "increase",
            "decrease", "rename", "replace", "patch", "configure", "apply", "migrate", "deploy",
            "ship", "release", "run", "execute", "merge", "commit", "rotate", "move", "write",
            "overwrite", "rewrite", "reset", "push", "transfer", "wire", "pay", "charge", "refund",
            "install", "downgrade", "upgrade", "revert", "roll back", "chmod", "chown", "force",
            "restore",
        ),
        CHANGE,
    ),
    (("create", "add", "insert", "import", "restore", "recover", "undelete", "provision",
      "install", "write", "upload"), CREATE),
    (
        (
            "delete", "drop", "remove", "purge", "truncate", "wipe", "erase", "destroy", "empty",
            "clear", "prune", "kill", "terminate", "discard", "rm", "nuke", "shred", "expunge",
            "unlink", "overwrite", "reset", "void", "cancel", "uninstall", "deprovision",
            "decommission", "downgrade", "revert", "roll back", "tear down", "throw away",
            "throw out", "get rid", "call off", "move",
        ),
        DESTROY,
    ),
    (("enable", "activate", "start", "launch", "resume", "unblock", "unlock", "turn on",
      "switch on", "power on", "start up", "boot"), ENABLE),
    (
        (
            "disable", "deactivate", "stop", "halt", "suspend", "pause", "shutdown", "shut",
            "shut down", "shut off", "turn off", "switch off", "power off", "power down",
            "restart", "reboot", "kill", "terminate", "bypass", "skip", "block", "lock",
        ),
        DISABLE,
    ),
    (("grant", "authorise", "authorize", "promote", "elevate", "allow"), GRANT),
    (("revoke", "deny", "demote", "withdraw"), REVOKE),
    (
        (
            "export", "send", "share", "upload", "download", "copy", "email", "mail", "forward",
            "publish", "post", "tweet", "print", "echo", "paste", "dump", "leak", "expose",
            "disclose", "reveal", "sync", "write", "back up", "unmask", "decrypt", "push", "cat",
            "transfer", "wire",
        ),
        COPY,
    ),
    (("mask", "redact", "encrypt", "anonymise", "anonymize", "pseudonymise", "pseudonymize",
      "hide", "obfuscate", "conceal", "hash", "lock"), PROTECT),
)  # fmt: skip

# Verbs that take a particle ("turn off", "shut down"): the particle may follow the object
# ("turn the flag off"), so the nearest one within the clause counts.
_PARTICLES = frozenset({"on", "off", "up", "down", "away", "out", "back", "at", "into", "rid"})
# Words an imperative may start with before its verb.
_LEADING = frozenset({"please", "kindly", "just", "now", "also", "then", "first", "quickly", "sudo"})
# Auxiliaries and modals: never the operation, the word after them is read instead.
_AUXILIARIES = frozenset(
    {"be", "have", "do", "will", "would", "can", "could", "may", "might", "must", "shall", "should"}
)
_SKIPPED = _AUXILIARIES | {"not", "also", "then", "just", "first"}
# Where a new clause, and so possibly another operation, begins. After a strong break (a command
# separator, "then") the first word is taken as a verb whatever it is; after a weak one ("and",
# "to", "that") only if it can be a verb.
_STRONG_BREAK = re.compile(r"\s*(?:&&|\|\||[;|]|\bthen\b|\n)\s*")
_WEAK_BREAKS = frozenset(
    {"and", "or", "but", "to", "that", "which", "who", "so", "before", "after", "while", ","}
)
_WORD = re.compile(r"[a-z][a-z'_-]*|,")  # fmt: skip


@lru_cache(maxsize=8192)
def _lemmas(word: str) -> tuple[tuple[str, ...], bool]:
    """The word's possible verb lemmas (itself first) and whether the dictionary knows it as a verb."""
    from lemminflect import getAllLemmas, getLemma

    word = word.removesuffix("'s").strip("'-_")
    known = getAllLemmas(word)
    verbs = tuple(known.get("VERB", ())) + tuple(known.get("AUX", ()))
    guessed = () if known else tuple(getLemma(word, upos="VERB"))
    return tuple(dict.fromkeys((word, *verbs, *guessed))), bool(verbs)


def _operations_at(words: list[str], i: int) -> frozenset[str] | None:
    """What the verb at ``words[i]`` does (a phrasal verb read with its particle), or None if
    it is not a verb the table knows."""
    lemmas, _ = _lemmas(words[i])
    particle = next((w for w in words[i + 1 : i + 5] if w in _PARTICLES), None)
    for lemma in lemmas:
        if particle and f"{lemma} {particle}" in OPERATIONS:
            return OPERATIONS[f"{lemma} {particle}"]
    for lemma in lemmas:
        if lemma in OPERATIONS:
            return OPERATIONS[lemma]
    return None


def forbidden_operations(pattern_words: str, reason: str) -> frozenset[str]:
    """Every operation any word of a censor's pattern or reason can name ("never purge the audit
    logs" → destroy). Each operation read narrows what is let off; a censor that names none is
    never let off."""
    found: set[str] = set()
    for text in (pattern_words, reason):
        words = _WORD.findall(text.lower().replace("-", " "))
        for i in range(len(words)):
            ops = _operations_at(words, i)
            if ops:
                found |= ops
    return frozenset(found)


def _main_verbs(clause: str) -> list[frozenset[str] | None]:
    """The operations of a clause's verbs: its first word (after any polite or ``sudo`` lead-in),
    and the first word after each weak break that can be a verb (the dictionary says so, or the
    table knows it: "reboot"). None for an unknown verb."""
    words = _WORD.findall(clause.lower())
    start = 0
    while start < len(words) and (words[start] in _LEADING or words[start] == ","):
        start += 1
    if start == len(words):
        return []
    verbs: list[frozenset[str] | None] = [_operations_at(words, start)]
    for i in range(start + 1, len(words) - 1):
        if words[i] not in _WEAK_BREAKS:
            continue
        j = i + 1
        while j < len(words) and not _SKIPPED.isdisjoint(_lemmas(words[j])[0]):
            j += 1
        if j < len(words) and (_lemmas(words[j])[1] or _operations_at(words, j) is not None):
            verbs.append(_operations_at(words, j))
    return verbs


def action_operations(text: str) -> list[frozenset[str] | None]:
    """The operations of each main verb of an action (None for one the table does not know)."""
    return [ops for clause in _STRONG_BREAK.split(text) if clause.strip() for ops in _main_verbs(clause)]


def operation_differs(pattern_words: str, reason: str, text: str) -> bool:
    """Whether no main verb of ``text`` can do what the censor forbids (its pattern's words and
    its reason name the forbidden operations): then its meaning check does not fire.

    False (the meaning check decides, as without this rule) when the censor names no known
    operation, the action has no verb, or any of its main verbs is unknown or could do one of
    the forbidden operations.
    """
    forbidden = forbidden_operations(pattern_words, reason)
    verbs = action_operations(text)
    if not forbidden or not verbs:
        return False
    for ops in verbs:
        if ops is None:
            return False
        if not all(op in CANNOT_DO[banned] for op in ops for banned in forbidden):
            return False
    return True
