"""Status codes of a decoded sentence, shared by the kernels, the batch drivers and the API.

The kernels return OK, NO_TREE or NO_SINGLE_ROOT; the input checks of the batch drivers report
NAN, POSINF, NO_HEAD and NO_ROOT_ARC; :mod:`decoding.api` turns each into its message.
"""

OK, NO_TREE, NO_SINGLE_ROOT, NAN, POSINF, NO_HEAD, NO_ROOT_ARC = range(7)
