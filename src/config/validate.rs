//! Validation of a parsed configuration: every problem, each with its location.
//!
//! Owns the meaning checks of the file, one function per level: [`validate`] runs `server.rs`
//! (`[server]`), `cluster.rs` (`[cluster]`) and, for every tenant, `tenant.rs` (ids, BOS
//! contexts, assignments, tool name clashes), which runs `client.rs` (client applications, API
//! keys, `[tenant.auth]`) and `tool.rs` (toolsets, tools, federated sources), which runs
//! `field.rs` (field rules: paths, types, enums). Problems read
//! `tenant 'acme' / toolset 'crm' / tool 'get_customer' / field 'client.id': …`, in file order.
//!
//! What only a compiler can tell — whether a tool's exposed paths form one schema, whether the
//! tool compiles into an invocation plan — is asked of a [`ToolCompiler`] at the point the
//! tool is checked, so its problems stay in file order too; the catalog passes its own
//! (`catalog/compile.rs`) and keeps the compiled plans. Must not build snapshots, read the
//! environment (the configuration arrives with its overrides applied) or do IO.

mod a2a_agent;
mod client;
mod cluster;
mod field;
mod server;
mod tenant;
mod tool;

use std::fmt;

use super::{Config, FieldPath, FieldRule, LoadError, Tool};

pub(crate) use client::{is_valid_key_id, API_KEY_ID_LEN};

/// Where a problem is: a chain of `kind 'name'` steps from the file down.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    steps: Vec<(&'static str, String)>,
}

impl Loc {
    /// The empty location (the whole file).
    pub(crate) fn root() -> Self {
        Self::default()
    }

    /// This location extended by one step, e.g. `.with("tenant", "acme")`.
    pub fn with(&self, kind: &'static str, name: impl Into<String>) -> Self {
        let mut steps = self.steps.clone();
        steps.push((kind, name.into()));
        Self { steps }
    }

    /// The steps, outermost first.
    pub(crate) fn steps(&self) -> &[(&'static str, String)] {
        &self.steps
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (kind, name)) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(" / ")?;
            }
            write!(f, "{kind} '{name}'")?;
        }
        Ok(())
    }
}

/// One problem of a configuration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// Where.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.steps.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.loc, self.message)
        }
    }
}

/// Every problem found in a configuration (never empty when returned as an error).
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct Report {
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

impl Report {
    fn push(&mut self, loc: &Loc, message: impl Into<String>) {
        self.problems.push(Problem {
            loc: loc.clone(),
            message: message.into(),
        });
    }

    /// Pushes a plan problem unless the catalog's own checks already reported the same message, or
    /// any problem for the same field, at index `since` or later: the plan compiler re-checks paths
    /// the catalog checks too, and one problem should be reported once, in the catalog's words.
    fn push_once(&mut self, since: usize, loc: &Loc, message: String) {
        let field = loc
            .steps()
            .last()
            .filter(|(kind, _)| kind.ends_with("field"));
        let seen = self.problems.get(since..).is_some_and(|recent| {
            recent.iter().any(|p| {
                (p.loc == *loc && p.message == message)
                    || field.is_some_and(|(_, name)| {
                        p.loc
                            .steps()
                            .last()
                            .is_some_and(|(kind, other)| kind.ends_with("field") && other == name)
                    })
            })
        });
        if !seen {
            self.push(loc, message);
        }
    }
}

impl fmt::Display for Report {
    /// One problem per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl From<LoadError> for Report {
    fn from(err: LoadError) -> Self {
        Report {
            problems: vec![Problem {
                loc: Loc::root(),
                message: err.to_string(),
            }],
        }
    }
}

/// What the catalog's compilers add to validation, asked for every tool in file order.
pub trait ToolCompiler {
    /// What a tool compiles into.
    type Plan;

    /// The structural conflicts among `rules` (one tool's input or output rules), given with
    /// their parsed exposed paths (`None`: the path did not parse, which is already reported).
    /// Each conflict is the index of the rule it is reported on and the message.
    fn conflicts(&self, rules: &[FieldRule], exposed: &[Option<FieldPath>])
        -> Vec<(usize, String)>;

    /// Compiles `tool`, or says every problem found (not just the first).
    fn compile(&self, tool: &Tool) -> Result<Self::Plan, Vec<CompileProblem>>;
}

/// A problem a [`ToolCompiler`] found in a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileProblem {
    /// The field rule concerned (its exposed path), if any.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// A configuration that passed validation, with every tool's compiled plan.
#[derive(Debug)]
pub struct Validated<P> {
    /// `plans[tenant][toolset][tool]`, in file order.
    pub plans: Vec<Vec<Vec<P>>>,
}

/// One tenant's compiled plans as `[toolset][tool]`, `None` where a tool did not compile.
type TenantPlans<P> = Vec<Vec<Option<P>>>;

/// Checks a configuration and compiles every tool with `compiler`; on failure, reports every
/// problem.
pub fn validate<C: ToolCompiler>(
    config: &Config,
    compiler: &C,
) -> Result<Validated<C::Plan>, Report> {
    let mut report = Report::default();
    server::check(&mut report, &config.server);
    server::check_telemetry(&mut report, &config.telemetry);
    cluster::check(&mut report, &config.cluster);
    // After `[cluster]`: the order `sluice check` has always listed these problems in.
    server::check_limits(&mut report, &config.server);
    let plans = tenant::check_all(&mut report, config, compiler);

    if report.problems.is_empty() {
        // Every plan compiled: a failed compile always leaves a problem in the report.
        let plans = plans
            .into_iter()
            .map(|toolsets| {
                toolsets
                    .into_iter()
                    .map(|tools| tools.into_iter().flatten().collect())
                    .collect()
            })
            .collect();
        Ok(Validated { plans })
    } else {
        Err(report)
    }
}

/// Whether `text` is an absolute `http` or `https` URL with a host.
fn is_http_url(text: &str) -> bool {
    text.parse::<http::Uri>()
        .is_ok_and(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some())
}

#[cfg(test)]
mod tests;
