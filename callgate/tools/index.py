"""A local document index: SQLite FTS5 with BM25 ranking, persisted on disk.

Files are cut into chunks of about ``CHUNK_CHARS`` characters along paragraph
boundaries; each chunk keeps where it came from (``lines 12-30`` or ``page 3``) and a
scope: a thread id, or ``"global"``. Re-indexing a file replaces its chunks; an
unchanged file (same SHA-256) is skipped.
"""

from __future__ import annotations

import bisect
import fnmatch
import hashlib
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callgate.extras import MissingExtraError

GLOBAL = "global"
CHUNK_CHARS = 800
OVERLAP_CHARS = 150
DEFAULT_PATTERNS = ("*.md", "*.txt", "*.pdf")

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT NOT NULL, scope TEXT NOT NULL, sha256 TEXT NOT NULL,
    chunks INTEGER NOT NULL, indexed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (path, scope)
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(
    text, source UNINDEXED, location UNINDEXED, scope UNINDEXED, path UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
# Words too common to help BM25 find anything; dropped unless the query has nothing else.
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is",
    "it", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where",
    "which", "who", "why", "with",
))


class DamagedIndexError(ValueError):
    """The index file is not an SQLite database (garbage, another kind of file), is
    corrupt, or is another program's database (a checkpointer's threads.sqlite): nothing in
    it can be read as documents, and indexing into it fails rather than add tables to it."""

    hint = ("delete it and run `callgate index PATH` again, or name another index file "
            "with --index or $CALLGATE_INDEX")

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"the document index {path} is damaged or not a callgate index "
                         f"({reason})")


def _damaged(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_NOTADB", "SQLITE_CORRUPT")


def _foreign_tables(con: sqlite3.Connection) -> list[str]:
    """The tables of a database that holds some but not callgate's ``chunks``: another
    program's (``$CALLGATE_INDEX`` pointed at threads.sqlite had read as "no documents
    indexed", and `callgate index` added its tables to it). Empty for an empty database
    and for an index."""
    names = [name for (name,) in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return [] if "chunks" in names else names


def _not_an_index(tables: list[str]) -> str:
    shown = ", ".join(tables[:3]) + (", …" if len(tables) > 3 else "")
    return f"it is another database, with the tables {shown}"


@dataclass
class IndexedFile:
    """One file's outcome: how many chunks it has and whether they were (re)written."""

    path: str
    scope: str
    chunks: int
    changed: bool


@dataclass
class IndexReport:
    """What :meth:`DocumentIndex.add_folder` did."""

    files: list[IndexedFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    removed: int = 0

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files)

    @property
    def changed(self) -> int:
        return sum(f.changed for f in self.files)


class DocumentIndex:
    """A persistent full-text index of local documents (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()

    # -- writing ------------------------------------------------------------------------
    def add_file(self, path: str | Path, scope: str = GLOBAL) -> IndexedFile:
        """Index one text, Markdown or PDF file; its earlier chunks in ``scope`` are replaced."""
        with self._connect() as con:
            return self._add(con, Path(path), scope)

    def add_folder(self, folder: str | Path, scope: str = GLOBAL,
                   patterns: Iterable[str] = DEFAULT_PATTERNS) -> IndexReport:
        """Index the matching files under ``folder`` (recursively).

        Files indexed from this folder earlier that no longer exist are removed.
        """
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise NotADirectoryError(f"not a folder: {root}")
        patterns = tuple(patterns)
        report = IndexReport()
        with self._connect() as con:
            for file in sorted(root.rglob("*")):
                if not _wanted(file, root, patterns):
                    continue
                try:
                    report.files.append(self._add(con, file, scope))
                except (OSError, RuntimeError, ValueError, MissingExtraError) as exc:
                    report.skipped.append((str(file), str(exc)))
            prefix = os.path.join(str(root), "")
            for (known,) in con.execute(
                    "SELECT path FROM files WHERE scope = ? AND substr(path, 1, ?) = ?",
                    (scope, len(prefix), prefix)).fetchall():
                if not Path(known).exists():
                    self._delete(con, known, scope)
                    report.removed += 1
        return report

    def remove_file(self, path: str | Path, scope: str = GLOBAL) -> bool:
        """Drop a file's chunks from ``scope``; False if it was not indexed there."""
        with self._connect() as con:
            return self._delete(con, str(Path(path).expanduser().resolve()), scope)

    # -- reading ------------------------------------------------------------------------
    def search(self, query: str, limit: int = 3, scope: str | None = None) -> list[dict[str, Any]]:
        """Best chunks for ``query`` by BM25: ``[{text, source, location, score}]``.

        ``scope=None`` searches every chunk; a thread id searches that thread's chunks
        and the global ones; ``"global"`` only the global ones. Higher scores are better.
        """
        match = fts_query(query)
        if not match or not self.path.exists():
            return []
        sql = "SELECT text, source, location, bm25(chunks) FROM chunks WHERE chunks MATCH ?"
        params: list[Any] = [match]
        if scope is not None:
            sql += " AND scope IN (?, ?)"
            params += [scope, GLOBAL]
        sql += " ORDER BY rank LIMIT ?"
        params.append(max(1, int(limit)))
        with self._connect() as con:
            rows = con.execute(sql, params).fetchall()
        return [{"text": text, "source": source, "location": location,
                 "score": float(f"{-score:.4g}")} for text, source, location, score in rows]

    def count(self, scope: str | None = None) -> int:
        """Number of chunks (in ``scope`` only, when given)."""
        if not self.path.exists():
            return 0
        with self._connect() as con:
            if scope is None:
                return con.execute("SELECT count(*) FROM chunks").fetchone()[0]
            return con.execute("SELECT count(*) FROM chunks WHERE scope = ?",
                               (scope,)).fetchone()[0]

    # -- internals ----------------------------------------------------------------------
    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: tools run in worker threads.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=10)) as con:
            try:
                if tables := _foreign_tables(con):
                    raise DamagedIndexError(self.path, _not_an_index(tables))
                con.execute("PRAGMA journal_mode=WAL")
                con.executescript(_SCHEMA)
            except sqlite3.DatabaseError as exc:
                if _damaged(exc):
                    raise DamagedIndexError(self.path, str(exc)) from exc
                raise
            with con:
                yield con

    def _add(self, con: sqlite3.Connection, file: Path, scope: str) -> IndexedFile:
        file = file.expanduser().resolve()
        data = file.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        key = str(file)
        row = con.execute("SELECT sha256, chunks FROM files WHERE path = ? AND scope = ?",
                          (key, scope)).fetchone()
        if row and row[0] == digest:
            return IndexedFile(key, scope, row[1], changed=False)
        pieces = [(text, loc) for part, where in read_document(file, data)
                  for text, loc in chunk_text(part, where)]
        self._delete(con, key, scope)
        con.executemany(
            "INSERT INTO chunks (text, source, location, scope, path) VALUES (?, ?, ?, ?, ?)",
            [(text, key, loc, scope, key) for text, loc in pieces])
        con.execute("INSERT INTO files (path, scope, sha256, chunks) VALUES (?, ?, ?, ?)",
                    (key, scope, digest, len(pieces)))
        return IndexedFile(key, scope, len(pieces), changed=True)

    @staticmethod
    def _delete(con: sqlite3.Connection, key: str, scope: str) -> bool:
        con.execute("DELETE FROM chunks WHERE path = ? AND scope = ?", (key, scope))
        return con.execute("DELETE FROM files WHERE path = ? AND scope = ?",
                           (key, scope)).rowcount > 0


def indexed_chunks(path: str | Path) -> int:
    """Chunks in the index at ``path``; 0 when it does not exist or holds no tables.
    Never creates it; raises :class:`DamagedIndexError` for a file that is no database or
    another program's database."""
    path = Path(path).expanduser()
    if not path.is_file():
        return 0
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as con:
            if tables := _foreign_tables(con):
                raise DamagedIndexError(path, _not_an_index(tables))
            if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks'").fetchone():
                return 0
            return con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    except sqlite3.Error as exc:
        # A garbage file had read as "no documents indexed", and `callgate index` then
        # said only "file is not a database".
        if _damaged(exc):
            raise DamagedIndexError(path, str(exc)) from exc
        return 0


def fts_query(text: str) -> str:
    """User text as a safe FTS5 query: its words, each quoted, joined by OR.

    Quoting makes operators (AND, NEAR, ``*``, ``:``, quotes) plain words, so no input
    can raise a syntax error; OR lets BM25 rank chunks by how many words they share.
    """
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    kept = [w for w in words if w not in _STOPWORDS] or words
    return " OR ".join(f'"{w}"' for w in kept[:32])


def _wanted(file: Path, root: Path, patterns: tuple[str, ...]) -> bool:
    """A regular file matching a pattern, outside hidden folders (``.git``, ``.venv``)."""
    if not file.is_file() or any(p.startswith(".") for p in file.relative_to(root).parts):
        return False
    return any(fnmatch.fnmatch(file.name.lower(), pat.lower()) for pat in patterns)


# -- reading files ----------------------------------------------------------------------
def read_document(file: Path, data: bytes) -> list[tuple[str, str | None]]:
    """The text of a file as ``[(text, page)]``: one part per PDF page, one for text."""
    if file.suffix.lower() == ".pdf":
        return [(text, f"page {n}") for n, text in enumerate(_pdf_pages(file), start=1)]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # a UTF-16 byte order mark
        return [(data.decode("utf-16", errors="replace"), None)]
    if (text := _utf16_without_bom(data)) is not None:
        return [(text, None)]
    if b"\0" in data[:8000]:
        # A NUL byte: a binary file (git's test), which latin-1 would decode as junk text.
        raise ValueError(f"{file.name} is not a text file (it holds NUL bytes)")
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            return [(data.decode(encoding), None)]
        except UnicodeDecodeError:
            continue
    raise ValueError(f"cannot decode {file}")  # unreachable: latin-1 decodes any bytes


def _utf16_without_bom(data: bytes) -> str | None:
    """``data`` as UTF-16 text without a byte order mark, else None: Latin text so written
    has a NUL in every other byte, on one side (little- or big-endian), and decodes into
    text without NULs; a binary file's NULs fall anywhere. A few characters put a NUL on
    the other side (U+4E00 一, U+0100 Ā, U+3000, an emoji's low surrogate U+DE00): at most
    one pair in 16 may."""
    sample = data[:8000]
    if len(data) % 2 or len(sample) < 2:
        return None
    pairs = len(sample) // 2
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    for nuls, others, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if others * 16 <= pairs and nuls * 2 >= pairs:
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                return None
            return None if "\0" in text else text
    return None


def _pdf_pages(file: Path) -> list[str]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:
        raise MissingExtraError("reading a PDF", "pypdf", "pdf") from exc
    with _pdf_warnings() as repairs:
        try:
            return [page.extract_text() or "" for page in PdfReader(file).pages]
        except PdfReadError as exc:
            seen = f" ({'; '.join(dict.fromkeys(repairs))})" if repairs else ""
            raise ValueError(f"cannot read PDF {file.name}: {exc}{seen}") from exc


_PDF_LOGGER = logging.getLogger("pypdf")
_PDF_LOCK = threading.Lock()  # one read at a time sets the logger's propagation


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _pdf_warnings() -> Iterator[list[str]]:
    """What pypdf logs while a PDF is read, kept rather than printed. pypdf warns of each
    repair it makes ("EOF marker not found") on its own loggers, which Python prints on
    stderr where no logging is set up: a line before the CLI's one-line error. A failed
    read's error says them; a repaired read's go to callgate's log at debug level."""
    kept = _Kept()
    with _PDF_LOCK:
        propagate = _PDF_LOGGER.propagate
        _PDF_LOGGER.addHandler(kept)
        _PDF_LOGGER.propagate = False
        try:
            yield kept.messages
        finally:
            _PDF_LOGGER.removeHandler(kept)
            _PDF_LOGGER.propagate = propagate
    for message in kept.messages:
        log.debug("pypdf: %s", message)


# -- chunking ---------------------------------------------------------------------------
def chunk_text(text: str, page: str | None = None, size: int = CHUNK_CHARS,
               overlap: int = OVERLAP_CHARS) -> list[tuple[str, str]]:
    """Cut ``text`` into ``[(chunk, location)]`` of about ``size`` characters.

    Chunks follow paragraphs (long ones are cut at lines, then at spaces); each chunk
    after the first repeats up to ``overlap`` characters of the one before. The location
    is ``page`` when given (PDF), else the chunk's line range.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    piece = max(1, size - overlap)  # room for the overlap in front of a long piece
    spans = [s for start, end in _paragraphs(text) for s in _split(text, start, end, piece)]
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    chunks: list[tuple[str, str]] = []
    i = 0
    prev_end: int | None = None
    while i < len(spans):
        start = spans[i][0]
        if prev_end is not None:
            start = _overlap_start(text, spans, i, prev_end, overlap)
        end = spans[i][1]
        i += 1
        while i < len(spans) and spans[i][1] - start <= size:
            end = spans[i][1]
            i += 1
        body = text[start:end].strip()
        if page is not None:
            where = page
        else:
            first = bisect.bisect_right(line_starts, start)
            last = bisect.bisect_right(line_starts, end - 1)
            where = f"line {first}" if first == last else f"lines {first}-{last}"
        chunks.append((body, where))
        prev_end = end
    return chunks


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for gap in re.finditer(r"\n[ \t]*\n\s*", text):
        if text[start:gap.start()].strip():
            spans.append((start, gap.start()))
        start = gap.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def _split(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """A span cut into pieces of at most ``size``: at line breaks, else spaces, else hard."""
    pieces = []
    while end - start > size:
        window = text[start:start + size]
        cut = max(window.rfind("\n"), window.rfind(" "))
        cut = start + (cut if cut > size // 4 else size)
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        pieces.append((start, end))
    return pieces


def _overlap_start(text: str, spans: list[tuple[int, int]], i: int, prev_end: int,
                   overlap: int) -> int:
    """Where chunk ``i`` starts: the previous paragraph if short, else its last words."""
    last_start = spans[i - 1][0]
    if prev_end - last_start <= overlap:
        return last_start
    start = prev_end - overlap
    space = text.find(" ", start, prev_end)
    return space + 1 if space != -1 else spans[i][0]
