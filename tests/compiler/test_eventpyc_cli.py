"""`eventpyc` on folders: a folder that holds no .epy file is an error, not a silent success (a
mistyped `eventpyc --check src/` in CI passed while it checked nothing)."""

from __future__ import annotations

from eventpy.compiler.cli import main


def test_a_folder_without_epy_files_is_an_error(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "plain.py").write_text("x = 1\n")
    for args in ([str(empty)], ["--check", str(empty)]):
        assert main(args) == 1
        assert capsys.readouterr().err == f"{empty}: error: no .epy file in this folder or below it\n"
    assert sorted(p.name for p in empty.iterdir()) == ["plain.py"]


def test_a_folder_with_epy_files_below_it_compiles_them(tmp_path, capsys):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.epy").write_text("x = 1\n")
    assert main([str(tmp_path / "pkg")]) == 0
    assert (tmp_path / "pkg" / "sub" / "m.py").read_text() == "x = 1\n"
    assert capsys.readouterr().err == ""
