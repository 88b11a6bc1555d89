"""User-facing errors: the CLI prints ``str(error)`` as one line and exits non-zero."""


class ProbegenError(Exception):
    """An expected failure caused by input or environment (bad data path, unknown model, ...)."""


class DataNotFound(ProbegenError):
    """WordNet or SemCor could not be located."""


class ModelNotFound(ProbegenError):
    """A model name is neither bundled, a local path, nor reachable on the hub."""


class DatasetError(ProbegenError):
    """A dataset file or directory is malformed."""


class SkippableRowError(DatasetError):
    """A row that the reader's ``on_invalid="skip"`` would leave out: a command with
    ``--on-invalid`` adds that it does (:data:`SKIP_HINT`)."""


#: what the CLI appends to a :class:`SkippableRowError` on a command that has ``--on-invalid``
SKIP_HINT = "; --on-invalid skip skips such rows"


class NonFiniteScore(ProbegenError, ValueError):
    """A scorer produced NaN or an infinity (e.g. float16 overflow); never cached or aligned."""


class NothingBuilt(ProbegenError):
    """A build met no group, item or question under its settings: nothing is written."""
