"""The FTS5 document index and the rag_search tool: ranking, scoping, re-indexing, schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from callgate import get_result
from callgate.tools.builtin import BuiltinSettings, builtin_tools
from callgate.tools.builtin.rag_search import rag_search_tool
from callgate.tools.index import (
    DamagedIndexError,
    DocumentIndex,
    chunk_text,
    fts_query,
    indexed_chunks,
)
from callgate.tools.registry import ToolRegistry
from callgate.tools.summaries import ITEM_CHARS
from tests.needs import unavailable

PHOTO = """# Plants

Photosynthesis turns light, water and carbon dioxide into sugar.

Chlorophyll absorbs red and blue light, which is why leaves look green.
"""
SEARCH = """SQLite FTS5 ranks full text matches with BM25.

BM25 weighs rare words more than common ones; BM25 also normalises for length.
"""
COOKING = "Bread needs flour, water, salt and yeast. Knead it, let it rise, bake it.\n"


def make_pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               f"<< /Type /Pages /Kids [{kids}] /Count {n} >>"]
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {4 + 2 * i} 0 R >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "plants.md").write_text(PHOTO)
    (folder / "sub" / "search.txt").write_text(SEARCH)
    (folder / "ignored.json").write_text('{"bm25": "not indexed"}')
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.md").write_text("BM25 hidden")
    return folder


@pytest.fixture
def index(tmp_path: Path) -> DocumentIndex:
    return DocumentIndex(tmp_path / "state" / "index.sqlite")


def config(thread: str | None) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}} if thread else {}


def test_folder_is_indexed_and_ranked(index: DocumentIndex, docs: Path) -> None:
    report = index.add_folder(docs)
    assert len(report.files) == 2 and report.changed == 2 and report.skipped == []
    assert index.path.is_file() and index.count() == report.chunks > 0

    hits = index.search("how does BM25 ranking work?")
    assert hits[0]["source"].endswith("search.txt")
    assert hits[0]["location"] == "lines 1-3"
    assert hits[0]["score"] > 0
    assert "BM25" in hits[0]["text"]
    # porter stemming: "leaf" matches "leaves"; the plants file is the only hit
    leaf = index.search("green leaf chlorophyll")
    assert [Path(h["source"]).name for h in leaf] == ["plants.md"]
    assert leaf[0]["location"] == "lines 1-5"
    assert index.search("quantum chromodynamics") == []


def test_better_matches_rank_first(index: DocumentIndex, tmp_path: Path) -> None:
    (tmp_path / "once.txt").write_text("Kernels are mentioned once here among other words.")
    (tmp_path / "often.txt").write_text("Kernel kernel kernels: the kernel schedules.")
    index.add_file(tmp_path / "once.txt")
    index.add_file(tmp_path / "often.txt")
    hits = index.search("kernel", limit=5)
    assert [Path(h["source"]).name for h in hits] == ["often.txt", "once.txt"]
    assert hits[0]["score"] > hits[1]["score"]
    assert len(index.search("kernel", limit=1)) == 1


def test_pdf_pages_are_indexed(index: DocumentIndex, tmp_path: Path) -> None:
    try:
        import pypdf  # noqa: F401  (the pdf extra; a dev dependency)
    except ImportError:
        unavailable("pypdf is not installed (pip install -e \".[pdf]\")")
    pdf = tmp_path / "manual.pdf"
    pdf.write_bytes(make_pdf(["Installing the turbine requires a torque wrench.",
                              "Calibrate the anemometer before the first run."]))
    assert index.add_file(pdf).chunks == 2
    hit = index.search("anemometer calibration")[0]
    assert hit["location"] == "page 2" and hit["source"].endswith("manual.pdf")
    assert index.search("turbine")[0]["location"] == "page 1"



def test_a_binary_file_is_refused_and_a_utf16_one_read(index: DocumentIndex,
                                                        tmp_path: Path) -> None:
    # latin-1 decodes any bytes: an image named in `callgate index` became junk "text".
    photo = tmp_path / "photo.txt"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ValueError, match="photo.txt is not a text file"):
        index.add_file(photo)
    notes = tmp_path / "notes.txt"
    notes.write_text("Windows wrote these turbine notes.", encoding="utf-16")
    assert index.add_file(notes).chunks == 1
    assert index.search("turbine")[0]["source"].endswith("notes.txt")
    assert index.count() == 1
    # Without a byte order mark too, either byte order: it had been refused for its NULs.
    for encoding, part in (("utf-16-le", "gearbox"), ("utf-16-be", "propeller")):
        bare = tmp_path / f"bare-{encoding}.txt"
        bare.write_bytes(f"Notes on the {part} of the café's mill.".encode(encoding))
        assert index.add_file(bare).chunks == 1
        assert index.search(part)[0]["source"].endswith(bare.name)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("word", ["😀", "一", "Ā", "\u3000"])
def test_utf16_without_bom_with_a_nul_on_the_other_side(index: DocumentIndex, tmp_path: Path,
                                                        encoding: str, word: str) -> None:
    # A character whose other byte is 0x00 (an emoji's low surrogate, 一, Ā, U+3000) had the
    # file refused as "not a text file".
    bare = tmp_path / "notes.txt"
    bare.write_bytes(f"Hello {word} world of the windmill\n".encode(encoding))
    assert index.add_file(bare).chunks == 1
    assert index.search("windmill")[0]["source"].endswith("notes.txt")


def test_binary_with_nuls_on_both_sides_is_refused(index: DocumentIndex,
                                                   tmp_path: Path) -> None:
    blob = tmp_path / "blob.txt"
    blob.write_bytes(b"a\x00" * 40 + b"\x00\x00\x00b" * 10)
    with pytest.raises(ValueError, match="not a text file"):
        index.add_file(blob)


def test_scopes(index: DocumentIndex, tmp_path: Path) -> None:
    for name, text in (("a.txt", "alpha notes about zebras"), ("b.txt", "beta notes about zebras"),
                       ("g.txt", "global notes about zebras")):
        (tmp_path / name).write_text(text)
    index.add_file(tmp_path / "a.txt", scope="thread-A")
    index.add_file(tmp_path / "b.txt", scope="thread-B")
    index.add_file(tmp_path / "g.txt")
    tool = rag_search_tool(index)

    def names(args: dict[str, Any], thread: str | None) -> set[str]:
        return {Path(h["source"]).name for h in tool.runnable.invoke(args, config(thread))}

    query = {"query": "zebras notes", "limit": 10}
    assert names(query, "thread-A") == {"a.txt", "g.txt"}
    assert names(query, "thread-B") == {"b.txt", "g.txt"}
    assert names(query, None) == {"g.txt"}
    assert names({**query, "global": True}, "thread-A") == {"a.txt", "b.txt", "g.txt"}
    assert names({**query, "global": False}, "thread-A") == {"a.txt", "g.txt"}
    assert index.count("thread-A") == 1 and index.count() == 3


async def test_global_alias_in_schema_and_calls(index: DocumentIndex, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("walrus facts")
    index.add_file(tmp_path / "a.txt", scope="other-thread")
    tool = rag_search_tool(index)
    props = tool.schema["properties"]
    assert set(props) == {"query", "limit", "global"}
    assert props["global"]["type"] == "boolean" and props["global"]["default"] is False
    assert tool.schema["required"] == ["query"]
    assert "config" not in props

    registry = ToolRegistry([tool])
    checked = registry.validate({"tool": "rag_search",
                                 "args": {"query": "walrus", "global": True}})
    assert checked.valid and checked.args["global"] is True and not checked.dropped
    hits = await tool.runnable.ainvoke(checked.args, config("mine"))
    assert len(hits) == 1
    assert await tool.runnable.ainvoke({"query": "walrus"}, config("mine")) == []


def test_reindexing_replaces_chunks(index: DocumentIndex, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("The meeting is on Tuesday.")
    assert index.add_file(note).changed
    again = index.add_file(note)
    assert not again.changed and again.chunks == 1
    note.write_text("The meeting moved to Thursday.")
    assert index.add_file(note).changed
    assert index.search("tuesday") == []
    assert "Thursday" in index.search("meeting")[0]["text"]
    assert index.count() == 1


def test_folder_reindex_drops_deleted_files(index: DocumentIndex, docs: Path) -> None:
    index.add_folder(docs)
    (docs / "plants.md").unlink()
    report = index.add_folder(docs)
    assert report.removed == 1 and report.changed == 0
    assert index.search("photosynthesis") == []


@pytest.mark.parametrize("query", [
    '"unbalanced quote', "AND OR NOT", "title:bm25", "NEAR(bm25 rank", "bm25*", "-bm25",
    "^bm25", "(", "", "   ", "???", "it's BM25's", "'; DROP TABLE chunks; --", "{bm25}",
])
def test_fts_syntax_in_queries_is_harmless(index: DocumentIndex, docs: Path,
                                           query: str) -> None:
    index.add_folder(docs)
    hits = index.search(query)
    assert isinstance(hits, list)
    if "bm25" in query.lower():
        assert hits and hits[0]["source"].endswith("search.txt")
    assert fts_query(query).count('"') % 2 == 0


def test_chunks_keep_lines_and_overlap() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "lorem ipsum " * 30 for i in range(10))
    chunks = chunk_text(text)
    assert len(chunks) > 3
    assert all(len(c) <= 800 for c, _ in chunks)
    assert chunks[0][1] == "lines 1-3"
    for (prev, _), (cur, _) in zip(chunks, chunks[1:], strict=False):
        assert cur[:40] in prev  # each chunk repeats the end of the previous one
    one_line = chunk_text("x " * 1000)
    assert len(one_line) > 1 and {loc for _, loc in one_line} == {"line 1"}
    assert chunk_text("") == []


def test_not_configured_until_documents_are_indexed(tmp_path: Path, docs: Path) -> None:
    path = tmp_path / "idx" / "index.sqlite"
    settings = BuiltinSettings(index_path=path)

    def status() -> Any:
        return next(s for s in builtin_tools(settings)[1] if s.name == "rag_search")

    assert not status().available
    assert "no documents indexed: run `callgate index PATH`" in status().reason
    assert not path.exists()  # checking must not create it
    assert indexed_chunks(path) == 0

    (tmp_path / "empty").mkdir()
    DocumentIndex(path).add_folder(tmp_path / "empty")
    assert path.is_file() and not status().available  # an index with no chunks

    path.write_bytes(b"not a database")  # said as damaged, not as "no documents indexed"
    with pytest.raises(DamagedIndexError, match="is damaged or not a callgate index"):
        indexed_chunks(path)
    assert not status().available and str(path) in status().reason
    assert status().reason.endswith(DamagedIndexError.hint)
    with pytest.raises(DamagedIndexError):
        DocumentIndex(path).add_folder(docs)
    path.unlink()

    DocumentIndex(path).add_folder(docs)
    assert status().available and "chunks" in status().reason
    tool = next(t for t in builtin_tools(settings)[0] if t.name == "rag_search")
    assert tool.source == "builtin" and tool.category == "documents"
    assert tool.runnable.invoke({"query": "chlorophyll"})[0]["source"].endswith("plants.md")


def test_summary_names_source_and_location(index: DocumentIndex, docs: Path,
                                           tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_text("\n\n".join("BM25 " + "filler words " * 80 for _ in range(6)))
    index.add_folder(docs)
    index.add_file(long)
    tool = rag_search_tool(index)
    data = tool.runnable.invoke({"query": "bm25", "limit": 6})
    summary = tool.summarizer("rag_search", data)
    assert summary.startswith("[rag_search] results: ")
    assert len(summary) <= 900 and summary.endswith("(+3 more)")
    items = summary.removeprefix("[rag_search] results: ").removesuffix(" (+3 more)")
    assert len(items.split(" | ")) == 3
    assert all(len(item) <= ITEM_CHARS for item in items.split(" | "))
    assert "search.txt:lines 1-3 — SQLite FTS5" in summary
    assert tool.summarizer("rag_search", []) == "[rag_search] no matching passages"


class ListRetriever(BaseRetriever):
    """Returns its documents that contain a word of the query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = query.lower().split()
        return [d for d in self.documents if any(w in d.page_content.lower() for w in words)]


async def test_retriever_hook() -> None:
    retriever = ListRetriever(documents=[
        Document("otters hold hands", metadata={"source": "https://x.org/otters", "page": 2}),
        Document("otters in thread A", metadata={"source": "a.md", "scope": "A",
                                                 "score": 0.9}),
        Document("otters in thread B", metadata={"source": "b.md", "scope": "B"}),
    ])
    tool = rag_search_tool(retriever)
    assert set(tool.schema["properties"]) == {"query", "limit", "global"}
    assert tool.relevance is None  # no query at choice time: it may cost an embedding
    hits = await tool.runnable.ainvoke({"query": "otters"}, config("A"))
    assert [h["source"] for h in hits] == ["https://x.org/otters", "a.md"]
    assert hits[0]["location"] == "page 2" and hits[1]["score"] == 0.9
    everything = await tool.runnable.ainvoke({"query": "otters", "global": True}, config("A"))
    assert len(everything) == 3
    assert len(await tool.runnable.ainvoke({"query": "otters", "limit": 1,
                                            "global": True})) == 1
    assert "https://x.org/otters:page 2 — otters hold hands" in tool.summarizer("rag_search",
                                                                               hits)
    with pytest.raises(TypeError):
        rag_search_tool("not a retriever")  # type: ignore[arg-type]


def test_thread_id_reaches_the_tool_through_the_graph(index: DocumentIndex,
                                                      tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from callgate.graph.builder import build_agent
    from callgate.models.scripted import ScriptedChatModel

    (tmp_path / "a.txt").write_text("thread A note: the password is tulip")
    (tmp_path / "g.txt").write_text("shared note: passwords need 12 characters")
    index.add_file(tmp_path / "a.txt", scope="A")
    index.add_file(tmp_path / "g.txt")
    call = AIMessage("", tool_calls=[{"id": "c1", "name": "rag_search",
                                      "args": {"query": "password"}}])
    model = ScriptedChatModel(script=[call, "done"], loop=True)
    agent = build_agent(model, [rag_search_tool(index)], checkpointer=InMemorySaver())
    seen = {}
    for thread in ("A", "B"):
        config = {"configurable": {"thread_id": thread}}
        out = agent.invoke({"messages": [("user", "password?")]}, config)
        event = out["tool_events"][-1]
        assert event["ok"], event["error"]
        hits = get_result(agent, config, event["id"])
        seen[thread] = {Path(h["source"]).name for h in hits}
    assert seen == {"A": {"a.txt", "g.txt"}, "B": {"g.txt"}}


def test_a_request_about_the_documents_offers_rag_search(index: DocumentIndex,
                                                         tmp_path: Path) -> None:
    # A question about the user's notes that never says "notes" shares no word with
    # rag_search's description; the words it shares with an indexed passage count instead.
    from callgate.tools.builtin.calculator import calculator_tool
    from callgate.tools.builtin.rag_search import passage_match
    from callgate.tools.builtin.system_stats import system_stats_tool
    from callgate.tools.relevance import relevant_tools, tool_scores

    folder = tmp_path / "trip"
    folder.mkdir()
    (folder / "trip.md").write_text("# Trip\n\nOur flight to Lisbon leaves at 06:40 from gate "
                                    "B12. The hotel is Casa Azul, booked for 4 nights.\n")
    (folder / "laptop.md").write_text("My laptop has 16 GB of memory and a CPU with 8 cores."
                                      "\n\n* eggs - milk\n")
    index.add_folder(folder)
    match = passage_match(index)
    assert match("How many nights is the hotel booked for?") == 2  # as two words, no more
    assert match("Which hotel is best in Rome?") == 0  # one shared word is chance
    assert match("quantum chromodynamics") == 0  # no passage at all
    assert match("What is 7 - 3 * 2?") == 0  # a list's bullets are no words in common
    registry = ToolRegistry()
    registry.add(rag_search_tool(index))
    registry.add(calculator_tool())
    registry.add(system_stats_tool())
    request = "How many nights is the hotel booked for?"
    assert tool_scores(registry, request)["rag_search"] == 2
    assert relevant_tools(registry, request, unmatched="none") == ["rag_search"]
    assert relevant_tools(registry, "What is the capital of Peru?", unmatched="none") == []
    # A note about the laptop does not crowd out the tool the question is about.
    assert "system_stats" in relevant_tools(registry, "How many cores does my laptop CPU have?")
    # Inside a run, the documents the call would search: this thread's and the global ones.
    from langchain_core.runnables import RunnableLambda

    private = tmp_path / "private"
    private.mkdir()
    (private / "garden.md").write_text("The tomatoes in the greenhouse need water daily.\n")
    index.add_folder(private, scope="A")
    question = "How often do the tomatoes need water?"
    in_thread = RunnableLambda(match)
    assert in_thread.invoke(question, {"configurable": {"thread_id": "A"}}) == 2
    assert in_thread.invoke(question, {"configurable": {"thread_id": "B"}}) == 0
    assert match(question) == 2  # outside a run: every document
    # An index that cannot be read scores 0: the question still gets its other tools.
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    assert passage_match(DocumentIndex(broken))("How many nights is the hotel booked?") == 0
