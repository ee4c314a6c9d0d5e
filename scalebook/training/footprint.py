"""Training memory: what a chip holds during a step, by the book's count and by the mixed-precision one.

Two models of the same bytes. The book's (ch. 4-5; `memory`, `Memory`, `activation_bytes`, `max_params`): bf16
weights and fp32 Adam moments, 10 bytes per parameter, activations as a count of [tokens, D] arrays per layer
(`REMAT_SAVES`), sharded by ZeRO stage. The mixed-precision one (`training_memory`,
`activation_bytes_per_layer`), after Korthikanti et al. 2022: bf16 weights, fp32 gradients, master weights and
moments (18 bytes per parameter), activations counted tensor by tensor, per pipeline stage and microbatch in
flight, with FSDP's weights re-sharded after use. One recompute vocabulary serves both: `RECOMPUTE` names the
policy ('none', 'selective', 'full') and `REMAT_OF` maps it to the book's save counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hardware.chips import Chip, get_chip
from ..models import TransformerConfig, get_model
from ..units import check_choice, check_int, check_non_negative, checks, dtype_bytes, fmt_bytes, is_a
from .layout import Layout, degree_or_flag

__all__ = ["OPTIMIZERS", "REMAT_SAVES", "RECOMPUTE", "REMAT_OF", "Memory", "MEMORY_PARTS", "parts_per_chip",
           "activation_bytes", "memory", "max_params", "activation_bytes_per_layer", "training_memory"]

# Optimizer state per parameter, in values of the optimizer dtype: Adam keeps two moments, Adafactor a
# factored second moment (about none per parameter for large matrices), SGD with momentum one.
OPTIMIZERS = {"adam": 2, "adamw": 2, "adafactor": 0, "sgd": 1, "none": 0}

# Activations saved per layer for the backward pass, in units of a [tokens, D] array (ch. 4): everything
# (~20), only the outputs of the seven big matmuls (~7), or only each block's input (1, "block remat").
REMAT_SAVES = {"none": 20, "big_matmuls": 7, "block": 1}


# The recompute policies of a published run, and the book's save count (`REMAT_SAVES`) each matches.
RECOMPUTE = ("none", "selective", "full")
REMAT_OF = {"none": "none", "selective": "big_matmuls", "full": "block"}



@dataclass(frozen=True)
class Memory:
    """Bytes of training state: whole-model totals, and per chip under ZeRO stage `zero`.

    ZeRO (the data-parallel degree being all `n_chips`): stage 0 replicates everything (plain DP), stage 1
    shards the optimizer state, stage 2 also the gradients, stage 3 (FSDP) also the parameters. Saved
    activations are always split with the batch.
    """

    params: float
    grads: float
    optimizer: float
    activations: float
    n_chips: int
    zero: int = 3

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.activations

    @property
    def per_chip(self) -> float:
        """Bytes each chip holds under the ZeRO stage."""
        n = self.n_chips
        return (self.params / (n if self.zero >= 3 else 1) + self.grads / (n if self.zero >= 2 else 1)
                + self.optimizer / (n if self.zero >= 1 else 1) + self.activations / n)

    def as_dict(self) -> dict[str, float]:
        return {"params": self.params, "grads": self.grads, "optimizer": self.optimizer,
                "activations": self.activations, "total": self.total, "per chip": self.per_chip}

    def __getitem__(self, key: str) -> float:
        return self.as_dict()[key]

    def __str__(self) -> str:
        return ", ".join(f"{k} {fmt_bytes(v)}" for k, v in self.as_dict().items())


@checks(tokens="size", dtype="dtype")
def activation_bytes(model: TransformerConfig | str, tokens: float, saves_per_layer: float | str = 4,
                     dtype: str = "bf16") -> float:
    """Return the bytes of activations saved for the backward pass: saves x tokens x D x L x size.

    `saves_per_layer` is a count of [tokens, D]-sized arrays per layer, or a remat policy name from
    REMAT_SAVES ('none' ~ 20, 'big_matmuls' ~ 7, 'block' = 1).
    """
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    saves = (REMAT_SAVES[check_choice("saves_per_layer", saves_per_layer, REMAT_SAVES)]
             if isinstance(saves_per_layer, str) else check_non_negative("saves_per_layer", saves_per_layer, 1e3))
    return saves * tokens * model.D * model.L * dtype_bytes(dtype)


@checks(batch_tokens="size", n_chips="count", optimizer=OPTIMIZERS, param_dtype="dtype", opt_dtype="dtype",
        grad_dtype="?dtype", zero=lambda n, v: check_int(n, v, 0, 3), layout=is_a(Layout, type(None)))
def memory(model: TransformerConfig | str, batch_tokens: float, n_chips: int = 1, saves_per_layer: float | str = 4,
           optimizer: str = "adam", param_dtype: str = "bf16", opt_dtype: str = "fp32",
           grad_dtype: str | None = None, zero: int = 3, *, layout: Layout | None = None) -> Memory:
    """Return the training memory: parameters, gradients, optimizer state and saved activations (bytes).

    Gradients are not counted separately by default (`grad_dtype=None`): the book folds them into the
    optimizer update. Adam with bf16 parameters and fp32 moments is 2 + 8 = 10 bytes per parameter.
    `zero` (0-3) says which of them are sharded over the chips (see `Memory`). A data-parallel `layout` says
    both: its chips, ZeRO-3 when it shards (`Layout(fsdp=n)`), else ZeRO-1 (`Layout(dp=n)`); the book's count
    has no tensor, pipeline or context split (`training_memory` has).
    """
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    if layout is not None:
        if layout.chips != layout.data_parallel:
            raise ValueError(f"layout={layout}: the book's count shards by ZeRO stage over data-parallel chips only; "
                             "use training_memory for tensor, pipeline or context parallelism")
        n_chips, zero = layout.chips, 3 if layout.sharded else 1
    P = model.param_count()
    return Memory(
        params=P * dtype_bytes(param_dtype),
        grads=P * dtype_bytes(grad_dtype) if grad_dtype else 0.0,
        optimizer=P * OPTIMIZERS[optimizer] * dtype_bytes(opt_dtype),
        activations=activation_bytes(model, batch_tokens, saves_per_layer),
        n_chips=n_chips,
        zero=zero,
    )


@checks(optimizer=OPTIMIZERS, param_dtype="dtype", opt_dtype="dtype")
def max_params(chip: Chip | str, optimizer: str = "adam", param_dtype: str = "bf16", opt_dtype: str = "fp32") -> float:
    """Return the most parameters whose weights and optimizer state fit one chip's HBM (pure data parallelism)."""
    chip = get_chip(chip)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer={optimizer!r}; allowed: {list(OPTIMIZERS)}")
    per_param = dtype_bytes(param_dtype) + OPTIMIZERS[optimizer] * dtype_bytes(opt_dtype)
    return chip.hbm_bytes / per_param


@checks(model=is_a(TransformerConfig), tokens="size", seq_len="count", tp="count", recompute=RECOMPUTE,
        sequence_parallel="flag", flash_attention="flag")
def activation_bytes_per_layer(model: TransformerConfig, tokens: float, seq_len: int, tp: int = 1,
                               recompute: str = "selective", sequence_parallel: bool = True,
                               flash_attention: bool = True) -> float:
    """Return the bytes one layer saves for the backward pass of a microbatch of `tokens` tokens in
    sequences of `seq_len` (both per chip's share of context parallelism), after Korthikanti et al. 2022:

        s·b·h · (10 + 24/t + 5·a·s/(h·t))   without sequence parallelism,
        s·b·h · (34/t + 5·a·s/(h·t))        with it (the norms and dropouts split over the t TP chips too),

    (s·b = tokens, h = D, a = N heads). The 10 are the norms' inputs, the attention and MLP inputs and the
    1-byte dropout masks; the 24 split over TP are Q, K, V and the attention output (8) and GELU's input and
    output (16). With K < N key/value heads, K and V shrink to K/N (4 + 4·K/N); a gated MLP keeps its gate,
    up and product, 6·F/h (GELU's 4·F/h = 16 at F = 4h). The 5·a·s/h term is the attention scores, softmax
    and its dropout: never stored with a flash kernel (`flash_attention`) and recomputed under selective
    recompute. Full recompute keeps only each layer's input, 2·s·b·h (/t with sequence parallelism).
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute={recompute!r}; allowed: {list(RECOMPUTE)}")
    sbh = tokens * model.D
    sp = tp if sequence_parallel else 1
    if recompute == "full":
        return 2 * sbh / sp
    split = 10 / sp + (4 + 4 * model.K / model.N + (6 if model.gated else 4) * model.F / model.D) / tp
    scores = 0 if flash_attention or recompute == "selective" else 5 * model.N * seq_len / (model.D * tp)
    return sbh * (split + scores)


@checks(seq_len="count", layout=is_a(Layout, type(None)), tp="?count", pp="?count", cp="?count", dp="?count",
        ep="?count", fsdp=degree_or_flag, microbatch_tokens="?size", microbatches="?count",
        virtual_stages="?count", recompute=RECOMPUTE, sequence_parallel="?flag", flash_attention="flag",
        param_bytes="size", grad_bytes="size", master_bytes="size", optimizer=OPTIMIZERS,
        reshard_after_forward="flag")
def training_memory(model: TransformerConfig | str, seq_len: int, layout: Layout | None = None, *,
                    tp: int | None = None, pp: int | None = None, cp: int | None = None, dp: int | None = None,
                    fsdp: int | None = None, ep: int | None = None, microbatch_tokens: float | None = None,
                    microbatches: int | None = None, virtual_stages: int | None = None,
                    recompute: str = "selective", sequence_parallel: bool | None = None,
                    flash_attention: bool = True, param_bytes: float = 2, grad_bytes: float = 4,
                    master_bytes: float = 4, optimizer: str = "adam",
                    reshard_after_forward: bool = True) -> dict[str, float]:
    """Return the bytes each chip of the most loaded (first) pipeline stage holds, by part, under `layout`
    (a `Layout`; or its degrees as keywords, which build one: `tp`, `pp`, `cp`, `ep`, `dp`, `fsdp`,
    `virtual_stages`, `microbatches`, each 1 unless given).

    Mixed precision keeps bf16 weights (`param_bytes`), fp32 gradients (`grad_bytes`), fp32 master weights
    (`master_bytes`) and Adam's two fp32 moments: 2 + 4 + 4 + 8 = 18 bytes per parameter (16 with bf16
    gradients), not the book's 10. The master weights and moments are sharded over the data-parallel chips of a
    group (and context-parallel ones, which share the weights): ZeRO-1 over `dp`, or over `fsdp` when the layout
    shards. FSDP (fsdp > 1) also shards the gradients (each microbatch's are reduce-scattered as they appear)
    and the weights: a layer's are gathered just before use and freed after it (`reshard_after_forward`, as
    ZeRO-3, PyTorch's FULL_SHARD and MaxText do), so a chip holds its shard plus two gathered layers (the one
    running and the one prefetched) and one layer's full gradient before it is reduce-scattered.
    `reshard_after_forward=False` keeps the stage's weights gathered through the step, as Llama 3's FSDP runs.
    An MoE's routed experts are split `ep` x `Layout.expert_tp` ways and their state sharded only over the chips
    that hold the same experts (`Layout.expert_dp`). Activations: `activation_bytes_per_layer` for the
    L/pp layers of a stage, times the microbatches in flight — under 1F1B the first stage holds min(pp,
    microbatches) of them, and interleaving with v virtual stages adds (pp-1)/(pp·v) of that (Korthikanti et
    al. 2022). The logits ([tokens, V/t] fp32) live on the last stage; with one stage they add to the first.
    """
    degrees = {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "fsdp": fsdp, "ep": ep, "virtual_stages": virtual_stages,
               "microbatches": microbatches}
    given = {name: value for name, value in degrees.items() if value is not None}
    if layout is not None and given:
        raise ValueError(f"layout={layout} and {sorted(given)}: give the degrees once, in the layout or as keywords")
    if isinstance(given.get("fsdp"), bool):  # the old flag: FSDP shards over the `dp` chips given
        sharded, shards = given.pop("fsdp"), given.pop("dp", 1)
        given.update({"fsdp": shards} if sharded else {"dp": shards})
    lay = layout if layout is not None else Layout(**given)
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    tp, pp, cp, ep, v, fsdp = lay.tp, lay.pp, lay.cp, lay.ep, lay.virtual_stages, lay.sharded
    tokens = (microbatch_tokens or seq_len) / cp
    sp = tp > 1 if sequence_parallel is None else sequence_parallel
    experts = model.components().get("MoE routed experts", (0, 0))[0]
    dense, mine = (model.param_count() - experts) / (tp * pp), experts / (ep * lay.expert_tp * pp)
    local = dense + mine
    shards = (lay.fsdp if fsdp else lay.dp) * cp
    spread = dense / shards + mine / max(1, lay.expert_dp // (lay.dp if fsdp else 1))  # each over its own group
    per_layer = activation_bytes_per_layer(model, tokens, seq_len // cp, tp, recompute, sp, flash_attention)
    in_flight = min(pp, lay.microbatches or 1) * (1 + (pp - 1) / (pp * v) if v > 1 else 1)
    logits = tokens * model.V / tp * 4 if pp == 1 else 0.0
    weights, gradients = local * param_bytes, (spread if fsdp else local) * grad_bytes
    if fsdp and reshard_after_forward:
        layer = local / (model.L / pp)
        weights = spread * param_bytes + 2 * layer * param_bytes
        gradients += layer * grad_bytes
    return {
        "weights": weights,
        "gradients": gradients,
        "optimizer": spread * (master_bytes + OPTIMIZERS[optimizer] * 4),
        "activations": per_layer * model.L / pp * in_flight,
        "logits": logits,
    }


MEMORY_PARTS = ("params", "grads", "optimizer", "activations")


@checks(replicated="flag", memory=is_a(Memory))
def parts_per_chip(memory: Memory, replicated: bool = False) -> dict[str, float]:
    """Return each part of `memory` per chip (bytes): everything split evenly over its chips (FSDP), or with
    `replicated` the parameters, gradients and optimizer state whole on every chip (pure data parallelism)."""
    return {part: memory[part] / (1 if replicated and part != "activations" else memory.n_chips)
            for part in MEMORY_PARTS}
