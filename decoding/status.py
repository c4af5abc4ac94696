"""Status codes of a decoded sentence, shared by the kernels, the batch drivers and the API.

The kernels return OK, NO_TREE or NO_SINGLE_ROOT; the input checks of the batch drivers report
NAN, POSINF, HUGE, NO_HEAD and NO_ROOT_ARC; :mod:`decoding.api` turns each into its message.
"""

OK, NO_TREE, NO_SINGLE_ROOT, NAN, POSINF, NO_HEAD, NO_ROOT_ARC, HUGE = range(8)

MAX_SCORE = 1e300
"""The largest magnitude of a finite score (HUGE beyond it). The decoders add up a tree's scores
and subtract such sums: scores near float64's limit (a -1.79e308 mask for -inf) overflowed to
infinities there, so that MST found "no tree" and Eisner a worse one, without a word."""
