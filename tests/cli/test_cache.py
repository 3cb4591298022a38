"""``spectheory cache list|clear``."""

from __future__ import annotations

from spectheory.cli import main


def test_cache_list_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "k.safetensors").write_bytes(b"x" * 2048)
    (tmp_path / "heads").mkdir()
    (tmp_path / "heads" / "h.safetensors.tmp").write_bytes(b"y" * 10)
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert f"cache folder {tmp_path}" in out
    assert "k.safetensors" in out and "partial write" in out and "2 files" in out
    assert main(["cache", "clear", "--kind", "heads"]) == 0
    assert "removed 1 heads files" in capsys.readouterr().out
    assert (tmp_path / "traces" / "k.safetensors").is_file()
    assert main(["cache", "clear"]) == 0
    assert "removed 1 files (0.00 MiB)" in capsys.readouterr().out
    assert not (tmp_path / "traces" / "k.safetensors").exists()
    assert main(["cache", "list", "--kind", "bogus"]) == 2
    assert "invalid choice" in capsys.readouterr().err
