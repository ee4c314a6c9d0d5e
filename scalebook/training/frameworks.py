"""Training frameworks: which family of production code ran a step, and the share of the modelled rate it reaches.

The calibrated step (`prediction.predict`) prices what a source measured: matmuls at the chip's achievable rate,
their shapes, elementwise bytes, collectives, the bubble, each layer's fixed cost. What a framework leaves on the
table beyond those (the host, the scheduler, kernels we do not price) is one share per family, read off that
family's own published runs (`data/frameworks.toml`, `validation.derived_framework_share`): Megatron-Core and NeMo
(the chip's own share, `Efficiency.framework`), torchtitan, Composer / llm-foundry, MaxText, DeepSpeed, and the
`generic` default, read off every source and scored by leave-one-source-out (`validation.leave_one_source_out`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..data import load
from ..hardware.chips import Efficiency
from ..units import check_fields, checks, closest, is_a

__all__ = ["Framework", "get_framework", "framework_names", "check_framework", "DEFAULT_FRAMEWORK", "NO_FRAMEWORK"]

DEFAULT_FRAMEWORK = "generic"


@dataclass(frozen=True)
class Framework:
    """A family of training code and the share of the modelled step rate it reaches (`data/frameworks.toml`).

    `share` and `share_fp8` (default: `share`) are fractions in (0, 1]; `share=None` means the chip's own
    calibrated share (`Efficiency.framework_share`, read off the chip's reference stack). `source` says where the
    share was read; `aliases` are other names the family goes by."""

    key: str
    name: str = ""
    share: float | None = None
    share_fp8: float | None = None
    source: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self, key="text", share="?fraction", share_fp8="?fraction")

    @checks(eff=is_a(Efficiency), dtype="dtype")
    def share_on(self, eff: Efficiency, dtype: str = "bf16") -> float:
        """The share (a fraction in (0, 1]) of the modelled step rate this family reaches in `dtype` on a chip
        whose calibrated factors are `eff`."""
        if self.share is None:
            return eff.framework_share(dtype)
        fp8 = str(dtype).lower() in ("fp8", "f8")
        return self.share_fp8 if fp8 and self.share_fp8 is not None else self.share


# The modelled rate itself (a share of 1): what a family's share is read against.
NO_FRAMEWORK = Framework("none", "no framework: the modelled rate itself", 1.0, 1.0, "by definition")


@cache
def _families() -> dict[str, Framework]:
    """Every family of `data/frameworks.toml`, by key: 'chip' becomes None, 'generic' the generic share."""
    table = load("data/frameworks.toml")["families"]
    generic = table["generic"]
    out = {}
    for key, spec in table.items():
        share, fp8 = spec["share"], spec.get("share_fp8")
        if share == "generic":
            share, fp8 = generic["share"], generic.get("share_fp8")
        out[key] = Framework(key, spec["name"], None if share == "chip" else share, fp8, spec["source"],
                             tuple(spec.get("aliases", ())))
    return out


def framework_names() -> tuple[str, ...]:
    """The families' keys, in the data file's order ('generic', the default, last)."""
    return tuple(_families())


def get_framework(framework: str | Framework) -> Framework:
    """Return the `Framework` called `framework` (a family's key or alias, any case; '_' for '-'), or `framework`
    itself. Unknown names raise `ValueError` naming the closest families."""
    if isinstance(framework, Framework):
        return framework
    wanted = framework.strip().lower().replace("_", "-") if isinstance(framework, str) else framework
    for family in _families().values():
        if wanted == family.key or wanted in family.aliases:
            return family
    names = [*framework_names(), *(a for f in _families().values() for a in f.aliases)]
    near = closest(wanted, names)
    hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
    raise ValueError(f"framework={framework!r} is not a framework family; allowed: {list(framework_names())} (or a "
                     f"Framework){hint}")


def check_framework(name: str, value: object) -> object:
    """`checks` kind of a `framework` argument: a family's name or alias, or a `Framework` (returned unchanged)."""
    try:
        get_framework(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(str(exc).replace("framework=", f"{name}=", 1)) from None
    return value
