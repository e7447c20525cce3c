"""A blocking wrapper around ``Nous`` for scripts and notebooks."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from nous.api.nous import Nous

T = TypeVar("T")


class _Runner:
    """An event loop on a daemon thread that runs coroutines to completion."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="nous-sync", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class _Proxy:
    """Wraps an object so that its coroutine methods block and its organs are wrapped too."""

    def __init__(self, target: Any, runner: _Runner) -> None:
        self._target = target
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.iscoroutinefunction(attr):

            def call(*args: Any, **kwargs: Any) -> Any:
                return self._runner.run(attr(*args, **kwargs))

            call.__doc__ = attr.__doc__
            call.__name__ = name
            return call
        if inspect.isasyncgenfunction(attr):

            def collect(*args: Any, **kwargs: Any) -> list[Any]:
                async def gather() -> list[Any]:
                    return [x async for x in attr(*args, **kwargs)]

                return self._runner.run(gather())

            return collect
        if (
            hasattr(attr, "__dict__")
            and type(attr).__module__.startswith("nous.")
            and not isinstance(attr, type)
            and not hasattr(attr, "model_dump")
        ):
            return _Proxy(attr, self._runner)
        return attr


class SyncNous(_Proxy):
    """``Nous`` with blocking methods: ``SyncNous(database_url=...).learn("...")``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        runner = _Runner()
        nous = Nous(*args, **kwargs)
        try:
            runner.run(nous.open())
        except BaseException:
            runner.stop()
            raise
        super().__init__(nous, runner)

    def close(self) -> None:
        self._runner.run(self._target.close())
        self._runner.stop()

    def __enter__(self) -> SyncNous:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
