"""Heart: the memory organs."""

from __future__ import annotations

from nous.heart.censor_rules import ActionCheck, ActionDecision, CensorMatch
from nous.heart.censors import Censors
from nous.heart.episodes import Episodes
from nous.heart.facts import Facts
from nous.heart.procedures import Procedures
from nous.heart.sessions import EpisodeAction, EpisodeStart, Sessions
from nous.heart.working_memory import WorkingMemoryOrgan
from nous.memory import MemoryRepository
from nous.memory.write_path import WritePath


class Heart:
    """Facts, episodes, procedures, censors and working memory of one agent."""

    def __init__(self, repo: MemoryRepository, write_path: WritePath | None = None) -> None:
        self.write_path = write_path or WritePath(repo)
        self.facts = Facts(repo, self.write_path)
        self.episodes = Episodes(repo)
        self.sessions = Sessions(repo, self.episodes)
        self.procedures = Procedures(repo, self.write_path)
        self.censors = Censors(repo, self.write_path)
        self.working_memory = WorkingMemoryOrgan(repo)


__all__ = [
    "ActionCheck",
    "ActionDecision",
    "CensorMatch",
    "Censors",
    "EpisodeAction",
    "EpisodeStart",
    "Episodes",
    "Facts",
    "Heart",
    "Procedures",
    "Sessions",
    "WorkingMemoryOrgan",
]
