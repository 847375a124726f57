"""The cache of converted GGUF checkpoints, without loading a model: keys and writes."""

from __future__ import annotations

from pathlib import Path

from spade_designer.llm.transformers_backend import _gguf_cache_folder, _save_gguf_cache


class Saves:
    """Stands in for a model or tokenizer: ``save_pretrained`` writes files (or fails)."""

    def __init__(self, files: dict[str, str], fail: bool = False) -> None:
        self.files, self.fail, self.hf_quantizer = files, fail, "gguf"

    def save_pretrained(self, folder: Path) -> None:
        if self.fail:
            raise OSError("disk full")
        for name, text in self.files.items():
            (Path(folder) / name).write_text(text)


def test_the_key_follows_the_file_content_and_the_dtype(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights")
    key = _gguf_cache_folder(f, "torch.float32", tmp_path / "cache")
    assert key == _gguf_cache_folder(f, "torch.float32", tmp_path / "cache") and key.name.startswith("m-")
    assert key != _gguf_cache_folder(f, "torch.bfloat16", tmp_path / "cache")
    f.write_bytes(b"other weights")
    assert key != _gguf_cache_folder(f, "torch.float32", tmp_path / "cache")


def test_an_entry_appears_whole_without_the_gguf_quantisation_marker(tmp_path):
    model = Saves({"config.json": '{"a": 1, "quantization_config": {"quant_method": "gguf"}}', "model.safetensors": "w"})
    entry = tmp_path / "cache" / "m-abc"
    _save_gguf_cache(model, Saves({"tokenizer.json": "{}"}), entry)
    assert sorted(p.name for p in entry.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert '"quantization_config"' not in (entry / "config.json").read_text()
    assert model.hf_quantizer == "gguf"  # the loaded model is left as it was
    assert [p.name for p in entry.parent.iterdir()] == ["m-abc"]  # no partial folder left behind


def test_a_failed_write_leaves_no_entry_and_raises_nothing(tmp_path):
    entry = tmp_path / "cache" / "m-abc"
    _save_gguf_cache(Saves({}, fail=True), Saves({}), entry)
    assert not entry.exists() and list(entry.parent.iterdir()) == []


def test_a_writer_that_loses_the_race_keeps_the_winners_entry(tmp_path):
    entry = tmp_path / "cache" / "m-abc"
    entry.mkdir(parents=True)
    (entry / "config.json").write_text('{"winner": true}')
    _save_gguf_cache(Saves({"config.json": '{"loser": true}'}), Saves({}), entry)
    assert (entry / "config.json").read_text() == '{"winner": true}'
    assert [p.name for p in entry.parent.iterdir()] == ["m-abc"]
