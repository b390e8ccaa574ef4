"""`eventpyc`: compile .epy files (or folders of them) to .py beside them.

    eventpyc stock.epy            # writes stock.py
    eventpyc stock.epy -o out.py  # another path
    eventpyc src/                 # every .epy below src/
    eventpyc --check src/         # diagnostics only

Exit status: 0 when everything compiled, 1 for errors in the sources, 2 for an internal error
(a bug in eventpyc, reported with the file being compiled).
"""

from __future__ import annotations

# sys alone before main(): what it imports is inside its try, so that a Ctrl-C while eventpyc
# starts is one line (main), and `--version` loads no more than it prints
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    from pathlib import Path


def _sources(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(p.rglob("*.epy")))
        else:
            out.append(p)
    return out


def compile_file(src: Path, out: Path | None, check: bool) -> int:
    import traceback

    from . import CompileError, CompileErrors, InternalError, compile_source
    from ._source import read

    try:
        raw = src.read_bytes()
        text, encoding = read(str(src))
    except OSError as e:
        print(f"{src}: error: cannot read: {e.strerror or e}", file=sys.stderr)
        return 1
    except CompileError as e:
        print(e.render(), file=sys.stderr)
        return 1
    try:
        python = compile_source(text, str(src))
    except (CompileError, CompileErrors) as e:
        print(e.render(), file=sys.stderr)
        return 1
    except InternalError as e:  # a bug in eventpyc, not in the user's program
        print(e, file=sys.stderr)
        traceback.print_exception(e.cause)
        return 2
    if not check:
        target = out if out is not None else src.with_suffix(".py")
        if target.resolve() == src.resolve():  # `eventpyc x.py`: the output would replace the source
            print(f"{src}: error: the output would overwrite the source; EventPy sources end in .epy "
                  "(or give another path with -o)", file=sys.stderr)
            return 1
        try:
            if python == text:  # no constructs: the very bytes (line endings and all)
                target.write_bytes(raw)
            else:  # its coding declaration still holds; CRLF files stay CRLF
                crlf = b"\r\n" in raw and raw.count(b"\n") == raw.count(b"\r\n")
                target.write_text(python, encoding=encoding, newline="\r\n" if crlf else None)
        except OSError as e:
            print(f"{target}: error: cannot write: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        from .._interrupted import let_through

        let_through()  # a Ctrl-C held since `import eventpy` (_interrupted) is raised here
        return _main(argv)
    except KeyboardInterrupt:  # while it starts (lark, libcst) or compiles: one line, not a traceback
        from .._interrupted import interrupted

        return interrupted("eventpyc")


def _main(argv: list[str] | None) -> int:
    import argparse
    from pathlib import Path

    from .._version import add_version_option

    parser = argparse.ArgumentParser(prog="eventpyc", description="Compile EventPy (.epy) to Python.")
    add_version_option(parser, "eventpyc")
    parser.add_argument("paths", nargs="+", type=Path, help=".epy files or folders")
    parser.add_argument("-o", "--output", type=Path, help="output file (one input file only)")
    parser.add_argument("--check", action="store_true", help="report errors, write nothing")
    args = parser.parse_args(argv)
    barren = [p for p in args.paths if p.is_dir() and next(p.rglob("*.epy"), None) is None]
    if barren:  # a mistyped folder must not pass a `--check` that checked nothing
        for p in barren:
            print(f"{p}: error: no .epy file in this folder or below it", file=sys.stderr)
        return 1
    sources = _sources(args.paths)
    if args.output is not None and len(sources) != 1:
        parser.error("-o needs exactly one input file")
    missing = [s for s in sources if not s.is_file()]
    if missing:
        for m in missing:
            print(f"{m}: error: no such file", file=sys.stderr)
        return 1
    status = 0
    for src in sources:
        status = max(status, compile_file(src, args.output, args.check))
    return status


if __name__ == "__main__":
    sys.exit(main())
