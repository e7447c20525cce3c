"""Which operation an action performs and which a censor forbids, read from their verbs.

The meaning check of a censor (an embedding of its reason and its pattern's words) reads topic,
not direction: "summarise the audit log" and "purge the audit log" are close, and so are "enable
MFA" and "disable MFA". ``operation_differs`` is the brake on it: when every main verb of the
action is one that cannot do what the censor forbids — it only looks (check, list, read), or it
does the opposite (enable against disable, grant against revoke, mask against export, create
against delete) — the meaning check does not fire. The pattern still does.

A censor's operations are read from every word of its pattern ("DROP TABLE") and from the words
of its reason in verb position ("never **purge** the audit logs", "**voiding** an invoice needs…",
"flags are **switched on** only by the release manager"), so that nouns in a reason ("a signed
release", "the mail") forbid nothing; a reason with no verb in verb position is read word by word.
An action's main verbs are the first word of each clause and the verbs after "and", "to"…; a
command line (its first word is no English verb: ``aws``, ``kubectl``, ``git``) is read by its
subcommand (``aws s3 ls`` shows, ``kubectl delete`` destroys).

It fails safe. A censor whose words name no known operation, an action whose main verb is not in
the table (a verb like "make", a subcommand such as ``aws s3 rb``), or any main verb that could do
the forbidden operation: the meaning check fires as before. Reading more verbs into an action, or
more operations into a censor that names one, only ever makes it fire more.

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
# out; copying leaves the original in place, so it destroys nothing, and destroying passes
# nothing on, so it copies nothing out ("delete the tweet" against a censor on posting). An
# operation forbidden here with nothing listed (look, show: a censor against looking) lets no verb
# off.
CANNOT_DO: dict[str, frozenset[str]] = {
    DESTROY: frozenset({LOOK, SHOW, CREATE, COPY}),
    CREATE: frozenset({LOOK, SHOW, DESTROY}),
    DISABLE: frozenset({LOOK, SHOW, ENABLE}),
    ENABLE: frozenset({LOOK, SHOW, DISABLE}),
    GRANT: frozenset({LOOK, SHOW, REVOKE}),
    REVOKE: frozenset({LOOK, SHOW, GRANT}),
    COPY: frozenset({LOOK, PROTECT, DESTROY}),
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
            "restore", "fix", "mark", "switch", "store", "roll out",
        ),
        CHANGE,
    ),
    (("create", "add", "insert", "import", "restore", "recover", "undelete", "provision",
      "install", "write", "upload", "issue", "draft", "store"), CREATE),
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
      "switch on", "power on", "start up", "boot", "roll out"), ENABLE),
    (
        (
            "disable", "deactivate", "stop", "halt", "suspend", "pause", "shutdown", "shut",
            "shut down", "shut off", "turn off", "switch off", "power off", "power down",
            "restart", "reboot", "kill", "terminate", "bypass", "skip", "block", "lock",
        ),
        DISABLE,
    ),
    (("grant", "authorise", "authorize", "promote", "elevate", "allow", "give", "approve", "sign",
      "countersign"), GRANT),
    (("sign", "countersign"), CREATE),
    (("revoke", "deny", "demote", "withdraw", "reject"), REVOKE),
    (
        (
            "export", "send", "share", "upload", "download", "copy", "email", "mail", "forward",
            "publish", "post", "tweet", "print", "echo", "paste", "dump", "leak", "expose",
            "disclose", "reveal", "sync", "write", "back up", "unmask", "decrypt", "push", "cat",
            "transfer", "wire", "fetch", "remind", "notify", "inform", "message", "text", "ask",
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


# Read-only subcommands of command-line tools (``aws s3 ls``, ``kubectl get``, ``git log``): read
# only in a command's subcommand position, where they print what they read (so they show, as
# ``cat`` copies out). As English words most are nouns or too light ("log", "get", "status").
SUBCOMMANDS: dict[str, frozenset[str]] = {
    word: frozenset({SHOW})
    for word in (
        "ls",
        "list",
        "get",
        "describe",
        "show",
        "status",
        "head",
        "log",
        "logs",
        "ps",
        "info",
        "version",
    )
}
# Words a command's subcommand chain stops at: an English sentence, not a command line.
_FUNCTION_WORDS = frozenset(
    {"the", "a", "an", "my", "our", "your", "their", "its", "this", "that", "these", "those", "all",
     "every", "each", "some", "any", "to", "of", "for", "from", "in", "on", "at", "with", "and", "or"}
)  # fmt: skip
_PLAIN_TOKEN = re.compile(r"[a-z][a-z0-9_-]*")

# In a censor's reason, the word after one of these is in verb position ("never **purge** …", "must
# not **leave** …", "are **switched on** …", "without **asking**"), skipping the words in
# _VERB_LEAD_SKIP; so is a clause's first word when it is an imperative or a gerund ("**voiding**
# an invoice needs …"), and a verb joined to one of these by "and", "or", "nor" ("never enable or
# **disable** …").
_VERB_TRIGGERS = frozenset(
    {"never", "not", "no", "to", "without", "don't", "dont", "cannot", "can't", "won't", "mustn't",
     "shouldn't", "must", "may", "can", "should", "shall", "will", "would", "could", "might",
     "is", "are", "was", "were", "be", "been", "being"}
)  # fmt: skip
_VERB_LEAD_SKIP = frozenset({"not", "never", "ever", "be", "been", "being", "only", "also", "just", "even"})
_DETERMINERS = frozenset(
    {"a", "an", "the", "this", "that", "these", "those", "my", "our", "your", "their", "its", "his",
     "her", "any", "some", "every", "each", "all", "no"}
)  # fmt: skip
_COORDINATORS = frozenset({"and", "or", "nor"})
_CLAUSE_BREAK = re.compile(r"[;:.!?()\n]+|\s[-–—]\s")


def _is_verb(word: str) -> bool:
    return _lemmas(word)[1]


@lru_cache(maxsize=4096)
def _is_base_form(word: str) -> bool:
    """Whether the word is a verb's base form ("delete", not "deletes" or "deleted")."""
    from lemminflect import getAllLemmas

    return word in getAllLemmas(word).get("VERB", ())


def _reason_operations(reason: str) -> tuple[frozenset[str], bool]:
    """The operations a censor's reason names in verb position, and whether it has any verb in
    verb position at all (one the table does not know counts: "must not **leave** the system")."""
    found: set[str] = set()
    any_verb = False
    for clause in _CLAUSE_BREAK.split(reason.lower().replace("-", " ")):
        words = _WORD.findall(clause)
        positions: list[int] = []
        if words and _is_verb(words[0]) and (_is_base_form(words[0]) or words[0].endswith("ing")):
            positions.append(0)  # an imperative or a gerund
        for i, word in enumerate(words):
            if word not in _VERB_TRIGGERS:
                continue
            j = i + 1
            while j < len(words) and (words[j] in _VERB_LEAD_SKIP or words[j].endswith("ly")):
                j += 1
            if j >= len(words) or words[j] in _DETERMINERS or words[j] == ",":
                continue
            if _operations_at(words, j) is None and j + 1 < len(words) and _operations_at(words, j + 1):
                j += 1  # a modifier before the verb: "never bulk-delete"
            positions.append(j)
        k = 0
        while k < len(positions):  # verbs joined to one in verb position: "enable or disable"
            j = positions[k] + 1
            if j + 1 < len(words) and words[j] in _COORDINATORS and j + 1 not in positions:
                positions.append(j + 1)
            k += 1
        for j in dict.fromkeys(positions):
            ops = _operations_at(words, j)
            if ops:
                found |= ops
                any_verb = True
            elif _is_verb(words[j]):
                any_verb = True
    return frozenset(found), any_verb


# Read word by word, a reason's words for looking and showing are nouns naming what a permitted
# action needs ("need marketing approval and an opt-out **check**", "the customer **list**"), not
# what the censor forbids: there they name no operation.
_NOUN_LOOKS = frozenset({LOOK, SHOW})


def forbidden_operations(pattern_words: str, reason: str) -> frozenset[str]:
    """The operations a censor forbids: those any word of its pattern names ("DROP TABLE" →
    destroy), and those its reason names in verb position ("never purge the audit logs" → destroy;
    not "a signed release" or "the mail", nouns). A reason with no verb in verb position ("refunds
    over $500 need a manager's approval") is read word by word, its nouns standing for the
    operation. Each operation read narrows what is let off; a censor that names none is never let
    off."""
    found: set[str] = set()
    words = _WORD.findall(pattern_words.lower().replace("-", " "))
    for i in range(len(words)):
        ops = _operations_at(words, i)
        if ops:
            found |= ops
    from_reason, has_verb = _reason_operations(reason)
    if has_verb:
        return frozenset(found | from_reason)
    words = _WORD.findall(reason.lower().replace("-", " "))
    for i in range(len(words)):
        ops = _operations_at(words, i)
        if ops:
            found |= ops - _NOUN_LOOKS
    return frozenset(found)


def _subcommand_operations(tokens: list[str]) -> frozenset[str] | None:
    """What a command line does, read from its subcommand chain: the plain words after the
    command up to the first argument, flag or path (``aws s3 ls s3://x`` → ``s3 ls``). Every
    operation any of them names in the table or SUBCOMMANDS (a hyphenated one also by its first
    part: ``list-buckets``), so ``gcloud compute instances delete`` destroys whatever "compute"
    says. None when none names one, or the words read as English (an article, a preposition)."""
    found: set[str] = set()
    for token in tokens[1:]:
        if not _PLAIN_TOKEN.fullmatch(token):
            break
        if token in _FUNCTION_WORDS:
            return None
        for word in (token, token.split("-")[0]):
            found |= OPERATIONS.get(word, frozenset()) | SUBCOMMANDS.get(word, frozenset())
    return frozenset(found) or None


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
    first = _operations_at(words, start)
    if first is None and not _is_verb(words[start]):
        # Not an English verb (``aws``, ``kubectl``, ``git``): a command, read by its subcommand.
        tokens = clause.lower().split()
        while tokens and tokens[0].strip(",") in _LEADING:
            tokens = tokens[1:]
        first = _subcommand_operations(tokens)
    verbs: list[frozenset[str] | None] = [first]
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
