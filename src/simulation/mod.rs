//! Seeded simulations through the real code: the regression gate (docs/statistics.md, "How
//! the statistics are checked") and the comparison of arms (docs/variants.md, "Size and
//! power"). Test code, at the top of the layer table: it drives the plan, the run and the gate.

mod regression_gate;
mod variant_arms;
