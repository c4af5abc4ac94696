"""The sentences written for one parse: scores in comments and MISC, four decimals."""

from __future__ import annotations

from biaffine.data.conllu import Sentence
from biaffine.inference.request import Request, SentenceResult, Tree
from biaffine.results import with_result


def test_a_score_that_rounds_to_zero_is_written_without_a_minus_sign() -> None:
    """A log-probability of -0.00001 was written "-0.0000", beside "0.0000" for others."""
    sentence = Sentence(["Hi", "!"])
    tree = Tree([0, 1], ["root", "punct"], [1.0, 0.99999], [1.0, 1.0], -1e-5)
    [probable] = with_result(sentence, SentenceResult([tree]), Request(probabilities=True))
    assert probable.comments[-1] == "# tree_log_prob = 0.0000"
    misc = [probable.lines[i].rstrip("\n").split("\t")[9] for i in probable.word_lines]
    assert misc == ["HeadProb=1.0000|DeprelProb=1.0000"] * 2
    trees = [tree, Tree([0, 1], ["root", "dep"], log_prob=-2.5)]
    ranked = with_result(sentence, SentenceResult(trees), Request(kbest=2))
    assert [s.comments[-1] for s in ranked] == ["# kbest_score = 0.0000", "# kbest_score = -2.5000"]
