"""The full lowering table: importing the rule modules registers their rules in RULES."""
from axle.torch import (rules_conv, rules_elementwise, rules_fft, rules_linalg, rules_nn, rules_reduce,  # noqa: F401
                        rules_sample, rules_shape)
from axle.torch import rules_quant  # noqa: F401,E402  (after the float rules it wraps)
from axle.torch import rules_foreach  # noqa: F401,E402  (over the per-tensor rules)
from axle.torch import rules_lapack  # noqa: F401,E402
from axle.torch import rules_special, rules_select  # noqa: F401,E402
from axle.torch.registry import RULES, Unsupported

__all__ = ["RULES", "Unsupported"]
