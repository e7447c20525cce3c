"""Any OpenAI-compatible chat-completions API: OpenAI, Ollama, vLLM, llama.cpp server, LiteLLM."""

from __future__ import annotations

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import ChatMessage, Completion, LLMProvider
from nous.llm.http import HTTPChat

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE = "https://api.openai.com/v1"


class OpenAIChatProvider(LLMProvider):
    """POSTs to ``{NOUS_LLM_API_BASE}/chat/completions``."""

    name = "openai"

    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        self.model = settings.llm_model or DEFAULT_MODEL
        headers = {"Content-Type": "application/json"}
        if settings.llm_api_key:
            headers["Authorization"] = f"Bearer {settings.llm_api_key}"
        self._http = HTTPChat(
            settings.llm_api_base or DEFAULT_BASE, headers, settings.llm_timeout_s, "chat API"
        )

    async def complete(
        self, messages: list[ChatMessage], *, max_tokens: int = 1024, json_mode: bool = False
    ) -> Completion:
        body: dict[str, object] = {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        data, latency = await self._http.post("/chat/completions", body)
        try:
            text = data["choices"][0]["message"]["content"]
            usage = data.get("usage") or {}
            if not isinstance(text, str):
                raise TypeError("content is not text")
            return Completion(
                text=text,
                model=str(data.get("model") or self.model),
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                latency_ms=latency,
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise LLMError(f"chat API at {self._http.base_url} sent an unexpected reply: {exc}") from exc

    async def aclose(self) -> None:
        await self._http.aclose()
