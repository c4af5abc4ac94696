"""A neural transition-based parser (Kiperwasser & Goldberg, 2016) on the shared encoder.

The encoder runs once per sentence; a configuration is scored from the encoder states of a few
stack and buffer words by an MLP. Training follows a static oracle: every configuration of a
batch is known before the network runs, so a batch is one gather and one MLP call. Parsing
(:mod:`biaffine.inference.transition`) steps a batch of configurations in lockstep.

The model never searches: it imports :mod:`transitions` for the oracle sequences of its gold
trees only (the training targets), as the graph parser reads gold heads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import transitions
from biaffine.data.batching import Batch
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocab, Vocabs
from biaffine.parsers.base import register
from biaffine.parsers.beam_loss import beam_losses
from biaffine.parsers.heads import (
    ArcScorer,
    LabelScorer,
    LabelVectors,
    TagRequest,
    mean_cross_entropy,
)
from biaffine.parsers.shared import EncoderParser, check_sizes, check_tagger_weights
from transitions.projective import projectivize

__all__ = ["TransitionParser", "TransitionScores", "TransitionStates", "check_partner"]


@dataclass(frozen=True, slots=True)
class TransitionStates:
    """What parsing reads from the network for one batch: states and label vectors.

    Attributes:
        slots: float[B, N+2, K, arc_mlp]; ``slots[b, i, k]`` is word i's contribution to the
            transition MLP's first layer when it fills feature slot k (s0, s1, ..., b0, ...).
            Positions 0..N are the encoder states' (0 is ROOT); N+1 is the learned vector of
            an empty stack or buffer slot, so a feature position -1 reads index N+1.
        labels: the label MLP vectors of the words, float[B, N+1, rel_mlp] each.
        tag_scores: tagger scores by column (see :class:`~biaffine.parsers.graph.GraphScores`).
        arc_scores: float[B, N+1, N+1] of the graph head (``[b, d, h]``, impossible heads at
            ``-inf``), None without one.
    """

    slots: torch.Tensor
    labels: LabelVectors
    tag_scores: dict[str, torch.Tensor] = field(default_factory=dict)
    arc_scores: torch.Tensor | None = None


@dataclass(frozen=True, slots=True)
class TransitionScores:
    """Training scores of one batch: the oracle's configurations, scored.

    Attributes:
        encoded: the batch's :class:`TransitionStates`.
        transition_scores: float[T, A] for the T training configurations of the batch (the
            static oracle's, sentence after sentence; or those the parser visited with the
            dynamic oracle, step after step), illegal transitions at ``-inf``.
        actions: long[T], the oracle's transition in each configuration (dynamic oracle: its
            best-scored zero-cost transition).
        targets: bool[T, A], the dynamic oracle's zero-cost transitions; None with the static
            oracle (its one action is the target).
        beam_losses: float[B], beam training's loss of each sentence
            (:func:`~biaffine.parsers.beam_loss.beam_losses`); the transition scores and
            actions are then empty (T = 0). None otherwise.
    """

    encoded: TransitionStates
    transition_scores: torch.Tensor
    actions: torch.Tensor
    targets: torch.Tensor | None = None
    beam_losses: torch.Tensor | None = None


@register
class TransitionParser(EncoderParser):
    """Greedy transition parser (Kiperwasser & Goldberg, 2016) with a biaffine label scorer.

    A configuration's features are the encoder states of its top ``n_stack`` stack words and
    first ``n_buffer`` buffer words (s0, s1, s2, b0, b1 by default), a learned vector standing
    for an empty slot; an MLP scores the unlabelled transitions of the system, and illegal ones
    are masked before the softmax (training) or the argmax (parsing).

    Labels come from the graph parser's label scorer
    (:class:`~biaffine.parsers.heads.LabelScorer`) on each arc of the finished tree, rather than
    from labelled transitions: the two paradigms then differ in how they find heads only (a
    cleaner comparison), the classifier has ``A`` outputs instead of about ``2 * n_rels``, and
    the label choice follows the same rule as graph parsing
    (:func:`biaffine.inference.graph.choose_labels`, which also decides the ROOT label).

    Projective systems train on pseudo-projective trees (Nivre & Nilsson, 2005, "head"
    encoding, :meth:`prepare_training`); their output is deprojectivized after labelling.

    With ``oracle="dynamic"`` (arc-eager and arc-hybrid) training follows the parser instead of
    the gold sequence (Goldberg & Nivre, 2012; Kiperwasser & Goldberg, 2016): the batch is
    parsed in lockstep, each configuration's target is its set of zero-cost transitions
    (:func:`transitions.costs`), the loss is ``-log`` of their total probability, and the
    parser takes its own best transition when that is zero-cost, and when it is not, takes it
    anyway with probability ``exploration`` (error exploration) and else the best zero-cost
    one, so it learns to recover from its own mistakes.

    With ``graph_loss_weight`` > 0 the parser is the combined model of Zhang & Clark (2008) on
    one encoder: it composes the graph parser's arc scorer
    (:class:`~biaffine.parsers.heads.ArcScorer`, Dozat & Manning 2017) as its ``graph`` head,
    trained beside the transition classifier on the sum of the losses, and a search can add its arc
    log-probabilities to the transition scores (``DecoderSettings.graph_weight``). One
    encoder and one loss rather than two models joined at parsing time: one checkpoint, one
    encoder pass per sentence, and each head regularizes the other's encoder states.

    With ``beam_loss={"size": k}`` (k > 0) the transition model is globally normalized and
    trained with the beam (Andor et al. 2016; Zhang & Clark 2008 train with the beam too): each
    batch is decoded with a beam of k items on the raw transition scores, and the transition
    loss is the beam's CRF loss with early update
    (:func:`~biaffine.parsers.beam_loss.beam_losses`), per word. Its searches then rank paths
    by raw score sums (:attr:`global_scores`). ``beam_loss["graph_weight"]`` > 0 (combined
    model) adds that weight times the graph head's arc log-probabilities to the items' scores
    in training; parse with the same ``graph_weight``. Start from a locally trained
    checkpoint (``trainer.init_from``), as Andor et al. do.

    Attributes:
        kind: registry name recorded in checkpoints.
        family: :mod:`biaffine.inference` dispatches to the lockstep transition search.
        system: the :class:`transitions.TransitionSystem`.
        n_stack: stack words read per configuration.
        n_buffer: buffer words read per configuration.
        rel_names: the relation vocabulary (deprojectivization reads the encoded labels).
        encoder: the shared encoder.
        labels: the label scorer.
        taggers: the tagger heads present, by column.
        graph: the combined model's arc scorer, or None.
        partner: a separately trained graph parser whose arc scores a search adds (:meth:`pair`),
            or None.
    """

    kind: ClassVar[str] = "transition"
    family: ClassVar[str] = "transition"

    def __init__(
        self,
        vocabs: Vocabs,
        encoder: nn.Module,
        *,
        system: str = "arc_hybrid",
        attach_leftovers: bool | None = None,
        swap_oracle: str | None = None,
        n_stack: int = 3,
        n_buffer: int = 2,
        arc_mlp: int = 400,
        rel_mlp: int = 100,
        tag_mlp: int = 100,
        mlp_dropout: float = 0.33,
        tag_loss_weight: float = 0.0,
        xpos_loss_weight: float = 0.0,
        feats_loss_weight: float = 0.0,
        lemma_loss_weight: float = 0.0,
        graph_loss_weight: float = 0.0,
        graph_mlp: int = 400,
        oracle: str = "static",
        exploration: float = 0.1,
        beam_loss: Mapping[str, Any] | None = None,
    ) -> None:
        """Build the transition and label scorers on top of ``encoder``.

        Args:
            vocabs: training vocabularies (relations and the tagged columns are read).
            encoder: the shared encoder, with ``n_out`` and ``config()``.
            system: a name of :data:`transitions.SYSTEM_NAMES`.
            attach_leftovers: arc_eager only: headless words left on the stack go to ROOT
                (default True, MaltParser's heuristic).
            swap_oracle: swap only: the static oracle, "lazy" (default) or "eager".
            n_stack: stack words read by the transition MLP (s0, s1, ...).
            n_buffer: buffer words read by the transition MLP (b0, b1, ...).
            arc_mlp: hidden size of the transition MLP (named like the graph parser's arc MLP,
                so that one experiment file sizes either family).
            rel_mlp: size of the label MLPs.
            tag_mlp: size of each auxiliary tagger's MLP.
            mlp_dropout: dropout after the MLPs.
            tag_loss_weight: weight of the auxiliary UPOS loss; 0 disables that head.
            xpos_loss_weight: weight of the auxiliary XPOS loss; 0 disables that head.
            feats_loss_weight: weight of the auxiliary FEATS loss; 0 disables that head.
            lemma_loss_weight: weight of the lemmatizer's loss (edit scripts, see
                :mod:`biaffine.data.lemmas`); 0 disables that head.
            graph_loss_weight: weight of the graph head's per-word head cross entropy; 0 (the
                default) builds no graph head, > 0 makes the combined model.
            graph_mlp: size of the graph head's arc MLPs (when it is built).
            oracle: training targets: ``static`` (the gold sequence) or ``dynamic`` (zero-cost
                transitions in the configurations the parser reaches; arc_eager, arc_hybrid).
            exploration: dynamic oracle: probability of following a wrong best transition.
            beam_loss: beam training: ``size`` (k; 0 or None: the local loss) and
                ``graph_weight`` (combined model: weight of the graph head's arc
                log-probabilities in the items' scores, default 0).

        Raises:
            ValueError: an unknown system or option, sizes < 1 (n_stack + n_buffer < 1), a
                dropout outside [0, 1), a negative loss weight, a bad ``beam_loss``.
        """
        super().__init__()
        beam_loss = _beam_options(beam_loss, oracle, graph_loss_weight)
        self.system = transitions.get_system(
            system, attach_leftovers=attach_leftovers, swap_oracle=swap_oracle
        )
        # Resolved options, so a checkpoint says which variant it holds.
        if system == "arc_eager":
            attach_leftovers = self.system.attach_leftovers
        if system == "swap":
            swap_oracle = "lazy" if self.system.lazy else "eager"
        self._config = {
            k: v for k, v in locals().items() if k not in ("self", "__class__", "vocabs", "encoder")
        }
        _validate(self._config, encoder)
        if oracle == "dynamic" and not self.system.dynamic:
            raise ValueError(
                f"oracle=dynamic: {system} has no dynamic oracle (arc_eager, arc_hybrid do)"
            )
        self.encoder = encoder
        self.rel_names = tuple(vocabs.rels.itos)
        self.n_stack, self.n_buffer = n_stack, n_buffer
        n_states, width = encoder.n_out, n_stack + n_buffer
        self.empty = nn.Parameter(torch.zeros(n_states))
        # The MLP's first layer on the concatenated slots [x_1; ...; x_K] is the sum of one
        # projection per slot, W_k x_k: projecting every word once per slot (B * (N+2) * K rows)
        # costs about half of projecting every configuration (2n per sentence) and leaves a
        # gather and a sum per configuration (the precomputation of Chen & Manning, 2014).
        bound = (width * n_states) ** -0.5  # nn.Linear's default on K * H inputs
        self.slot_weight = nn.Parameter(
            torch.empty(width, n_states, arc_mlp).uniform_(-bound, bound)
        )
        self.slot_bias = nn.Parameter(torch.empty(arc_mlp).uniform_(-bound, bound))
        self.transition_mlp = nn.Sequential(
            nn.LeakyReLU(0.1),
            nn.Dropout(mlp_dropout),
            nn.Linear(arc_mlp, len(self.system.transitions)),
        )
        self.labels = LabelScorer(n_states, rel_mlp, len(vocabs.rels), dropout=mlp_dropout)
        self.taggers = self.build_taggers(vocabs)
        self.graph = (
            ArcScorer(n_states, graph_mlp, dropout=mlp_dropout) if graph_loss_weight > 0 else None
        )
        self.partner: nn.Module | None = None  # a graph parser paired for parsing (pair)

    @classmethod
    def prepare_training(
        cls, sentences: Sequence[Sentence], config: Mapping[str, Any]
    ) -> list[Sentence]:
        """The training sentences as this parser learns from them, before vocabularies exist.

        Projective systems get pseudo-projective trees (Nivre & Nilsson, 2005): non-projective
        arcs lifted, their labels encoded ``deprel|headdeprel``, so that the relation
        vocabulary built from these sentences holds the encoded labels that parsing outputs
        and deprojectivization decodes. The swap system takes the trees as they are.

        Args:
            sentences: annotated training sentences.
            config: the parser options (``system`` and its options; others are ignored).

        Returns:
            Sentences with the trees the oracle will read (the same objects where unchanged).

        Raises:
            ValueError: a sentence with several words on ROOT for a system that builds
                single-rooted trees (names the file and line).
        """
        system = transitions.get_system(
            config.get("system", "arc_hybrid"),
            attach_leftovers=config.get("attach_leftovers"),
            swap_oracle=config.get("swap_oracle"),
        )
        prepared = []
        for sentence in sentences:
            if sentence.heads is None:
                raise ValueError(f"{sentence.source}:{sentence.line}: training needs a tree")
            roots = sentence.heads.count(0)
            if system.single_root and roots != 1:
                raise ValueError(
                    f"{sentence.source}:{sentence.line}: {roots} words on ROOT, but "
                    f"{system.name} builds trees with exactly one"
                )
            if system.projective:
                lifted = projectivize([-1, *sentence.heads], sentence.deprels)
                if lifted.n_lifted:
                    sentence = sentence.with_tree(lifted.heads[1:].tolist(), lifted.deprels)
            prepared.append(sentence)
        return prepared

    @property
    def global_scores(self) -> bool:
        """Trained with the beam: a search ranks paths by raw score sums, not log-softmax."""
        return self._config["beam_loss"]["size"] > 0

    def encode(self, batch: Batch, *, tag: TagRequest = True) -> TransitionStates:
        """Per-slot first-layer projections of the states (and the empty vector), label vectors.

        Args:
            batch: the batch (the encoder reads its inputs).
            tag: the taggers to run (:data:`~biaffine.parsers.heads.TagRequest`); parsing
                runs those its columns read, none for trees alone.
        """
        encoded = self.encode_states(self.encoder(batch, tag=bool(tag)), batch, tag=tag)
        if self.partner is None:
            return encoded
        return replace(encoded, arc_scores=self.partner(batch, tag=False).arc_scores)

    def pair(self, partner: nn.Module | None) -> None:
        """Search with another model's arc scores in place of a graph head (None: unpair).

        Zhang & Clark's (2008) combination at parsing time: this model's transition scores
        plus ``graph_weight`` times the arc log-probabilities of a separately trained graph
        parser (``search.graph_weight``). The partner reads the same batches, so it must have
        the same word and character vocabularies (:func:`check_partner`). It is for parsing
        only: never trained, exported or saved with this model.
        """
        self.partner = partner

    @property
    def has_arc_scores(self) -> bool:
        """Whether :meth:`encode` gives arc scores: a graph head, or a paired graph parser."""
        return self.graph is not None or self.partner is not None

    def encode_states(
        self, states: torch.Tensor, batch: Batch, *, tag: TagRequest = True
    ) -> TransitionStates:
        """:meth:`encode` from the encoder states float[B, N+1, H] of ``batch``.

        ``batch`` gives ``lengths`` and ``mask`` only (an export reads the states alone).
        """
        states, tag_states = self.split_states(states)
        empty = self.empty.to(states.dtype).expand(states.shape[0], 1, -1)
        with_empty = torch.cat([states, empty], 1)  # [B, N+2, H]
        n_slots, n_states, hidden = self.slot_weight.shape
        weight = self.slot_weight.to(states.dtype).transpose(0, 1).reshape(n_states, -1)
        slots = (with_empty @ weight).view(*with_empty.shape[:2], n_slots, hidden)
        tag_scores = self.taggers(tag_states, batch.mask, tag) if tag else {}
        arc_scores = None if self.graph is None else self.graph(states, batch.lengths)
        return TransitionStates(slots, self.labels(states), tag_scores, arc_scores)

    def score_transitions(
        self, encoded: TransitionStates, rows: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """Transition scores of C configurations: one gather and one MLP call.

        Args:
            encoded: :meth:`encode` of the batch.
            rows: long[C], the batch row (sentence) of each configuration.
            positions: long[C, K], feature word positions (``Configs.positions``), -1 for an
                empty slot.

        Returns:
            float[C, A], unmasked.
        """
        return self.score_slots(encoded.slots, rows, positions)

    def score_slots(
        self, slots: torch.Tensor, rows: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """:meth:`score_transitions` from the slot projections alone (what an export reads).

        Args:
            slots: float[B, N+2, K, arc_mlp], :attr:`TransitionStates.slots` of the batch.
            rows: long[C], the batch row (sentence) of each configuration.
            positions: long[C, K], feature word positions, -1 for an empty slot.

        Returns:
            float[C, A], unmasked.
        """
        width, n_slots = slots.shape[1], slots.shape[2]  # N+2 (the last is the empty vector), K
        index = rows.unsqueeze(1) * width + positions.masked_fill(positions < 0, width - 1)
        table = slots.reshape(-1, slots.shape[-1])  # [B * (N+2) * K, arc_mlp], row (word, slot)
        rows_of_slots = index * n_slots + torch.arange(n_slots, device=index.device)  # [C, K]
        if torch.onnx.is_in_onnx_export():
            # An ONNX embedding_bag is a Loop over the configurations; a Gather is one op.
            summed = table[rows_of_slots].sum(1)
        else:
            # One summed lookup: forward and backward 3-4x faster on CPU than advanced indexing
            # and a sum (8 ms against 24-36 ms for 3,000 configurations), 1-2% of a training step.
            summed = F.embedding_bag(rows_of_slots, table, mode="sum")
        return self.transition_mlp(summed + self.slot_bias)  # [C, A] from [C, arc_mlp]

    def slot_mlp(self) -> dict[str, Any]:
        """The layers after the slots, as float32 numpy: what a search needs besides the slots.

        Returns:
            ``bias`` float32[arc_mlp] (the first layer's), ``weight`` float32[A, arc_mlp] and
            ``out_bias`` float32[A] (the output layer's; dequantized where the layer holds int8
            weights), ``leak`` (the LeakyReLU's slope): :meth:`transitions.SlotScorer.of`'s
            arguments after the slots.
        """
        activation, _, output = self.transition_mlp
        weight, bias = output.weight, output.bias
        if callable(weight):  # int8 weights (predicting.quantized): weight() and bias() methods
            weight, bias = weight().dequantize(), bias()
        return {
            "bias": _numpy(self.slot_bias),
            "weight": _numpy(weight),
            "out_bias": _numpy(bias),
            "leak": activation.negative_slope,
        }

    def slot_scorer(self, slots: torch.Tensor) -> transitions.SlotScorer:
        """What a search reads in parsing: a batch's slots and :meth:`slot_mlp`, as numpy.

        Args:
            slots: float[B, N+2, K, arc_mlp], :attr:`TransitionStates.slots` of the batch.

        Returns:
            The :class:`transitions.SlotScorer` whose scores are :meth:`score_slots`' (up to
            the order of the float sums); a greedy search runs on it without calling back.
        """
        return transitions.SlotScorer.of(_numpy(slots), **self.slot_mlp())

    def forward(self, batch: Batch) -> TransitionScores:
        """Score the static oracle's configurations of a batch's gold trees.

        Args:
            batch: reads ``heads`` long[B, N+1] (the trees of :meth:`prepare_training`) and
                ``lengths``, besides the encoder's inputs.

        Returns:
            :class:`TransitionScores`.

        Raises:
            ValueError: a gold tree the system's oracle cannot take (names the sentence).
        """
        encoded = self.encode(batch)
        if self.training and self._config["oracle"] == "dynamic":
            return self._explore(encoded, batch)
        if self.training and self.global_scores:
            return self._beam(encoded, batch)
        oracle = self._oracle(batch)
        device = encoded.slots.device
        counts = np.diff(oracle.offsets)
        rows = torch.from_numpy(np.repeat(np.arange(len(counts)), counts)).to(device)
        positions = torch.from_numpy(oracle.positions).to(device)
        scores = self.score_transitions(encoded, rows, positions)
        legal = torch.from_numpy(oracle.legal).to(device)
        scores = scores.masked_fill(~legal, float("-inf"))
        actions = torch.from_numpy(oracle.actions).to(device)
        return TransitionScores(encoded, scores, actions)

    def _explore(self, encoded: TransitionStates, batch: Batch) -> TransitionScores:
        """Parse the batch in lockstep, scoring every configuration the parser reaches.

        The exploration draws come from torch's generator, so a seeded batch explores alike.
        """
        device = encoded.slots.device
        lengths = batch.lengths.cpu().numpy()
        gold = batch.heads.cpu().numpy().copy()
        gold[:, 0] = -1
        gold[np.arange(gold.shape[1]) > lengths[:, None]] = -1
        rng = np.random.default_rng(int(torch.randint(2**31, ()).item()))
        configs = self.system.initial(lengths)
        steps: list[tuple[torch.Tensor, np.ndarray, np.ndarray]] = []
        active = ~self.system.terminal(configs)
        while active.any():
            rows = np.flatnonzero(active)
            positions = torch.from_numpy(configs.positions(self.n_stack, self.n_buffer)[rows])
            scores = self.score_transitions(
                encoded, torch.from_numpy(rows).to(device), positions.to(device)
            )
            cost = transitions.costs(self.system, configs.take(rows), gold[rows])  # -1: illegal
            scores = scores.masked_fill(torch.from_numpy(cost < 0).to(device), float("-inf"))
            best_cost = np.where(cost < 0, np.iinfo(np.int64).max, cost).min(1, keepdims=True)
            targets = cost == best_cost  # zero-cost, or the cheapest where none is (never seen)
            plain = scores.detach().float().cpu().numpy()
            predicted = plain.argmax(1)
            best_target = np.where(targets, plain, -np.inf).argmax(1)
            wrong = ~targets[np.arange(rows.size), predicted]
            explore = wrong & (rng.random(rows.size) < self._config["exploration"])
            actions = np.zeros(len(configs), dtype=np.int64)
            actions[rows] = np.where(explore, predicted, best_target)
            self.system.apply(configs, actions, None, active)
            steps.append((scores, targets, best_target))
            active = ~self.system.terminal(configs)
        scores = torch.cat([step[0] for step in steps])
        targets = torch.from_numpy(np.concatenate([step[1] for step in steps])).to(device)
        actions = torch.from_numpy(np.concatenate([step[2] for step in steps])).to(device)
        return TransitionScores(encoded, scores, actions, targets)

    def _beam(self, encoded: TransitionStates, batch: Batch) -> TransitionScores:
        """Decode the batch with the training beam, following the static oracle's paths."""
        options = self._config["beam_loss"]
        device = encoded.slots.device
        arc_scores = None
        if options["graph_weight"] > 0:
            assert encoded.arc_scores is not None  # _beam_options: needs the graph head
            arc_scores = options["graph_weight"] * torch.log_softmax(encoded.arc_scores.float(), -1)

        def score(rows: np.ndarray, positions: np.ndarray) -> torch.Tensor:
            rows_t, positions_t = torch.from_numpy(rows), torch.from_numpy(positions)
            scores = self.score_transitions(encoded, rows_t.to(device), positions_t.to(device))
            return scores.float()  # path sums in float32 at least (autocast gives bfloat16)

        found = beam_losses(
            self.system,
            batch.lengths.cpu().numpy(),
            self._oracle(batch),
            score,
            beam_size=options["size"],
            n_stack=self.n_stack,
            n_buffer=self.n_buffer,
            arc_scores=arc_scores,
        )
        n_actions = len(self.system.transitions)
        empty = encoded.slots.new_zeros(0, n_actions)
        no_actions = torch.zeros(0, dtype=torch.long, device=device)
        return TransitionScores(encoded, empty, no_actions, beam_losses=found.losses)

    def _oracle(self, batch: Batch) -> transitions.OracleSequences:
        heads = batch.heads.cpu().numpy()
        lengths = batch.lengths.cpu().tolist()
        trees = [np.concatenate(([-1], heads[b, 1 : n + 1])) for b, n in enumerate(lengths)]
        options = {"n_stack": self.n_stack, "n_buffer": self.n_buffer}
        try:
            return transitions.oracle_sequences(self.system, trees, **options)
        except ValueError as error:
            raise ValueError(
                f"training batch of sentences {batch.indices.tolist()}: {error} "
                f"(train through biaffine.training, which calls prepare_training)"
            ) from None

    def loss(self, scores: TransitionScores, batch: Batch) -> torch.Tensor:
        """Transition cross entropy + label cross entropy at gold arcs (+ tagger losses).

        Each term is a mean: transitions over the oracle's configurations (beam training:
        the beam losses of the sentences over their words), labels over words with a known
        gold label, tags and the graph head's head cross entropy (weighted by
        ``graph_loss_weight``, combined model only) over words.

        Args:
            scores: the output of :meth:`forward` on ``batch``.
            batch: reads ``heads``, ``rels``, ``mask`` and the gold tags of the taggers present.

        Returns:
            A scalar tensor.
        """
        if scores.beam_losses is not None:
            transition_loss = scores.beam_losses.float().sum() / batch.lengths.sum()
        elif scores.targets is None:
            transition_loss = F.cross_entropy(scores.transition_scores, scores.actions)
        else:  # -log P(some zero-cost transition), in float32 at least (autocast leaves
            # logsumexp in bfloat16)
            all_scores = scores.transition_scores.float()
            on_target = all_scores.masked_fill(~scores.targets, float("-inf"))
            transition_loss = (all_scores.logsumexp(1) - on_target.logsumexp(1)).mean()
        mask = batch.mask
        gold_arc_rels = self.labels.at(scores.encoded.labels, batch.heads)  # [B, N+1, R]
        loss = transition_loss + mean_cross_entropy(gold_arc_rels[mask], batch.rels[mask])
        arc_scores = scores.encoded.arc_scores
        if arc_scores is not None:
            head_loss = F.cross_entropy(arc_scores[mask], batch.heads[mask])
            loss = loss + self._config["graph_loss_weight"] * head_loss
        return self.taggers.add_losses(loss, scores.encoded.tag_scores, batch)


def check_partner(partner: nn.Module, vocabs: Vocabs, partner_vocabs: Vocabs) -> None:
    """Refuse a partner for :meth:`TransitionParser.pair` that would read batches wrongly.

    Args:
        partner: the model to pair.
        vocabs: the transition parser's vocabularies (the batches are encoded with them).
        partner_vocabs: the vocabularies the partner was trained with.

    Raises:
        ValueError: the partner is not a graph parser, or reads words, characters (or, when its
            encoder embeds them, UPOS tags) with other vocabularies.
    """
    family = getattr(type(partner), "family", None)
    if family != "graph":
        raise ValueError(f"partner: needs a graph parser's checkpoint, not a {family} parser's")
    read = ["words", "chars"]
    if getattr(partner.encoder, "use_tags", False):
        read.append("upos")
    for name in read:
        if _vocab(vocabs, name).itos != _vocab(partner_vocabs, name).itos:
            raise ValueError(
                f"partner: its {name} vocabulary differs from the transition parser's; pair "
                "models trained on the same training file with the same trainer.min_word_count"
            )


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A float32 numpy copy of ``tensor`` (bfloat16 under autocast, any device)."""
    return tensor.detach().float().cpu().numpy()


def _vocab(vocabs: Vocabs, name: str) -> Vocab:
    return vocabs.columns[name] if name in vocabs.columns else getattr(vocabs, name)


def _beam_options(
    options: Mapping[str, Any] | None, oracle: str, graph_loss_weight: float
) -> dict[str, Any]:
    """``beam_loss`` resolved to ``{"size": k, "graph_weight": w}`` (k = 0: the local loss)."""
    resolved = {"size": 0, "graph_weight": 0.0} | dict(options or {})
    unknown = sorted(set(resolved) - {"size", "graph_weight"})
    if unknown:
        raise ValueError(f"beam_loss: unknown keys {unknown}; known: size, graph_weight")
    size, weight = resolved["size"], resolved["graph_weight"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"beam_loss.size={size!r} must be an integer >= 0 (0: local loss)")
    if weight < 0 or (weight > 0 and size == 0):
        raise ValueError(f"beam_loss.graph_weight={weight} must be >= 0, and 0 without a beam")
    if weight > 0 and graph_loss_weight <= 0:
        raise ValueError("beam_loss.graph_weight > 0 needs the graph head (graph_loss_weight > 0)")
    if size > 0 and oracle != "static":
        raise ValueError(f"beam_loss.size={size} follows the static oracle, not oracle={oracle}")
    return {"size": size, "graph_weight": float(weight)}


def _validate(config: Mapping[str, Any], encoder: nn.Module) -> None:
    check_sizes(config, ("arc_mlp", "rel_mlp", "tag_mlp", "graph_mlp"))
    if config["oracle"] not in ("static", "dynamic"):
        raise ValueError(f"oracle={config['oracle']!r} is not one of static, dynamic")
    if not 0.0 <= config["exploration"] <= 1.0:
        raise ValueError(f"exploration={config['exploration']} must be in [0, 1]")
    if config["graph_loss_weight"] < 0:
        raise ValueError(f"graph_loss_weight={config['graph_loss_weight']} must be >= 0")
    n_stack, n_buffer = config["n_stack"], config["n_buffer"]
    if min(n_stack, n_buffer) < 0 or n_stack + n_buffer < 1:
        raise ValueError(
            f"n_stack={n_stack} and n_buffer={n_buffer} must be >= 0, one at least > 0"
        )
    check_tagger_weights(config, encoder)
