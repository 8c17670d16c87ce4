"""``callgate eval`` (bfcl, compare, diff, outputs, answers) and ``callgate bench``
(overhead, results)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from callgate.cli import ModelError, UserError, at_least, at_least_one, own_usage, phase
from callgate.eval.bfcl_data import CATEGORIES, SPLITS

ALIASES = {"simple": "simple_python"}


REPORT_HINT = "give a JSON report that callgate eval bfcl --report wrote"


def _categories(text: list[str] | None) -> list[str] | None:
    if not text:
        return None
    out = []
    for item in text:
        for name in item.split(","):
            name = ALIASES.get(name.strip(), name.strip())
            if name and name not in CATEGORIES:
                raise UserError(f"unknown BFCL category {name!r}; known: "
                                f"{', '.join(CATEGORIES)} (or simple)")
            if name:
                out.append(name)
    return out


def _command_line() -> str:
    return " ".join(["callgate", *(shlex.quote(a) for a in sys.argv[1:])])


def _bfcl_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=os.environ.get("CALLGATE_MODEL", "bundled"),
                        help="model spec (default: bundled, the SmolLM2-135M GGUF)")
    parser.add_argument("--categories", nargs="+", metavar="CATEGORY",
                        help=f"default: all ({', '.join(CATEGORIES)})")
    parser.add_argument("--limit", type=at_least(1),
                        help="first N questions of each category (of the split)")
    parser.add_argument("--split", choices=SPLITS, default="all",
                        help="tune (studied), validate (only scored) or all (default); "
                             "fixed by a hash of each question id")
    parser.add_argument("--data", type=Path, help="BFCL data folder (default: shared data, "
                                                  "else the vendored copy)")
    parser.add_argument("--report", type=Path, default=Path("bfcl-report.json"),
                        help="write the JSON report here (default: ./bfcl-report.json; "
                             "for compare ./bfcl-compare.json)")
    parser.add_argument("--no-report", dest="report", action="store_const", const=None,
                        help="write no JSON report")
    parser.add_argument("--max-steps", type=at_least_one, default=5)
    parser.add_argument("--quiet", action="store_true", help="no line per question")


def writable_report(path: Path | None) -> None:
    """Refuse a ``--report`` path that cannot be written, before the run (a full run takes
    most of an hour); a file this check creates is removed again."""
    if path is None:
        return
    if path.is_dir():
        raise UserError(f"--report {path} is a folder", "give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with path.open("a", encoding="utf-8"):
            pass
        if not existed:
            path.unlink()
    except OSError as exc:
        raise UserError(f"cannot write the report {path}: {exc.strerror or exc}",
                        "give a writable file path, or --no-report") from exc


def cmd_bfcl(args: argparse.Namespace) -> int:
    from callgate.eval.bfcl import (
        CallgateAnswerer,
        UnknownQuestionError,
        choose_questions,
        evaluate,
        format_table,
        print_progress,
    )

    if args.baselines:
        if args.ids or args.ids_file:
            raise UserError("--ids and --ids-file choose questions for one path, "
                            "not for --baselines")
        return cmd_compare(args)
    if args.checker == "official":
        from callgate.eval.bfcl_checker import official_available

        if not official_available():
            raise UserError("--checker official needs bfcl-eval: "
                            "pip install --no-deps bfcl-eval")
    options = _react_options(args.react_option)
    if args.required_only:
        options["include_optional"] = False
    categories = _categories(args.categories)
    ids = _ids(args)
    try:  # before the model loads: a wrong id or data folder fails at once
        questions = choose_questions(categories, limit=args.limit, data_dir=args.data,
                                     split=args.split, ids=ids)
    except UnknownQuestionError as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:
        raise UserError(str(exc), "--data takes a folder of BFCL's JSON files") from exc
    writable_report(args.report)
    server = None
    model: Any = args.model
    if args.tool_format == "native":
        model, server = _native_model(args.model, args.server_url)
    try:
        with phase(ModelError, ValueError, OSError, ImportError):
            answerer = CallgateAnswerer(model, tool_format=args.tool_format,
                                        grammar=False if args.no_grammar else None,
                                        tool_choice=args.tool_choice,
                                        max_steps=args.max_steps, react_options=options,
                                        grounding=False if args.no_grounding else None)
        report = evaluate(answerer, questions=questions, data_dir=args.data,
                          model=args.model, jobs=args.jobs, split=args.split,
                          checker=args.checker, ids=ids, limit=args.limit,
                          progress=None if args.quiet else print_progress)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    report.command = _command_line()
    print(f"{report.name} on {args.model}, split {report.split}, {report.date}, "
          f"commit {report.commit or '?'}")
    print(format_table(report))
    if args.report:
        print(f"report: {report.write(args.report)}")
    return 0


def _ids(args: argparse.Namespace) -> list[str] | None:
    """The question ids of ``--ids`` and ``--ids-file`` (commas or blanks between them)."""
    if args.ids is None and args.ids_file is None:
        return None
    text = " ".join(args.ids or [])
    if args.ids_file is not None:
        try:
            text += " " + args.ids_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read the question ids in {args.ids_file}: {exc}") from exc
    ids = text.replace(",", " ").split()
    if not ids:
        raise UserError("--ids/--ids-file named no question")
    return ids


def _react_options(pairs: list[str] | None) -> dict[str, Any]:
    """``--react-option NAME=VALUE`` pairs: ReactStrategy knobs, values read as JSON
    (``true``, ``6.0``, ``null``) or else taken as text."""
    import inspect
    import json

    from callgate.graph.decide_react import ReactStrategy

    known = set(inspect.signature(ReactStrategy).parameters) - {"model", "registry"}
    options: dict[str, Any] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or name not in known:
            raise UserError(f"--react-option {pair!r}: expected NAME=VALUE with NAME one of "
                            f"{', '.join(sorted(known))}")
        try:
            options[name] = json.loads(value)
        except ValueError:
            options[name] = value
    return options


def _native_model(spec: str, server_url: str | None) -> tuple[Any, Any]:
    """A chat model with native tool calling: for a GGUF, llama-cpp-python's server."""
    from callgate.eval.baselines import _can_serve, llama_server, server_chat_model

    if server_url:
        return server_chat_model(server_url), None
    gguf = _can_serve(spec)
    if gguf is None:
        return spec, None
    server = llama_server(gguf)
    url = server.__enter__()
    print(f"started llama-cpp-python's server for {gguf.name} at {url}", file=sys.stderr)
    return server_chat_model(url), server


def cmd_compare(args: argparse.Namespace) -> int:
    from callgate.eval.baselines import PATHS, compare, comparison_dict, format_comparison
    from callgate.eval.bfcl import print_progress

    paths = args.paths or list(PATHS)
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise UserError(f"unknown path(s) {', '.join(unknown)}; known: {', '.join(PATHS)}")

    def progress(path: str, result: Any) -> None:
        if not args.quiet:
            print(f"[{path}] ", end="", file=sys.stderr)
            print_progress(result)

    writable_report(args.report)
    rows = compare(args.model, paths=paths, categories=_categories(args.categories),
                   limit=args.limit, data_dir=args.data, max_steps=args.max_steps,
                   server_url=args.server_url, progress=progress, split=args.split)
    summary = comparison_dict(rows, command=_command_line())
    print(f"BFCL on {args.model}, {summary.get('date', '')}")
    print(format_comparison(rows))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
                               encoding="utf-8")
        print(f"report: {args.report}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from callgate.eval.bfcl import diff_reports, format_diff
    from callgate.eval.provenance import machine_note

    reports = []
    for path in (args.before, args.after):
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read BFCL report {path}: {exc}", REPORT_HINT) from exc
    differences = diff_reports(*reports)
    if args.part:
        differences = [d for d in differences if d.part == args.part]
    print(format_diff(differences))
    if note := machine_note(*reports):
        print(note)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from callgate.eval.bfcl import format_merged, merge_reports

    reports = []
    for path in (args.base, *args.overlays):
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read BFCL report {path}: {exc}", REPORT_HINT) from exc
    try:
        scores = merge_reports(reports[0], reports[1:])
    except ValueError as exc:
        raise UserError(f"eval merge: {exc}") from exc
    print(format_merged(scores))
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from callgate.eval.bfcl import markdown_tables

    try:
        tables = markdown_tables(json.loads(args.report.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"cannot read BFCL report {args.report}: {exc}", REPORT_HINT) from exc
    print(tables)  # outside the try: a closed stdout is no fault of the report
    return 0


def cmd_outputs(args: argparse.Namespace) -> int:
    from callgate.eval.outputs import default_corpus, format_outputs, run_outputs

    path = args.file or default_corpus()
    if not Path(path).is_file():
        raise UserError(f"corpus not found: {path}", "give a JSONL file of recorded outputs")
    writable_report(args.report)
    try:
        report = run_outputs(path)
    except ValueError as exc:  # a line that is not a recorded output
        raise UserError(str(exc), "each line is one JSON record of a model output") from exc
    print(json.dumps(report.to_dict(), indent=1) if args.json else format_outputs(report))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report.to_dict(), indent=1) + "\n", encoding="utf-8")
    return 0 if report.ok else 1


def cmd_answers(args: argparse.Namespace) -> int:
    from callgate.eval.answers import format_answers, print_progress, run_answers, time_ask

    writable_report(args.report)
    try:
        report = run_answers(args.model, limit=args.limit, data=args.data,
                             max_steps=args.max_steps,
                             progress=None if args.quiet else print_progress)
    except (OSError, ValueError) as exc:
        raise UserError(f"eval answers: {exc}") from exc
    report.command = _command_line()
    if args.ask_runs:
        report.ask = time_ask(args.model, runs=args.ask_runs)
    print(f"answer quality on {args.model}, {report.date}, commit {report.commit or '?'}")
    print(format_answers(report))
    if args.report:
        print(f"report: {report.write(args.report)}")
    return 0


def cmd_overhead(args: argparse.Namespace) -> int:
    from callgate.eval.overhead import format_overhead, run_overhead

    writable_report(args.report)
    result = run_overhead(runs=args.runs, concurrency=args.concurrency, warmup=args.warmup)
    result["command"] = _command_line()
    print(json.dumps(result, indent=1) if args.json else format_overhead(result))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    bad = sum(f["concurrent"]["cross_talk"] + f["sequential_wrong_answers"]
              for f in result["frameworks"].values())
    return 1 if bad else 0


def cmd_result_sizes(args: argparse.Namespace) -> int:
    from callgate.eval.result_sizes import format_result_sizes, run_result_sizes

    writable_report(args.report)
    result = run_result_sizes(sizes=tuple(args.sizes), peak_sizes=tuple(args.peak_sizes),
                              turns=args.turns)
    result["command"] = _command_line()
    print(json.dumps(result, indent=1) if args.json else format_result_sizes(result))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the eval/bench subcommands."""
    ev = sub.add_parser("eval", help="accuracy and robustness evaluations")
    evsub = ev.add_subparsers(dest="eval_command", required=True)

    bfcl = evsub.add_parser("bfcl", help="BFCL through callgate's graph")
    _bfcl_options(bfcl)
    bfcl.add_argument("--jobs", type=at_least(1), default=1,
                      help="answer questions in N worker processes, each with its own copy "
                           "of the model and its share of the cores")
    bfcl.add_argument("--ids", nargs="+", metavar="ID",
                      help="only these questions (ids, commas or blanks between them): the "
                           "ones a change can touch; compare with 'callgate eval diff'")
    bfcl.add_argument("--ids-file", type=Path, metavar="PATH",
                      help="only the questions whose ids this file lists")
    bfcl.add_argument("--checker", choices=["auto", "official", "own"], default="auto",
                      help="scorer: BFCL's own AST checker (bfcl-eval, when installed: auto), "
                           "or callgate's")
    bfcl.add_argument("--tool-format", choices=["native", "react", "auto"], default="react")
    bfcl.add_argument("--no-grammar", action="store_true",
                      help="ReAct without grammar-constrained decoding")
    bfcl.add_argument("--no-grounding", action="store_true",
                      help="accept argument values that appear nowhere in the question "
                           "(grounding is on by default for llama.cpp models on ReAct)")
    bfcl.add_argument("--react-option", action="append", metavar="NAME=VALUE",
                      help="a ReactStrategy knob for this run, e.g. value_floor=-6 or "
                           "spans=true (repeatable; see callgate.graph.decide_react)")
    bfcl.add_argument("--required-only", action="store_true",
                      help="ReAct+grammar: constrain arguments to required parameters only")
    bfcl.add_argument("--tool-choice", help="native path: force the first call: 'required', "
                                            "a tool name, or 'single' (the function when a "
                                            "question offers exactly one)")
    bfcl.add_argument("--server-url", help="native path: an OpenAI-compatible /v1 URL "
                                           "(default for a GGUF: start llama-cpp's server)")
    bfcl.add_argument("--baselines", action="store_true",
                      help="run every path side by side (same as 'callgate eval compare')")
    bfcl.add_argument("--paths", nargs="+", help=argparse.SUPPRESS)
    bfcl.set_defaults(func=cmd_bfcl)

    cmp_ = evsub.add_parser("compare", help="callgate paths and baselines side by side")
    _bfcl_options(cmp_)
    cmp_.add_argument("--paths", nargs="+", metavar="PATH",
                      help="react react-nogrammar plain native native-forced create_agent "
                           "(default: all)")
    cmp_.add_argument("--server-url", help="an OpenAI-compatible /v1 URL for the server "
                                           "paths (default for a GGUF: start llama-cpp's)")
    cmp_.set_defaults(func=cmd_compare, report=Path("bfcl-compare.json"))

    diff = evsub.add_parser("diff", help="two BFCL reports side by side: each category's "
                                         "change and whether it is more than noise")
    diff.add_argument("before", type=Path, help="the JSON report before the change")
    diff.add_argument("after", type=Path, help="the JSON report after it")
    diff.add_argument("--part", choices=["all", "tune", "validate"],
                      help="only this split part (default: every part both reports have)")
    diff.set_defaults(func=cmd_diff)

    merge = evsub.add_parser("merge", help="a full run's scores with the verdicts of runs of "
                                           "some of its questions (--ids) put in: derived")
    merge.add_argument("base", type=Path, help="the full run's JSON report")
    merge.add_argument("overlays", type=Path, nargs="+",
                       help="reports of some of its questions, put in over it (later last)")
    merge.set_defaults(func=cmd_merge)

    table = evsub.add_parser("table", help="a BFCL report as the README's Markdown tables "
                                           "(accuracies from its per-question verdicts)")
    table.add_argument("report", type=Path, help="a JSON report of 'callgate eval bfcl'")
    table.set_defaults(func=cmd_table)

    out = evsub.add_parser("outputs", help="parser and sanitizer over a model-output corpus")
    out.add_argument("file", nargs="?", type=Path,
                     help="a JSONL corpus (default: the packaged corpus, or "
                          "$CALLGATE_SHARED_DATA/model-outputs/dev.jsonl)")
    out.add_argument("--json", action="store_true")
    out.add_argument("--report", type=Path, help="write the JSON report here")
    out.set_defaults(func=cmd_outputs)

    ans = evsub.add_parser("answers", help="answer quality over the built-in tools: key "
                                           "result, invented numbers, echoes, loops, speed")
    ans.add_argument("--model", default=os.environ.get("CALLGATE_MODEL", "bundled"),
                     help="model spec (default: bundled)")
    ans.add_argument("--limit", type=at_least(1), help="first N questions only")
    ans.add_argument("--data", type=Path, help="a JSONL answer set (default: the packaged one)")
    ans.add_argument("--report", type=Path, default=Path("answers-report.json"),
                     help="write the JSON report here (default: ./answers-report.json)")
    ans.add_argument("--no-report", dest="report", action="store_const", const=None)
    ans.add_argument("--ask-runs", type=at_least(0), default=3,
                     help="time `callgate ask` end to end this many times (0: not at all)")
    ans.add_argument("--max-steps", type=at_least_one, default=5)
    ans.add_argument("--quiet", action="store_true", help="no line per question")
    ans.set_defaults(func=cmd_answers)

    bench = sub.add_parser("bench", help="performance benchmarks")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    ov = bsub.add_parser("overhead", help="callgate versus create_agent on a scripted model")
    ov.add_argument("--runs", type=at_least(1), default=200)
    ov.add_argument("--concurrency", type=at_least(1), default=50)
    ov.add_argument("--warmup", type=at_least(0), default=5)
    ov.add_argument("--json", action="store_true")
    ov.add_argument("--report", type=Path, help="write the JSON result here")
    ov.set_defaults(func=cmd_overhead)
    rs = bsub.add_parser("results", help="checkpoint growth and memory with big tool results, "
                                         "callgate versus create_agent")
    rs.add_argument("--sizes", type=at_least(1), nargs="+", default=[1_000, 1_000_000, 10_000_000],
                    help="result sizes in characters (default: 1 KB, 1 MB, 10 MB)")
    rs.add_argument("--peak-sizes", type=at_least(1), nargs="+", default=[10_000_000, 50_000_000],
                    help="result sizes whose peak memory is measured (default: 10 MB, 50 MB)")
    rs.add_argument("--turns", type=at_least(1), default=3, help="turns per size (default: 3)")
    rs.add_argument("--json", action="store_true")
    rs.add_argument("--report", type=Path, help="write the JSON result here")
    rs.set_defaults(func=cmd_result_sizes)
    own_usage(evsub)
    own_usage(bsub)
