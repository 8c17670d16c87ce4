"""A model server that cannot be reached, named with its URL.

httpx's ``ConnectError`` says only "[Errno 111] Connection refused", and OpenAI's client
"Connection error.": from Python, nothing said which server. :func:`unreachable` gives the
same error as an instance of a subclass of its own type and of
:class:`ModelServerUnreachableError` (as langchain-openai classifies OpenAI's errors), so an
``except httpx.ConnectError`` or ``except openai.APIConnectionError`` still catches it.
"""

from __future__ import annotations

import sys
from typing import Any

_KINDS: dict[type[BaseException], type[BaseException]] = {}


class ModelServerUnreachableError(Exception):
    """Mixed into a client's connection error: the model server at ``url`` did not answer."""

    url: str

    def __str__(self) -> str:
        # The message naming the URL, also where the client's type writes itself from
        # other fields (an OSError from its errno and strerror).
        return str(self.args[0]) if self.args else super().__str__()


def public_url(url: Any) -> str | None:
    """An httpx URL without the user, password or query a URL may carry a key in."""
    if url is None:
        return None
    try:
        return str(url.copy_with(userinfo=b"", query=None))
    except (AttributeError, TypeError):
        return None


def unreachable(exc: BaseException, model: Any) -> BaseException | None:
    """``exc`` naming the server's URL where it is a failure to connect to ``model``'s
    server; None for any other error, or where no URL is known."""
    if isinstance(exc, ModelServerUnreachableError) or not _connect_failure(exc):
        return None
    url = _request_url(exc) or _base_url(model)
    if url is None:
        return None
    kind = _KINDS.get(type(exc))
    try:
        if kind is None:
            kind = _KINDS[type(exc)] = type(type(exc).__name__,
                                            (ModelServerUnreachableError, type(exc)),
                                            {"__module__": __name__})
        named = kind.__new__(kind)
    except TypeError:  # a type that cannot be subclassed keeps its own message
        return None
    named.__dict__.update(exc.__dict__)
    message = f"cannot reach the model server at {url}: {_root_reason(exc)}"
    named.args = (message,)
    if isinstance(exc, OSError) and isinstance(named, OSError):
        # An OSError's errno and strerror are read from its constructor's arguments, which
        # ``__new__`` alone never saw: ``except ConnectionRefusedError as e: e.errno`` was None.
        named.errno, named.strerror = exc.errno, exc.strerror
    if isinstance(getattr(exc, "message", None), str):
        named.message = message  # type: ignore[attr-defined]  # openai's errors print it
    named.url = url  # type: ignore[attr-defined]  # set on the built class, read by callers
    return named


def _connect_failure(exc: BaseException) -> bool:
    httpx, openai = sys.modules.get("httpx"), sys.modules.get("openai")
    if httpx is not None and isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return True
    if openai is not None and isinstance(exc, openai.APIConnectionError):
        return True
    import langchain_core.exceptions

    # ModelConnectionError is langchain-core 1.6's; the package allows 1.0 and up.
    kinds: tuple[type[BaseException], ...] = (ConnectionRefusedError,)
    if (model_error := getattr(langchain_core.exceptions, "ModelConnectionError", None)):
        kinds += (model_error,)
    return isinstance(exc, kinds)


def _request_url(exc: BaseException) -> str | None:
    try:  # httpx raises RuntimeError for an error raised outside a request
        request = getattr(exc, "request", None)
    except RuntimeError:
        return None
    return public_url(getattr(request, "url", None))


def _base_url(model: Any) -> str | None:
    model = getattr(model, "bound", model)  # a RunnableBinding of bind_tools
    for name in ("base_url", "openai_api_base"):
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            httpx = sys.modules.get("httpx")
            return public_url(httpx.URL(value)) if httpx is not None else None
    return None


def _root_reason(exc: BaseException) -> str:
    """The innermost cause of ``exc``, as text ("[Errno 111] Connection refused")."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return str(root) or type(root).__name__
