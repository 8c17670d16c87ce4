"""The KV state after a prompt's system message, kept on disk across processes.

Each ``callgate ask`` is a new process, which reads its system prompt (the tool list: about
400 tokens, a second on two cores) before it can choose anything. With a cache folder, the
first run stores llama.cpp's state after the system message (``llama_state_save_file``:
about 9 MB for SmolLM2-135M) and later runs with the same model, load options and system
prompt load it in milliseconds. Where a folder is set, the system message is always decoded
as a batch of its own, so a run's output does not depend on whether the file was there.

llama-cpp-python's ``LlamaDiskCache`` is not used: it keeps whole completions, generated
tokens included, whose numbers differ from a batch decode of the same tokens (see
``_Loaded.limit_prefix_reuse``), and it reads the state through Python (0.5 s for 9 MB).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama

KEEP = 4  # state files kept in a folder (the newest used); each is ~9 MB for the bundled model
# A larger state is not written: a 7B model's would be hundreds of MB per tool list.
MAX_BYTES = 256 * 1024 * 1024
SUFFIX = ".kv"


@dataclass(frozen=True)
class PrefixCache:
    """A folder of llama.cpp states, one per (model, load options, prefix tokens)."""

    folder: Path
    keep: int = KEEP
    max_bytes: int = MAX_BYTES

    def path(self, identity: str, tokens: Sequence[int]) -> Path:
        digest = hashlib.sha256(identity.encode("utf-8"))
        digest.update(",".join(map(str, tokens)).encode("ascii"))
        return self.folder / f"{digest.hexdigest()[:32]}{SUFFIX}"

    def start(self, llama: Llama, identity: str, tokens: Sequence[int]) -> bool:
        """Leave exactly ``tokens`` in ``llama``'s KV cache: loaded from the folder when a
        state for them is there (True), else decoded and stored for the next process. The
        cache only saves time: a folder that cannot be read or written is decoded past."""
        path = self.path(identity, tokens)
        if self._load(llama, path, tokens):
            return True
        llama.reset()
        llama.eval(list(tokens))
        self._save(llama, path, tokens)
        return False

    @staticmethod
    def _load(llama: Llama, path: Path, tokens: Sequence[int]) -> bool:
        import llama_cpp

        if not path.is_file():
            return False
        capacity = llama.n_ctx()
        out = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        ok = llama_cpp.llama_state_load_file(llama.ctx, os.fsencode(path), out, capacity,
                                             ctypes.byref(count))
        n = count.value
        if not ok or n != len(tokens) or list(out[:n]) != list(tokens):
            llama.reset()  # whatever was read is not this prefix: decode it instead
            return False
        llama.n_tokens = n
        llama.input_ids[:n] = tokens
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept by the pruning
        return True

    def _save(self, llama: Llama, path: Path, tokens: Sequence[int]) -> None:
        import llama_cpp

        if llama_cpp.llama_state_get_size(llama.ctx) > self.max_bytes:
            return
        temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ids = (llama_cpp.llama_token * len(tokens))(*tokens)
            if llama_cpp.llama_state_save_file(llama.ctx, os.fsencode(temp), ids, len(tokens)):
                os.replace(temp, path)  # whole or not at all, for processes reading it
            self._prune()
        except OSError:
            pass  # not kept: the next process reads the prompt again
        finally:
            with contextlib.suppress(OSError):  # also where the folder is not one
                temp.unlink(missing_ok=True)

    def _prune(self) -> None:
        files = sorted(self.folder.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime,
                       reverse=True)
        for old in files[self.keep:]:
            old.unlink(missing_ok=True)
