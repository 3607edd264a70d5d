//! What a kind (grader, step) uses from the world: the templates it renders (and through
//! them the `{env.X}` and `{vars.X}` it reads), the MCP tools it calls, the judge it needs
//! and the secret values it carries. Preflight, masking and `check` fold over it instead of
//! searching the suite's text.

use crate::llm::spec::LlmSpec;
use crate::template::{Template, Var};

#[derive(Debug, Default, Clone)]
pub struct Uses<'a> {
    /// Every template the kind renders.
    pub templates: Vec<&'a Template>,
    /// MCP tools called, as `(server, tool)`.
    pub mcp_tools: Vec<(&'a str, &'a str)>,
    pub judges: Vec<Judge<'a>>,
    /// Templates whose rendered values are secrets (never to be shown).
    pub secrets: Vec<&'a Template>,
}

/// The judge a grader asks.
#[derive(Debug, Clone, Copy)]
pub enum Judge<'a> {
    /// The suite's `judge`.
    SuiteDefault,
    /// A judge set on the grader itself.
    Own(&'a LlmSpec),
}

impl<'a> Uses<'a> {
    pub fn templates(templates: impl IntoIterator<Item = &'a Template>) -> Self {
        Uses { templates: templates.into_iter().collect(), ..Uses::default() }
    }

    /// Adds what `other` uses to this.
    pub fn and(mut self, other: Uses<'a>) -> Self {
        self.templates.extend(other.templates);
        self.mcp_tools.extend(other.mcp_tools);
        self.judges.extend(other.judges);
        self.secrets.extend(other.secrets);
        self
    }

    /// The environment variables read as `{env.X}`.
    pub fn env_vars(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.vars_where(|v| match v {
            Var::Env(name) => Some(name),
            _ => None,
        })
    }

    /// The suite variables read as `{vars.X}`.
    pub fn vars(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.vars_where(|v| match v {
            Var::Vars(name) => Some(name),
            _ => None,
        })
    }

    fn vars_where(&self, pick: fn(&'a Var) -> Option<&'a String>) -> impl Iterator<Item = &'a str> + '_ {
        self.templates.iter().flat_map(|t| t.vars()).filter_map(pick).map(String::as_str)
    }

    /// The judges set on the kinds themselves (not the suite's default).
    pub fn own_judges(&self) -> impl Iterator<Item = &'a LlmSpec> + '_ {
        self.judges.iter().filter_map(|j| match j {
            Judge::Own(spec) => Some(*spec),
            Judge::SuiteDefault => None,
        })
    }
}

impl<'a> FromIterator<Uses<'a>> for Uses<'a> {
    fn from_iter<I: IntoIterator<Item = Uses<'a>>>(iter: I) -> Self {
        iter.into_iter().fold(Uses::default(), Uses::and)
    }
}
