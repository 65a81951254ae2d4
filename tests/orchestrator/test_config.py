"""Config validation: every bad key or value is an error naming the key and the file."""

from pathlib import Path

import pytest

from voxarena.orchestrator.run.config import ConfigError, load_config

GOOD = """
name: t
dataset: {root: data, subsets: [test-clean]}
generators: {espeak-ng: {}}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_good_config_resolves_paths_relative_to_file(tmp_path):
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.dataset.root == str(tmp_path / "data")
    assert cfg.protocol.tasks == ["TTS"] and cfg.scorer.metrics[:4] == ["wer", "cer", "sim", "rtf"]
    assert cfg.scorer.bootstrap_resamples == 1000


@pytest.mark.parametrize(
    "text, fragment",
    [
        (GOOD + "bogus: 1\n", "bogus: unknown key"),
        (GOOD.replace("subsets", "subset"), "dataset.subset: unknown key"),
        (GOOD + "protocol: {tasks: [SING]}\n", "protocol.tasks.0"),
        (GOOD + "execution: {retries: -1}\n", "execution.retries"),
        (GOOD.replace("espeak-ng: {}", "espeak-ng: {adress: x}"), "generators.espeak-ng.adress: unknown key"),
        (GOOD.replace("generators: {espeak-ng: {}}", "generators: {}"), "at least one generator"),
        (GOOD.replace("espeak-ng", "Bad Name"), "service name 'Bad Name'"),
        ("- a\n- b\n", "expected a mapping"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_configs_name_key_and_file(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert fragment in str(e.value)
    assert str(path) in str(e.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="no such config file"):
        load_config("/nonexistent/c.yaml")


def test_overrides_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEECH", "/data/x")
    path = write(tmp_path, GOOD.replace("root: data", "root: '${SPEECH}/LibriSpeech'"))
    cfg = load_config(path, {"protocol.seed": 7, "dataset.max_items": 3})
    assert cfg.dataset.root == "/data/x/LibriSpeech" and cfg.protocol.seed == 7 and cfg.dataset.max_items == 3
    monkeypatch.delenv("SPEECH")
    with pytest.raises(ConfigError, match="SPEECH is not set") as e:
        load_config(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).resolve().parents[2] / "configs").glob("**/*.yaml")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_shipped_config_is_valid(path):
    import yaml

    if "evaluation" in yaml.safe_load(path.read_text()):  # a race file (orchestrator race): it names two configs
        from voxarena.orchestrator.race.rounds import load_race

        race = load_race(path)
        assert race.candidates and Path(race.evaluation.dataset.root).is_absolute()
        return
    cfg = load_config(path)
    assert cfg.generators and Path(cfg.dataset.root).is_absolute()
