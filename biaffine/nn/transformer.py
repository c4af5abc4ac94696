"""Word features from a pretrained transformer in a local folder (Hugging Face layout).

The model and its tokenizer load with ``local_files_only=True`` from a path (``pkg://package/
relative`` names a folder inside an installed package), never from a hub. Each word is cut into
subwords on its own, the sentence runs through the model in overlapping windows when it is
longer than the model allows, a word's states are pooled from its subwords (first or mean), and
the chosen layers are combined by a learned scalar mix (Peters et al., 2018).

``transformers`` is imported only when such a module is built (an optional extra).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocabs
from biaffine.nn.pretrained import file_sha256, resolve_path

__all__ = [
    "CHUNK_TOKENS",
    "MAX_CACHED_FORMS",
    "POOLINGS",
    "ROOTS",
    "ScalarMix",
    "SharedStates",
    "TransformerEmbedding",
    "TransformerEncoder",
]

POOLINGS = ("first", "mean")
"""How a word's vector is made from its subwords' states."""
ROOTS = ("cls", "learned")
"""ROOT's vector: the first window's [CLS] state, or a learned vector."""
_WEIGHT_SUFFIXES = (".safetensors", ".bin")


class ScalarMix(nn.Module):
    """``gamma * sum_k softmax(w)_k * layer_k`` with learned w (init 0: a plain mean) and gamma."""

    def __init__(self, n_layers: int) -> None:
        """Create the mix of ``n_layers`` layers."""
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """float[K, ...] -> float[...]."""
        weights = self.weights.softmax(0).view(-1, *([1] * (layers.dim() - 1)))
        return self.gamma * (weights * layers).sum(0)


CHUNK_TOKENS = 1024
"""Subword positions (padding included) per transformer call. Windows run in chunks of similar
length, so a batch's one long window does not pad hundreds of short ones to its width: on EWT
test (batches of 5000 words) 11% of the positions run were real subwords when each batch ran as
one call, 89% in chunks of 1024 (94% at 512, 68% at 4096)."""

MAX_CACHED_FORMS = 200_000
"""Distinct forms whose subword ids a transformer input keeps (about 50 MB); past it the cache
starts again. EWT train has 20,000."""


class SharedStates:
    """One batch's pooled states, computed by the first frozen transformer of a group that asks.

    Members of an ensemble that read the same frozen transformer the same way would each run
    it on the same batch; given one of these (:meth:`TransformerEmbedding.share`), the first
    to ask runs it and the others read its result. The slot holds one batch, which the ensemble
    forgets (:meth:`clear`) once the batch is scored.
    """

    def __init__(self) -> None:
        """An empty slot."""
        self._key: tuple[Any, ...] | None = None
        self._states: torch.Tensor | None = None

    def get(self, key: tuple[Any, ...], compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """The states stored under ``key``, or ``compute()``'s, stored in place of any others."""
        if self._states is None or self._key != key:
            self._key, self._states = key, compute()
        return self._states

    def clear(self) -> None:
        """Forget the batch held (its states are as large as the batch)."""
        self._key = self._states = None


class _HeldEmbedding(nn.Module):
    """A frozen embedding table kept outside the module tree: no parameters, no state_dict.

    Put in a fine-tuned transformer's place of its word embeddings (``keep_words``), which
    then neither train nor go into checkpoints: they are rebuilt from the model's folder.
    """

    def __init__(self, table: nn.Embedding) -> None:
        """Hold ``table``, frozen."""
        super().__init__()
        self._held = [table.requires_grad_(False)]

    @property
    def weight(self) -> torch.Tensor:
        """The table, float[V, H] (transformers reads its dtype and size)."""
        return self._held[0].weight

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> _HeldEmbedding:
        self._held[0]._apply(fn, *args, **kwargs)  # .to() and .double() reach the table
        return super()._apply(fn, *args, **kwargs)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """long[...] -> float[..., H]."""
        return self._held[0](ids)


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where the subwords of a batch go: windows to run, and which state feeds which word.

    Attributes:
        chunks: (ids long[w, t], attention long[w, t]) per transformer call: windows with
            special tokens, padded to the longest in their chunk, attention 1 at real tokens.
        slots: long[P], the word slot ``b * (N+1) + i`` each pooled state is added to.
        sources: long[P], the position of each pooled state in the chunks' states, flattened
            to [w * t] each and concatenated in order.
    """

    chunks: tuple[tuple[torch.Tensor, torch.Tensor], ...]
    slots: torch.Tensor
    sources: torch.Tensor


class TransformerEmbedding(nn.Module):
    """Pooled, scalar-mixed transformer states per word: float[B, N+1, H] from word forms.

    Frozen (default), the model runs under ``no_grad`` in eval mode and is kept out of the
    module's parameters and ``state_dict`` (checkpoints record the folder and the sha256 of its
    weight files); fine-tuned, it is a submodule like any other and its weights are saved.

    Attributes:
        n_out: the model's hidden size H.
    """

    def __init__(
        self,
        model: str,
        *,
        pooling: str = "first",
        layers: Sequence[int] | None = None,
        finetune: bool = False,
        keep_words: bool = False,
        root: str = "cls",
        window: int | None = None,
        overlap: int | None = None,
        cache: bool = False,
        sha256: str | None = None,
    ) -> None:
        """Load the tokenizer and model from a local folder.

        Args:
            model: folder with ``config.json``, the weights and the tokenizer files.
            pooling: one of :data:`POOLINGS`.
            layers: hidden-state indices to mix (0 = embeddings, -1 = last layer); None = all.
                The model runs only up to the deepest of them.
            finetune: train the transformer too (otherwise frozen).
            keep_words: fine-tuned, keep the folder's word (subword) embeddings as they are:
                not trained and not saved, since the folder's checksum is (MiniLM: 11.7 M of
                its 22.7 M weights; fine-tuning moved them by at most 0.015, worth nothing to
                the trees).
            root: one of :data:`ROOTS`.
            window: subwords per window, special tokens excluded; None = the model's maximum.
            overlap: subwords shared by consecutive windows; None = half a window.
            cache: keep each sentence's pooled layer states (frozen model only), so later
                epochs skip the transformer; not recorded by :meth:`config`. Costs
                ``2 * len(layers) * H`` bytes per word (float16): about 1 GB for EWT train
                with all 7 MiniLM states, a quarter with ``layers: [-2, -1]``.
            sha256: checksum the weight files must have (recorded by :meth:`config`).

        Raises:
            ValueError: on a missing folder, bad options, a checksum other than ``sha256``, a
                cache for a fine-tuned model (its states change with every step), or
                ``keep_words`` for a frozen one (which keeps everything).
        """
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r}; known: {', '.join(POOLINGS)}")
        if root not in ROOTS:
            raise ValueError(f"root {root!r}; known: {', '.join(ROOTS)}")
        if cache and finetune:
            raise ValueError("a cache of transformer states needs a frozen model (finetune: false)")
        if keep_words and not finetune:
            raise ValueError("keep_words applies to a fine-tuned transformer (finetune: true)")
        folder = resolve_path(model)
        if not (folder / "config.json").is_file():
            raise ValueError(f"transformer {model}: no config.json in that folder")
        self.sha256 = _checked_weights(folder, sha256, model)
        tokenizer, network, self.layers = _load(folder, layers)
        self.tokenizer = tokenizer
        self.pooling, self.finetune = pooling, finetune
        self._prefix = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
        self._suffix = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
        if root == "cls" and not self._prefix:
            raise ValueError(f"transformer {model}: root='cls' but the tokenizer has no CLS")
        specials = len(self._prefix) + len(self._suffix)
        limit = min(network.config.max_position_embeddings, tokenizer.model_max_length) - specials
        self.window = limit if window is None else window
        self.overlap = self.window // 2 if overlap is None else overlap
        if not 1 <= self.window <= limit or not 0 <= self.overlap < self.window:
            raise ValueError(
                f"transformer window={self.window} must be in [1, {limit}] and "
                f"overlap={self.overlap} in [0, window)"
            )
        if keep_words:
            network.set_input_embeddings(_HeldEmbedding(network.get_input_embeddings()))
        if finetune:
            self.model = network
        else:
            # Kept outside the module tree: no parameters to train, nothing in state_dict.
            self._frozen = [network.eval().requires_grad_(False)]
        self.mix = ScalarMix(len(self.layers))
        self.root_vector = (
            nn.Parameter(torch.zeros(network.config.hidden_size)) if root == "learned" else None
        )
        self._options = {"model": model, "pooling": pooling, "layers": layers}
        self._options |= {"finetune": finetune, "keep_words": keep_words, "root": root}
        self._options |= {"window": window, "overlap": overlap}
        self._options["cache"] = cache
        self._subwords: dict[str, list[int]] = {}
        self._cache: dict[tuple[str, ...], torch.Tensor] | None = {} if cache else None
        self._shared: SharedStates | None = None
        self.n_out = network.config.hidden_size

    @property
    def network(self) -> nn.Module:
        """The transformer (a submodule if fine-tuned, a frozen hidden one otherwise)."""
        return self.model if self.finetune else self._frozen[0]

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> TransformerEmbedding:
        # .to(device) / .double() reach the frozen network, which is not a submodule.
        if not self.finetune:
            self._frozen[0]._apply(fn, *args, **kwargs)
        return super()._apply(fn, *args, **kwargs)

    def config(self) -> dict[str, Any]:
        """Plain data rebuilding this module, with the weights' checksum.

        Records ``cache: False``: the cache speeds up the epochs of one training process,
        whose sentences recur, while a model rebuilt from a checkpoint (``predict.py``, the
        Python API) meets new sentences and would keep every one of them in memory.
        """
        return {**self._options, "cache": False, "sha256": self.sha256}

    @property
    def reading(self) -> tuple[Any, ...] | None:
        """What the pooled states depend on besides the batch; None when fine-tuned.

        Two frozen modules of equal readings give equal states on every batch (before each
        applies its own scalar mix), so they can share them (:meth:`share`).
        """
        if self.finetune:
            return None
        cls_root = self.root_vector is None  # a ROOT slot read from [CLS], in the plan
        where = (self._options["model"], self.sha256)
        return (*where, self.pooling, tuple(self.layers), cls_root, self.window, self.overlap)

    def share(self, shared: SharedStates | None, network: nn.Module | None = None) -> None:
        """Read a batch's pooled states through ``shared`` (None: compute them alone).

        ``network``: the frozen transformer of a module of the same :attr:`reading`, held in
        place of this one's, so that the group keeps one copy in memory (the frozen pair that
        ``en_ewt_minilm`` was until 2026-12-05, loaded: 676 MiB resident against 700); None keeps
        this one's.

        Raises:
            ValueError: for a fine-tuned module, whose states carry its own gradients, or a
                network given to a module that shares no states.
        """
        if shared is not None and self.finetune:
            raise ValueError("a fine-tuned transformer's states cannot be shared")
        if network is not None and shared is None:
            raise ValueError("a transformer is shared only with the states it computes")
        self._shared = shared
        if network is not None:
            self._frozen = [network]

    def forward(self, forms: Sequence[Sequence[str]], positions: int) -> torch.Tensor:
        """Word features float[B, positions, H]; ROOT at 0, zeros at padding.

        Args:
            forms: B sentences of words (ROOT excluded).
            positions: N+1, the padded length with ROOT.
        """
        if self._shared is not None:
            key = (positions, tuple(map(tuple, forms)))  # the group shares one reading
            pooled = self._shared.get(key, lambda: self._features(forms, positions))
        elif self._cache is None:
            pooled = self._features(forms, positions)
        else:
            pooled = self._cached_features(forms, positions, self._cache)
        words = self.mix(pooled)  # [B, N+1, H]
        if self.root_vector is not None:
            words = torch.cat([self.root_vector.expand(len(forms), 1, -1), words[:, 1:]], 1)
        return words

    def _features(self, forms: Sequence[Sequence[str]], positions: int) -> torch.Tensor:
        """Pooled states of the mixed layers, float[K, B, positions, H]."""
        plan = self._plan(forms, positions)
        with torch.set_grad_enabled(self.finetune and torch.is_grad_enabled()):
            layers = self._layers(plan)  # [K, W*T, H]
        pooled = self._pool(layers, plan, len(forms) * positions)  # [K, B*(N+1), H]
        return pooled.view(pooled.shape[0], len(forms), positions, -1)

    def _cached_features(
        self,
        forms: Sequence[Sequence[str]],
        positions: int,
        cache: dict[tuple[str, ...], torch.Tensor],
    ) -> torch.Tensor:
        """:meth:`_features` through ``cache`` (float16 [K, n+1, H] per sentence, on the CPU)."""
        keys = [tuple(sentence) for sentence in forms]
        missing = [key for key in dict.fromkeys(keys) if key not in cache]
        if missing:
            fresh = self._features(missing, max(map(len, missing)) + 1).half().cpu()
            for m, key in enumerate(missing):
                cache[key] = fresh[:, m, : len(key) + 1].clone()  # [K, n+1, H]
        out = torch.zeros(len(self.layers), len(keys), positions, self.n_out)
        for b, key in enumerate(keys):
            out[:, b, : len(key) + 1] = cache[key]
        return out.to(self.mix.weights.device)

    def _layers(self, plan: _Plan) -> torch.Tensor:
        """The mixed layers' states of every chunk, float[K, sum of w * t, H]."""
        device = self.mix.weights.device
        states = []
        for ids, attention in plan.chunks:
            out = self.network(
                input_ids=ids.to(device),
                attention_mask=attention.to(device),
                output_hidden_states=True,
            )
            chunk = torch.stack([out.hidden_states[k] for k in self.layers])  # [K, w, t, H]
            states.append(chunk.flatten(1, 2))
        return torch.cat(states, 1)

    def _pool(self, layers: torch.Tensor, plan: _Plan, n_slots: int) -> torch.Tensor:
        device = layers.device
        slots, sources = plan.slots.to(device), plan.sources.to(device)
        total = layers.new_zeros(layers.shape[0], n_slots, layers.shape[2])
        total = total.index_add(1, slots, layers[:, sources])
        counts = torch.zeros(n_slots, device=device).index_add_(
            0, slots, torch.ones_like(slots, dtype=total.dtype)
        )
        return total / counts.clamp(min=1.0).view(1, -1, 1)

    def subwords(self, form: str) -> list[int]:
        """Subword ids of one word (cached per form); [UNK] if the tokenizer gives none."""
        ids = self._subwords.get(form)
        if ids is None:
            ids = self.tokenizer(form, add_special_tokens=False)["input_ids"]
            ids = ids or [self.tokenizer.unk_token_id]
            if len(self._subwords) >= MAX_CACHED_FORMS:
                # A parser kept loaded by a service meets new numbers, names and typos without
                # end: the cache grew by ~250 bytes a form for good. A fresh dict, not clear():
                # a thread parsing beside this one may be writing to the old one.
                self._subwords = {}
            self._subwords[form] = ids
        return ids

    def _plan(self, forms: Sequence[Sequence[str]], positions: int) -> _Plan:
        windows: list[list[int]] = []
        slots: list[int] = []
        reads: list[tuple[int, int]] = []  # (window, position in it) of each pooled state
        for b, sentence in enumerate(forms):
            ids, owners, firsts = self._sentence_subwords(sentence)
            starts = window_starts(len(ids), self.window, self.overlap)
            if self.root_vector is None:  # ROOT is the [CLS] state of the first window
                slots.append(b * positions)
                reads.append((len(windows), 0))
            for j, (window, offset) in enumerate(assign_windows(len(ids), starts, self.window)):
                if self.pooling == "mean" or firsts[j]:
                    slots.append(b * positions + owners[j])
                    reads.append((len(windows) + window, len(self._prefix) + offset))
            for start in starts:
                windows.append(self._prefix + ids[start : start + self.window] + self._suffix)
        chunks, where = _chunked(windows, self.tokenizer.pad_token_id or 0, CHUNK_TOKENS)
        sources = [where[window] + position for window, position in reads]
        return _Plan(chunks, torch.tensor(slots), torch.tensor(sources))

    def _sentence_subwords(
        self, sentence: Sequence[str]
    ) -> tuple[list[int], list[int], list[bool]]:
        """Subword ids, the word (1..n) owning each, and whether each starts its word."""
        ids: list[int] = []
        owners: list[int] = []
        firsts: list[bool] = []
        for i, form in enumerate(sentence, start=1):
            pieces = self.subwords(form)
            ids += pieces
            owners += [i] * len(pieces)
            firsts += [True] + [False] * (len(pieces) - 1)
        return ids, owners, firsts


def chunk_windows(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Window indices grouped by length: each group's size * its longest length <= ``budget``.

    Windows are taken shortest first, so padding within a group is small; a window longer
    than ``budget`` runs alone.
    """
    groups: list[list[int]] = []
    for w in sorted(range(len(lengths)), key=lengths.__getitem__):
        if not groups or (len(groups[-1]) + 1) * lengths[w] > budget:
            groups.append([])
        groups[-1].append(w)
    return groups


def _chunked(
    windows: list[list[int]], pad_id: int, budget: int
) -> tuple[tuple[tuple[torch.Tensor, torch.Tensor], ...], list[int]]:
    """Padded (ids, attention) per chunk, and each window's first row position in their states."""
    chunks = []
    where = [0] * len(windows)
    start = 0
    for group in chunk_windows([len(window) for window in windows], budget):
        width = max(len(windows[w]) for w in group)
        ids = torch.full((len(group), width), pad_id)
        attention = torch.zeros(len(group), width, dtype=torch.long)
        for row, w in enumerate(group):
            ids[row, : len(windows[w])] = torch.tensor(windows[w])
            attention[row, : len(windows[w])] = 1
            where[w] = start + row * width
        chunks.append((ids, attention))
        start += len(group) * width
    return tuple(chunks), where


def window_starts(n: int, window: int, overlap: int) -> list[int]:
    """First subword of each window covering ``n`` subwords; the last window ends at ``n``."""
    if n <= window:
        return [0]
    step = window - overlap
    starts = list(range(0, n - window, step))
    return [*starts, n - window]


def assign_windows(n: int, starts: list[int], window: int) -> list[tuple[int, int]]:
    """(window, offset in it) of each of ``n`` subwords: the window where it is most central.

    Where two windows overlap, the first half of the shared span reads the earlier window and the
    second half the later one, so a subword near a window's edge takes its state from the
    window that gives it context on both sides.
    """
    # Window k+1 takes over at the middle of the span it shares with window k.
    switches = [(starts[k + 1] + starts[k] + window) // 2 for k in range(len(starts) - 1)]
    owners, k = [], 0
    for j in range(n):
        while k < len(switches) and j >= switches[k]:
            k += 1
        owners.append((k, j - starts[k]))
    return owners


def _checked_weights(folder: Any, expected: str | None, name: str) -> str:
    files = sorted(p for p in folder.iterdir() if p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        raise ValueError(f"transformer {name}: no weight file (*.safetensors, *.bin) in it")
    actual = file_sha256(files)
    if expected is not None and actual != expected:
        raise ValueError(
            f"transformer {name}: weights sha256 {actual[:12]}... differ from "
            f"{expected[:12]}... recorded when the model was trained; use the same folder"
        )
    return actual


def _load(folder: Any, layers: Sequence[int] | None) -> tuple[Any, nn.Module, list[int]]:
    """The tokenizer, the model and the indices of the states to mix (0 = embeddings).

    The model is built only as deep as the deepest state ``layers`` names (negative ones count
    from the full model's last layer; None = all): the states below need none of the layers
    above them, and a frozen model's cost is its layers, so MiniLM-L6 mixing states 0 to 3
    runs three of its six.
    """
    try:
        import transformers  # optional extra: rootparse[transformer]
    except ModuleNotFoundError as error:
        raise ValueError(
            "a transformer encoder needs the transformers package: pip install "
            "'rootparse[transformer]'"
        ) from error
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    n_states = config.num_hidden_layers + 1
    if layers is not None and not layers:  # max(1, *[]) was a TypeError traceback
        raise ValueError(
            f"transformer {folder.name}: layers [] mixes no state: give some of 0 (the "
            f"embeddings) to {n_states - 1}, or null for all"
        )
    if layers is not None and not all(-n_states <= k < n_states for k in layers):
        raise ValueError(
            f"transformer {folder.name}: layers {list(layers)} must be in [{-n_states}, "
            f"{n_states - 1}]: the model has {n_states} states, the embeddings and "
            f"{n_states - 1} layers"
        )
    states = list(range(n_states)) if layers is None else [k % n_states for k in layers]
    config.num_hidden_layers = max(1, *states)  # with no layer, no states come out at all
    # The weights of the layers left out are read and dropped; say nothing of them, and draw
    # no progress bar of the loading either (transformers 5 draws one on stderr by default,
    # once for each member of an ensemble: noise in every predict.py run).
    verbosity = transformers.logging.get_verbosity()
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        network = transformers.AutoModel.from_pretrained(
            folder, config=config, local_files_only=True
        )
    finally:
        transformers.logging.set_verbosity(verbosity)
        if bars:
            transformers.utils.logging.enable_progress_bar()
    return tokenizer, network, states


class TransformerEncoder(nn.Module):
    """Transformer word features as the states of every parser (ROOT from [CLS] or learned).

    Best fine-tuned (``finetune: true``): a frozen model's layers are not trained for parsing,
    and with nothing trainable above them but the scalar mix the parser sees them as they are;
    for a frozen model, feed the features to the BiLSTM ``Encoder`` (its ``transformer`` option).

    Attributes:
        kind: registry name.
        n_out: the model's hidden size.
    """

    kind: ClassVar[str] = "transformer"

    def __init__(
        self,
        vocabs: Vocabs,
        *,
        model: str,
        pooling: str = "first",
        layers: Sequence[int] | None = None,
        finetune: bool = True,
        keep_words: bool = False,
        root: str = "cls",
        window: int | None = None,
        overlap: int | None = None,
        cache: bool = False,
        dropout: float = 0.1,
        sha256: str | None = None,
    ) -> None:
        """Build the embedding (see :class:`TransformerEmbedding`) and the output dropout.

        Args:
            vocabs: unused (words are read as text); kept for the encoder interface.
            model: local model folder.
            pooling: see :class:`TransformerEmbedding`.
            layers: see :class:`TransformerEmbedding`.
            finetune: see :class:`TransformerEmbedding`.
            keep_words: see :class:`TransformerEmbedding`.
            root: see :class:`TransformerEmbedding`.
            window: see :class:`TransformerEmbedding`.
            overlap: see :class:`TransformerEmbedding`.
            cache: see :class:`TransformerEmbedding`.
            dropout: dropout on the output states.
            sha256: see :class:`TransformerEmbedding`.
        """
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"encoder dropout={dropout} must be in [0, 1)")
        self.embedding = TransformerEmbedding(
            model,
            pooling=pooling,
            layers=layers,
            finetune=finetune,
            keep_words=keep_words,
            root=root,
            window=window,
            overlap=overlap,
            cache=cache,
            sha256=sha256,
        )
        self.dropout = nn.Dropout(dropout)
        self.n_out = self.embedding.n_out

    def config(self) -> dict[str, Any]:
        """Plain data: ``build_encoder(vocabs, config)`` rebuilds this encoder."""
        return {"kind": self.kind, **self.embedding.config(), "dropout": self.dropout.p}

    def forward(self, batch: Batch, *, tag: bool = True) -> torch.Tensor:
        """States float[B, N+1, H]; zeros at padding. Reads ``batch.forms``.

        ``tag`` is read by nothing: the taggers read the states the tree heads read.
        """
        states = self.embedding(batch_forms(batch), batch.words.shape[1])
        keep = batch.mask.clone()
        keep[:, 0] = True
        return self.dropout(states) * keep.unsqueeze(-1).to(states.dtype)


def batch_forms(batch: Batch) -> tuple[tuple[str, ...], ...]:
    """The batch's word forms.

    Raises:
        ValueError: if the batch was made without them.
    """
    if batch.forms is None:
        raise ValueError("this encoder reads word forms, but the batch has none (Batch.forms)")
    return batch.forms
