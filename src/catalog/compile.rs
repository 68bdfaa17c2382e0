//! What the catalog adds to validation: the checks only its compilers can make.
//!
//! [`validate`] runs `config::validate` with [`PlanCompiler`], which reports the structural
//! conflicts among a tool's exposed paths (the path tree of `schema.rs`) and compiles its
//! invocation plan (`plan.rs`), so a configuration the catalog accepts is one whose every tool
//! is already compiled, and the snapshot never compiles twice. Must not check what the file
//! says on its own: that is `crate::config`'s.

use std::sync::Arc;

use super::plan::ToolPlan;
use super::schema::Tree;
use crate::config::{
    CompileProblem, Config, FieldPath, FieldRule, Report, Tool, ToolCompiler, Validated,
};

/// Validates `config` and compiles every tool's plan; on failure, reports every problem.
pub(crate) fn validate(config: &Config) -> Result<Validated<Arc<ToolPlan>>, Report> {
    crate::config::validate(config, &PlanCompiler)
}

/// The catalog's [`ToolCompiler`]: schema-tree conflicts and [`ToolPlan::compile`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlanCompiler;

impl ToolCompiler for PlanCompiler {
    type Plan = Arc<ToolPlan>;

    fn conflicts(
        &self,
        rules: &[FieldRule],
        exposed: &[Option<FieldPath>],
    ) -> Vec<(usize, String)> {
        let (_, conflicts) = Tree::build(rules, exposed);
        conflicts
            .iter()
            .map(|conflict| (conflict.rule(), conflict.message(rules)))
            .collect()
    }

    fn compile(&self, tool: &Tool) -> Result<Arc<ToolPlan>, Vec<CompileProblem>> {
        ToolPlan::compile(tool).map(Arc::new).map_err(|problems| {
            problems
                .into_iter()
                .map(|problem| CompileProblem {
                    field: problem.field,
                    message: problem.message,
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[[tenant]]
id = "acme"
auth = { anonymous = true }
[[tenant.client]]
id = "bot"
[[tenant.toolset]]
id = "crm"
"#;

    /// Validates BASE + `extra` as the catalog does and compares the report lines.
    fn check(extra: &str, expected: &[&str]) {
        let config = crate::config::parse(&format!("{BASE}{extra}"), "t").unwrap();
        let got = match validate(&config) {
            Ok(_) => Vec::new(),
            Err(report) => report.problems.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(got, expected);
    }

    const TOOL: &str = "[[tenant.toolset.tool]]\nname = \"t\"\ndownstream = { kind = \"rest\", method = \"GET\", url = \"http://h/x\" }\n";

    #[test]
    fn a_valid_tool_compiles_once() {
        let config = crate::config::parse(&format!("{BASE}{TOOL}"), "t").unwrap();
        let validated = validate(&config).unwrap();
        assert_eq!(validated.plans.len(), 1);
        assert_eq!(validated.plans[0][0].len(), 1);
    }

    #[test]
    fn plan_problems_are_located_and_reported_once() {
        let at = "tenant 'acme' / toolset 'crm' / tool 'people'";
        check(
            "[[tenant.toolset.tool]]\nname = \"people\"\n\
             [tenant.toolset.tool.downstream]\nkind = \"federated\"\nrecord_type = \"person\"\n\
             [[tenant.toolset.tool.downstream.source]]\nsource_type = \"crm\"\n\
             source_identity = \"eu\"\nurl = \"http://p/eu\"\n\
             [[tenant.toolset.tool.input]]\nsource = \"id\"\nexposed = \"id\"\nlocation = \"path\"\n",
            &[&format!("{at} / field 'id': a federated tool has no URL template; use location = \"query\" or \"header\"")],
        );
        // The file check names the bad path; the plan compiler's own words for it are dropped.
        check(
            &format!("{TOOL}[[tenant.toolset.tool.output]]\nsource = \"a\"\nexposed = \"a..b\"\n"),
            &["tenant 'acme' / toolset 'crm' / tool 't' / output field 'a..b': exposed path 'a..b' is not a valid field path: empty segment at byte 2"],
        );
    }

    #[test]
    fn schema_conflicts_are_reported_on_the_later_rule() {
        check(
            &format!(
                "{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\n\
                 [[tenant.toolset.tool.input]]\nsource = \"b\"\nexposed = \"a\"\n"
            ),
            &[
                "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': exposed path is used by another rule too",
            ],
        );
    }
}
