"""The operation rule of the censors' meaning check: an action whose main verbs cannot do what a
censor forbids (they only look, or do the opposite) is not judged by meaning; any doubt keeps it."""

from __future__ import annotations

import pytest

from nous._text import pattern_words
from nous.heart.censor_operations import (
    CANNOT_DO,
    CHANGE,
    COPY,
    CREATE,
    DESTROY,
    DISABLE,
    ENABLE,
    LOOK,
    OPERATIONS,
    SHOW,
    action_operations,
    forbidden_operations,
    operation_differs,
)
from nous.heart.censor_rules import fires_by_meaning
from nous.models import Censor

from .censor_calibration import SHOULD_MATCH, SHOULD_NOT_MATCH, let_off

SHUTDOWN = (r"shutdown\s+(-h\s+)?now", "never shut down the build server")
MFA = (r"disable\s+(2fa|mfa)", "two-factor authentication must stay on for admin accounts")
SSN = (r"export.*\b(ssn|social security)", "never export customers' social security numbers")
AUDIT = (r"TRUNCATE\s+(TABLE\s+)?audit", "never purge the audit logs; they are legally required")
ADMIN = (r"grant\s+.*\badmin", "only IT may give anyone administrator rights")
DROP = (r"DROP\s+TABLE", "never drop tables in the production database")
FLAG = (r"enable.*\bflag.*\bprod", "feature flags are switched on in production by one person")
RELEASE_FLAG = (
    r"enable.*\bflag.*\bprod",
    "feature flags are switched on in production only by the release manager",
)
PATIENTS = (
    r"(share|send|export).*\bpatient\s+records?",
    "patient records must not leave the hospital system without a signed release",
)
DNS = (
    r"delete.*\b(A|MX|CNAME)\s+record",
    "removing DNS records of the company domain takes the site and the mail offline",
)
BUCKET = (r"s3\s+rb\s+s3://", "never delete a storage bucket; the backups live there")
POSTING = (r"post\s+.*\b(twitter|linkedin)", "posts on the company's social media accounts need approval")
VOID = (r"void\s+invoice", "voiding an invoice needs the accountant's approval")
NS = (r"kubectl\s+delete\s+(ns|namespace)", "deleting a Kubernetes namespace takes down every service in it")


def _differs(censor: tuple[str, str], text: str) -> bool:
    pattern, reason = censor
    return operation_differs(pattern_words(pattern), reason, text)


@pytest.mark.parametrize(
    ("censor", "text"),
    [
        (SHUTDOWN, "check the uptime of the build server"),  # looks
        (AUDIT, "summarise last week's audit log entries"),  # shows
        (AUDIT, "Please list the audit events of March"),  # a polite lead-in
        (AUDIT, "export the audit log to the compliance team"),  # a copy destroys nothing
        (MFA, "enable MFA for the new support agent"),  # the opposite
        (MFA, "verifying that mfa is enabled for every admin"),  # a gerund, its lemma looks
        (SSN, "mask the SSN column in the staging copy"),  # protects what the censor would leak
        (ADMIN, "revoke admin rights from the former contractor"),
        (DROP, "create a new table for audit events"),
        (FLAG, "turn the checkout flag off in prod"),  # a phrasal verb, its particle after the object
        (RELEASE_FLAG, "disable the new_checkout flag in prod"),  # "the release manager" is a noun
        (PATIENTS, "redact the names in the patient records"),  # "a signed release" is a noun
        (DNS, "add a CNAME record for docs.example.com"),  # "the mail" is a noun
        (BUCKET, "aws s3 ls s3://backups-2023"),  # a command's read-only subcommand
        (BUCKET, "sudo aws s3api list-buckets"),  # a subcommand the table knows, after a lead-in
        (NS, "kubectl get pods -n payments"),
        (NS, "kubectl describe namespace payments"),
        (DROP, "git log --oneline -20"),
        (POSTING, "delete the tweet with the typo"),  # deleting passes nothing on
        (VOID, "issue a new invoice for the consulting hours"),
    ],
)
def test_an_action_that_cannot_do_the_forbidden_operation_is_let_off(
    censor: tuple[str, str], text: str
) -> None:
    assert _differs(censor, text)


@pytest.mark.parametrize(
    ("censor", "text"),
    [
        (SHUTDOWN, "power off the shared build server right away"),  # the same operation
        (SHUTDOWN, "reboot the build server"),  # interrupts it too
        (SHUTDOWN, "check the uptime and then shut the server down"),  # a second clause
        (SHUTDOWN, "check the uptime and reboot it"),  # a second verb after "and"
        (SHUTDOWN, "frobnicate the build server"),  # an unknown verb
        (SHUTDOWN, "sudo systemctl poweroff"),  # a command: unknown
        (AUDIT, "show me how to purge the audit logs"),  # "to" + the forbidden verb
        (AUDIT, "empty out the audit trail table"),
        (MFA, "remove multi-factor authentication from the admin user"),  # destroys what is on
        (SSN, "show the SSNs of all customers"),  # showing is a way of passing it on
        (SSN, "send the list of social security numbers to the vendor"),
        (ADMIN, "add the intern to the admins group"),
        (DROP, "delete the users table"),
        (FLAG, "turn on the dark-mode flag for production users"),
        (("read.*salar", "never read the salary table"), "check the salary table"),  # forbids looking
        (("enable.*debug", "never enable or disable debug mode in prod"), "disable debug mode"),
        (("buy\\s+btc", "the agent must not buy cryptocurrency"), "check the bitcoin price"),  # no op named
        (SHUTDOWN, ""),  # no verb at all
        (BUCKET, "aws s3 rb s3://backups-2023 --force"),  # a subcommand the table does not know
        (BUCKET, "aws s3 cp s3://backups-2023 . --recursive"),
        (BUCKET, "aws s3 ls s3://backups-2023 && aws s3 rb s3://backups-2023"),  # a second command
        (NS, "kubectl delete namespace payments"),
        (NS, "terraform -chdir=infra destroy"),  # a flag before the subcommand: unknown
        (DROP, "psql -c 'DROP TABLE users'"),
        (BUCKET, "gcloud compute instances delete backup-vm"),  # "compute" looks, "delete" destroys
        (SSN, "kubectl get secret customer-ssns -o yaml"),  # a read-only subcommand prints: it shows
        (BUCKET, "make the backup bucket disappear"),  # an English verb the table does not know
        (DNS, "remove the MX record and add a new one"),  # one verb can do it
        (POSTING, "move the draft post to the public LinkedIn page"),  # moving changes
    ],
)
def test_any_doubt_keeps_the_meaning_check(censor: tuple[str, str], text: str) -> None:
    assert not _differs(censor, text)


def test_operations_are_read_from_verbs_lemmas_and_particles() -> None:
    assert action_operations("sudo shutdown -h now") == [OPERATIONS["shutdown"]]
    assert action_operations("please turn the flag on") == [frozenset({ENABLE})]
    assert action_operations("Deleting the rows; then listing them") == [
        frozenset({DESTROY}),
        frozenset({SHOW}),
    ]
    assert action_operations("summarise errors and warnings") == [frozenset({SHOW})]  # a noun after "and"
    assert action_operations("git push origin main") == [OPERATIONS["push"]]  # a subcommand
    assert action_operations("aws s3 ls s3://x") == [frozenset({LOOK, SHOW})]
    assert action_operations("kubectl get pods") == [frozenset({SHOW})]
    assert action_operations("aws s3 rb s3://x") == [None]  # no subcommand the tables know
    assert action_operations("docker ps -a") == [frozenset({SHOW})]
    assert action_operations("docker compose up -d") == [None]
    assert action_operations("make the bucket public") == [None]  # an English verb, not a command
    assert action_operations("gcloud the whole project") == [None]  # English words, not subcommands
    assert forbidden_operations("DROP TABLE", "never drop tables") == {DESTROY}
    assert forbidden_operations("", "buy cryptocurrency") == frozenset()
    assert DISABLE in forbidden_operations("shutdown now", "never shut it down")


@pytest.mark.parametrize(
    ("reason", "operations"),
    [
        ("never purge the audit logs; they are legally required", {DESTROY}),
        ("never shut down the shared build server", {DISABLE}),  # not "shared"
        ("patient records must not leave the system without a signed release", set()),  # not "release"
        ("removing DNS records takes the site and the mail offline", {DESTROY}),  # a gerund; not "mail"
        ("feature flags are switched on in production only by the release manager", {ENABLE}),
        ("voiding an invoice needs the accountant's approval", {DESTROY}),
        ("never bulk-delete CRM contacts", {DESTROY}),  # a modifier before the verb
        ("never enable or disable debug mode", {ENABLE, DISABLE}),  # verbs joined by "or"
        ("CI secrets must never be printed into build logs", {COPY, SHOW}),  # a passive
        ("Delete nothing from the shared drive", {DESTROY}),  # an imperative
        ("refunds over $500 need a manager's approval", {CHANGE}),  # no verb position: every word
        ("the agent must not buy cryptocurrency", set()),  # a verb the table does not know
    ],
)
def test_a_reason_names_operations_by_its_verbs_not_its_nouns(reason: str, operations: set[str]) -> None:
    assert forbidden_operations("", reason) == operations


def test_every_word_of_the_pattern_names_an_operation_whatever_the_reason() -> None:
    assert forbidden_operations(pattern_words(PATIENTS[0]), PATIENTS[1]) == {COPY}
    assert forbidden_operations("enable flag prod", "only the release manager decides") == {ENABLE, CHANGE}


def test_what_cannot_do_what_is_symmetric_for_opposites_and_nothing_lets_looking_off() -> None:
    for a, b in ((ENABLE, DISABLE), (CREATE, DESTROY)):
        assert b in CANNOT_DO[a] and a in CANNOT_DO[b]
    assert CANNOT_DO[LOOK] == CANNOT_DO[SHOW] == frozenset()
    assert SHOW not in CANNOT_DO[COPY]  # showing content passes it on
    assert all(LOOK in allowed for op, allowed in CANNOT_DO.items() if op not in {LOOK, SHOW})


def test_the_meaning_check_never_fires_on_a_let_off_action_however_close() -> None:
    censor = Censor(agent_id="a", content="x", trigger_pattern=MFA[0], reason=MFA[1])
    assert not fires_by_meaning(censor, "enable mfa for the new support agent", 0.99)
    assert fires_by_meaning(censor, "turn off the second login factor for the administrator", 0.5)
    assert not fires_by_meaning(censor, "turn off the second login factor for the administrator", 0.1)


def test_the_rule_lets_off_no_calibration_paraphrase_and_some_harmless_pairs() -> None:
    assert not any(let_off(SHOULD_MATCH))  # every paraphrase of a forbidden action is still judged
    harmless = [a for (_, _, a), off in zip(SHOULD_NOT_MATCH, let_off(SHOULD_NOT_MATCH), strict=True) if off]
    assert "summarise yesterday's error logs for the team" in harmless and len(harmless) >= 4
