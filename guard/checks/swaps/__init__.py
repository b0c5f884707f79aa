"""Two contracted columns written into each other's place (`columns_swapped`): one check, a file per mechanism.

`check`: the rule, and what every line of evidence reads once; `order`: an order the pair held, broken on some rows;
`correlations`: correlations exchanged, and a swap told from a rescaling; `values`: the values read as each other's
(exactly, on all rows, by ranges, by declared bounds); `finding`: what a line says once it names a pair.
"""

from guard.checks.swaps.check import check_columns_swapped

__all__ = ["check_columns_swapped"]
