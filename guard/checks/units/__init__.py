"""Units and scale (`unit_mismatch`, `scale_shift`, `drift`): one check, a file per mechanism.

`check`: the rule and where each column is judged; `hypotheses`: every unit of the group tried against natural
variation, and the decimal grid; `rescales`: the same rows read again, and a column rescaled with no unit;
`fits`: the affine map of a bare profile's quantiles.
"""

from guard.checks.units.check import check_units, judge_units

__all__ = ["check_units", "judge_units"]
