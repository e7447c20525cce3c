"""Heart: the memory organs."""

from __future__ import annotations

from nous.heart.censors import CensorMatch, Censors
from nous.heart.episodes import Episodes
from nous.heart.facts import Facts
from nous.heart.procedures import Procedures
from nous.heart.working_memory import WorkingMemoryOrgan
from nous.memory import MemoryRepository


class Heart:
    """Facts, episodes, procedures, censors and working memory of one agent."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.facts = Facts(repo)
        self.episodes = Episodes(repo)
        self.procedures = Procedures(repo)
        self.censors = Censors(repo)
        self.working_memory = WorkingMemoryOrgan(repo)


__all__ = ["CensorMatch", "Censors", "Episodes", "Facts", "Heart", "Procedures", "WorkingMemoryOrgan"]
