//! Parsing templates while compiling a suite: the names in reach come from the compile
//! context, and an invalid template becomes a diagnostic pointing at the bad character.

use std::collections::BTreeMap;

use super::{Names, Scope, ShellScript, Template, TemplateError, check_argv};
use crate::source::{KeyPath, ValidateCx};

impl ValidateCx<'_> {
    /// Parses a template found at `path`, recording an error when it is invalid.
    pub fn template(&mut self, text: &str, scope: Scope, path: &KeyPath) -> Option<Template> {
        Some(self.unbound(text, scope, path)?.bind_vars(&self.vars))
    }

    /// A template with its `{vars.X}` still variables (for text a shell or an interpreter
    /// reads, where a value must not become code).
    fn unbound(&mut self, text: &str, scope: Scope, path: &KeyPath) -> Option<Template> {
        let names = Names {
            vars: Some(&self.vars),
            step_outputs: Some(&self.step_outputs),
            locals: &self.locals,
            turns: self.turns,
        };
        Template::parse(text, scope, names).map_err(|e| self.template_error(text, path, e)).ok()
    }

    /// A `run:` string for `sh -c`: its values, `{vars.X}` included, reach the shell only as
    /// environment variables ([`ShellScript`]); a placeholder whose place is not certain is
    /// an error that names the variable to write instead.
    pub fn shell(&mut self, text: &str, scope: Scope, path: &KeyPath) -> Option<ShellScript> {
        let template = self.unbound(text, scope, path)?;
        let names = Names {
            vars: Some(&self.vars),
            step_outputs: Some(&self.step_outputs),
            locals: &self.locals,
            turns: self.turns,
        };
        ShellScript::compile(template, scope, names).map_err(|e| self.template_error(text, path, e)).ok()
    }

    /// An argv list: no value is the program or the code of an interpreter it starts
    /// ([`check_argv`]); `{vars.X}` are then bound, as everywhere outside a shell.
    pub fn argv(&mut self, texts: &[String], scope: Scope, path: &KeyPath) -> Option<Vec<Template>> {
        let parsed: Vec<_> = texts.iter().enumerate().map(|(i, t)| self.unbound(t, scope, &path.index(i))).collect();
        let parsed: Vec<Template> = parsed.into_iter().collect::<Option<_>>()?;
        if let Err((i, e)) = check_argv(&parsed) {
            self.template_error(&texts[i], &path.index(i), e);
            return None;
        }
        Some(parsed.into_iter().map(|t| t.bind_vars(&self.vars)).collect())
    }

    /// Records `e`, an error in the template `text` at `path`, pointing at its character.
    fn template_error(&mut self, text: &str, path: &KeyPath, e: TemplateError) {
        let mut position = self.value_position(path);
        // Point at the offending character when the value sits on one line.
        if let Some(p) = position.as_mut() {
            let line = self.source().lines().nth(p.line - 1).unwrap_or("");
            if let Some(offset) = line.chars().skip(p.column - 1).collect::<String>().find(text) {
                p.column += offset + e.column - 1;
            }
        }
        let mut d = self.diagnostic_at(path, position, e.message);
        d.help = e.help;
        self.push(d);
    }

    /// The text at `path` with its `{vars.X}` rendered, for a value needed whole when the
    /// suite loads (`what`, e.g. a model name: priced, keyed and checked before any task).
    /// Any other variable is an error: its value is known only later.
    pub fn constant(&mut self, text: &str, path: &KeyPath, what: &str) -> Option<String> {
        let template = self.template(text, Scope::Hook, path)?;
        if let Some(var) = template.vars().next() {
            let message = format!("{what} may use only `{{vars.X}}`, constants of the run: `{{{var}}}` is known later");
            self.error(path, message);
            return None;
        }
        Some(template.render(&|_| String::new()))
    }

    pub fn templates(&mut self, texts: &[String], scope: Scope, path: &KeyPath) -> Option<Vec<Template>> {
        let parsed: Vec<_> = texts.iter().enumerate().map(|(i, t)| self.template(t, scope, &path.index(i))).collect();
        parsed.into_iter().collect()
    }

    pub fn env_templates(
        &mut self,
        env: &BTreeMap<String, String>,
        scope: Scope,
        path: &KeyPath,
    ) -> Vec<(String, Template)> {
        env.iter().filter_map(|(k, v)| Some((k.clone(), self.template(v, scope, &path.key(k))?))).collect()
    }
}
