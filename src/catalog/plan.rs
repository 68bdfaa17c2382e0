//! Compiled invocation plans: a tool's field rules and URL template, parsed and checked once per
//! snapshot so that a call only executes them.
//!
//! STUB API: the invoke work fills this in. Pure data and checks; no IO.

use super::model::Tool;

/// A tool's compiled request/response plan.
#[derive(Debug, Clone, Default)]
pub struct ToolPlan {}

/// A problem found while compiling a tool's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    /// The field rule concerned (its exposed path), if any.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ToolPlan {
    /// Compiles a tool, reporting every problem found (not just the first).
    pub fn compile(_tool: &Tool) -> Result<ToolPlan, Vec<PlanProblem>> {
        Ok(ToolPlan {})
    }
}
