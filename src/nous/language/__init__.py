"""English text without the engine: word lists, the prose of a message, and what a conversation
is about (its key phrases and a title from them). Used by the event pipeline's offline summaries
and extraction, by ingest (an episode's title) and by the inspector (a session's topic)."""
