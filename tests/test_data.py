"""Locating WordNet/SemCor: resolution order, archive unpacking and checksums, error messages."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from probegen import data
from probegen.data import DataInfo, content_sha256, data_report, load_wordnet, locate_semcor, locate_wordnet
from probegen.errors import DataNotFound
from probegen.io import sha256_file
from probegen.paths import shared_data_candidates


def _shared_dir() -> Path | None:
    for d in shared_data_candidates():
        if (d / "wordnet-3.0.tar.xz").is_file() and (d / "semcor-3.0.tar.xz").is_file():
            return d
    return None


SHARED = _shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="shared/data archives not present")


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch):
    """The user's own data settings must not leak into these tests."""
    monkeypatch.delenv("PROBEGEN_WORDNET", raising=False)
    monkeypatch.delenv("PROBEGEN_SEMCOR", raising=False)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROBEGEN_CACHE", str(cache))
    return cache


def _readme_sha256() -> dict[str, str]:
    text = (SHARED / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"`([\w.-]+\.tar\.xz)`.*?\b([0-9a-f]{64})\b", text))


# ---------------------------------------------------------------- real archives


@pytest.mark.real
@needs_shared
def test_archive_checksums_match_readme():
    readme = _readme_sha256()
    # the archives probegen unpacks are listed with the checksums it pins (others may sit beside them)
    assert set(data.ARCHIVE_SHA256) == {"wordnet-3.0.tar.xz", "wordnet-3.1.tar.xz", "semcor-3.0.tar.xz"} <= set(readme)
    assert {k: readme[k] for k in data.ARCHIVE_SHA256} == data.ARCHIVE_SHA256
    for name, sha in readme.items():
        assert sha256_file(SHARED / name) == sha


@pytest.mark.real
@needs_shared
def test_unpacks_shared_archives_once_into_isolated_cache(isolated_cache, monkeypatch):
    wn1, sc1 = locate_wordnet(), locate_semcor()
    assert (wn1.source, sc1.source) == ("shared", "shared")
    assert wn1.sha256 == data.ARCHIVE_SHA256["wordnet-3.0.tar.xz"]
    assert sc1.sha256 == data.ARCHIVE_SHA256["semcor-3.0.tar.xz"]
    assert wn1.path == (isolated_cache / "data" / "wordnet-3.0").resolve()
    assert (wn1.path / "data.noun").is_file() and (wn1.path / "index.sense").is_file()
    assert all((sc1.path / d / "tagfiles").is_dir() for d in ("brown1", "brown2", "brownv"))
    assert sorted(p.name for p in (isolated_cache / "data").iterdir()) == ["semcor-3.0", "wordnet-3.0"]  # no temp left

    # later calls come from the cache and never re-hash the archive
    monkeypatch.setattr(data, "sha256_file", lambda p: pytest.fail(f"re-hashed {p}"))
    wn2, sc2 = locate_wordnet(), locate_semcor()
    assert (wn2.source, sc2.source) == ("cache", "cache")
    assert (wn2.sha256, sc2.sha256) == (wn1.sha256, sc1.sha256)
    assert (wn2.path, sc2.path) == (wn1.path, sc1.path)


@pytest.mark.real
@needs_shared
def test_default_locator_finds_real_data():
    for info, archive in ((locate_wordnet(), "wordnet-3.0.tar.xz"), (locate_semcor(), "semcor-3.0.tar.xz")):
        assert isinstance(info, DataInfo) and info.version == "3.0"
        assert info.source in ("shared", "cache")
        assert info.sha256 == data.ARCHIVE_SHA256[archive]


@pytest.mark.real
@needs_shared
def test_load_wordnet_and_report():
    wn = load_wordnet()
    assert load_wordnet() is wn  # memoised
    assert load_wordnet(str(locate_wordnet().path)) is wn  # per located folder, however it was named
    assert wn.get_version() == "3.0"
    assert wn.lemma_from_key("investigation%1:09:00::").synset().name() == "probe.n.01"
    rows = {r["name"]: r for r in data_report()}
    assert rows["wordnet"]["synsets"] == {"noun": 82115, "verb": 13767, "adj": 18156, "adv": 3621}
    assert rows["semcor"]["files"] == 352
    for r in rows.values():
        assert r["error"] is None and r["version"] == "3.0" and len(r["sha256"]) == 64


# ---------------------------------------------------------------- errors


def _assert_one_line(e: pytest.ExceptionInfo, *needles: str) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg
    return msg


@pytest.mark.parametrize("locate,option", [(locate_wordnet, "--wordnet"), (locate_semcor, "--semcor")])
def test_explicit_bad_path_raises(tmp_path, locate, option):
    with pytest.raises(DataNotFound) as e:
        locate(str(tmp_path / "nowhere"))
    _assert_one_line(e, option, "nowhere", "no such folder")
    with pytest.raises(DataNotFound) as e:
        locate(str(tmp_path))  # exists, but holds nothing
    _assert_one_line(e, option, str(tmp_path))


@pytest.mark.parametrize("locate,env", [(locate_wordnet, "PROBEGEN_WORDNET"), (locate_semcor, "PROBEGEN_SEMCOR")])
def test_env_pointing_nowhere_raises(tmp_path, monkeypatch, locate, env):
    monkeypatch.setenv(env, str(tmp_path / "missing"))
    with pytest.raises(DataNotFound) as e:
        locate()  # no fallback past an explicit setting, even though shared data exists
    _assert_one_line(e, f"{env}=", "missing")


def test_nothing_found_message(tmp_path, isolated_cache, monkeypatch):
    monkeypatch.setattr(data, "shared_data_candidates", lambda: [tmp_path / "shared" / "data"])
    monkeypatch.setattr(data, "_nltk_paths", lambda: [tmp_path / "nltk_data"])
    with pytest.raises(DataNotFound) as e:
        locate_wordnet()
    _assert_one_line(e, "--wordnet PATH", "PROBEGEN_WORDNET", "shared/data", str(isolated_cache))
    with pytest.raises(DataNotFound) as e:
        locate_semcor()
    _assert_one_line(e, "--semcor PATH", "PROBEGEN_SEMCOR", "semcor-3.0.tar.xz")
    rows = data_report()
    assert [r["name"] for r in rows] == ["wordnet", "semcor"]
    assert all(r["path"] is None and "not found" in r["error"] for r in rows)


def test_corrupt_archive_is_refused(tmp_path, isolated_cache, monkeypatch):
    shared = tmp_path / "shared" / "data"
    shared.mkdir(parents=True)
    (shared / "wordnet-3.0.tar.xz").write_bytes(b"not an archive")
    monkeypatch.setattr(data, "shared_data_candidates", lambda: [shared])
    with pytest.raises(DataNotFound) as e:
        locate_wordnet()
    _assert_one_line(e, "sha256", "wordnet-3.0.tar.xz")
    assert not (isolated_cache / "data" / "wordnet-3.0").exists()


def _tar_xz(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:xz") as tf:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))


def test_path_traversal_archive_is_refused(tmp_path, isolated_cache, monkeypatch):
    shared = tmp_path / "shared" / "data"
    shared.mkdir(parents=True)
    archive = shared / "wordnet-3.0.tar.xz"
    _tar_xz(archive, {"wordnet-3.0/data.noun": b"x\n", "wordnet-3.0/../../evil": b"boom"})
    monkeypatch.setattr(data, "shared_data_candidates", lambda: [shared])
    monkeypatch.setitem(data.ARCHIVE_SHA256, "wordnet-3.0.tar.xz", sha256_file(archive))  # get past the checksum
    with pytest.raises(DataNotFound) as e:
        locate_wordnet()
    _assert_one_line(e, "refusing")
    assert not list(tmp_path.rglob("evil"))


# ---------------------------------------------------------------- user-supplied copies


def _fake_wordnet(root: Path, header: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "data.noun").write_text(header + "00001740 03 n 01 entity 0 000 | that which exists\n")
    (root / "index.noun").write_text("entity n 1 0 1 0 00001740\n")
    return root


def test_user_copy_gets_cached_content_hash(tmp_path, isolated_cache, monkeypatch):
    root = _fake_wordnet(tmp_path / "corpora" / "wordnet")
    info = locate_wordnet(str(tmp_path))  # a parent holding corpora/wordnet is accepted too
    assert info.source == "option" and info.path == root.resolve()
    assert info.sha256 == content_sha256(root)
    assert json.loads((root / data.META_NAME).read_text())["sha256"] == info.sha256

    monkeypatch.setenv("PROBEGEN_WORDNET", str(root))
    original = data.content_sha256
    monkeypatch.setattr(data, "content_sha256", lambda p: pytest.fail("hash recomputed"))
    again = locate_wordnet()
    assert again.source == "env" and again.sha256 == info.sha256
    monkeypatch.setattr(data, "content_sha256", original)

    (root / "index.noun").write_text("changed\n")
    assert locate_wordnet(str(root)).sha256 != info.sha256  # stale record is noticed


def test_content_hash_is_order_and_location_independent(tmp_path):
    a, b = _fake_wordnet(tmp_path / "a"), _fake_wordnet(tmp_path / "b")
    assert content_sha256(a) == content_sha256(b)
    (b / "extra").write_text("x")
    assert content_sha256(a) != content_sha256(b)


def test_other_wordnet_version_is_refused(tmp_path):
    root = _fake_wordnet(tmp_path / "wn31", header="  1 WordNet 3.1 Copyright 2011 by Princeton University.\n")
    with pytest.raises(DataNotFound) as e:
        locate_wordnet(str(root))
    _assert_one_line(e, "WordNet 3.1", "3.0")


def test_nltk_xml_semcor_is_refused(tmp_path):
    for d in ("brown1", "brown2", "brownv"):
        (tmp_path / "semcor" / d / "tagfiles").mkdir(parents=True)
        (tmp_path / "semcor" / d / "tagfiles" / "br-a01.xml").write_text("<xml/>")
    with pytest.raises(DataNotFound) as e:
        locate_semcor(str(tmp_path / "semcor"))
    _assert_one_line(e, "XML")


def test_semcor_user_copy(tmp_path, isolated_cache):
    for d in ("brown1", "brown2", "brownv"):
        (tmp_path / "semcor3.0" / d / "tagfiles").mkdir(parents=True)
        (tmp_path / "semcor3.0" / d / "tagfiles" / "br-a01").write_text("<s snum=1>\n</s>\n")
    info = locate_semcor(str(tmp_path))
    assert info.source == "option" and info.path.name == "semcor3.0"
    assert info.sha256 == content_sha256(info.path)
