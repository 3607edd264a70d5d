//! Seeded simulations through the real code: the regression gate (docs/statistics.md, "How
//! the statistics are checked"), the comparison of arms (docs/variants.md, "Size and
//! power") and the audit of carried tasks (docs/changed.md, "The audit"). Test code, at
//! the top of the layer table: it drives the plan, the run and the gate.

mod regression_gate;
mod stale_carry;
mod variant_arms;
