"""Nous in agent frameworks' memory slots (optional extras; ``import nous`` never needs them).

- ``nous.integrations.langgraph.NousStore``: a LangGraph ``BaseStore``
  (``pip install "nousmem[langgraph]"``; in the repository ``pip install -e ".[langgraph]"``).
- ``nous.integrations.openai_agents.NousSession``: an OpenAI Agents SDK ``Session``
  (``pip install "nousmem[openai-agents]"``).

See ``docs/integrations.md``.
"""
