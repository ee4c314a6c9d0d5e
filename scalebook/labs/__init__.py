"""The chapters' live programs, one module per chapter: what a reader runs on real (or emulated) devices.

- `ch05_mlp`: one training step of a sharded MLP under DP, FSDP, TP and FSDP+TP, and what XLA emitted.
- `ch07_decoder`: a tiny decoder-only Transformer with a KV cache, its decode step timed.
- `ch10_programs`: one matmul in JAX's three sharding modes, collective matmuls, the multi-host layout;
  `ch10_moe`: a toy mixture of experts three ways.

Each module imports JAX only when one of its functions is called. The chapters reach them by the names they
have always used: `sb.xla.mlp_train_step`, `scalebook.decoder`, `scalebook.sharded_ops`.
"""
