//! A template rendered into a shell script (a `run:` string, run by `sh -c`): its values
//! go to the shell as environment variables the script refers to, never as shell code.

use super::language::{Segment, Template, Var};

impl Template {
    /// Renders a shell script (a `run:` string, run by `sh -c`): each value is never pasted
    /// in but passed as an environment variable (`EVALGATE_VALUE_1`, …) the script refers
    /// to, quoted as one word for where it stands — `"${V}"` outside quotes, `${V}` inside
    /// double quotes, `'"${V}"'` inside single quotes. The shell expands a variable without
    /// reading its value as code, so a model's answer with `$(…)`, a backtick or a quote is
    /// only text, in a heredoc too. Returns the script and the variables to set.
    pub fn render_shell(&self, lookup: &dyn Fn(&Var) -> String) -> (String, Vec<(String, String)>) {
        let (mut script, mut values) = (String::new(), Vec::new());
        let mut quoting = ShellQuoting::default();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => {
                    script.push_str(text);
                    text.chars().for_each(|c| quoting.read(c));
                }
                Segment::Var(var) => {
                    let name = format!("EVALGATE_VALUE_{}", values.len() + 1);
                    script.push_str(&match quoting.state {
                        Quoted::Not => format!("\"${{{name}}}\""),
                        Quoted::Double => format!("${{{name}}}"),
                        Quoted::Single => format!("'\"${{{name}}}\"'"),
                    });
                    values.push((name, lookup(var)));
                }
            }
        }
        (script, values)
    }
}

/// Where a POSIX shell's reader is in a script: inside single quotes, double quotes or
/// neither, a backslash escaping the next character outside single quotes.
#[derive(Default)]
struct ShellQuoting {
    state: Quoted,
    escaped: bool,
}

#[derive(Default, Clone, Copy)]
enum Quoted {
    #[default]
    Not,
    Single,
    Double,
}

impl ShellQuoting {
    fn read(&mut self, c: char) {
        if std::mem::take(&mut self.escaped) {
            return;
        }
        self.state = match (self.state, c) {
            (Quoted::Not | Quoted::Double, '\\') => {
                self.escaped = true;
                self.state
            }
            (Quoted::Not, '\'') => Quoted::Single,
            (Quoted::Not, '"') => Quoted::Double,
            (Quoted::Single, '\'') | (Quoted::Double, '"') => Quoted::Not,
            (state, _) => state,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Names, Scope};

    /// A hostile value, run through `sh` in each quoting context: it comes out as the same
    /// text, and none of its shell code runs.
    #[test]
    fn a_value_in_a_shell_string_is_one_word_of_text_in_every_quoting_context() {
        let dir = tempfile::tempdir().unwrap();
        let hostile = "a $(touch pwned1) `touch pwned2` 'c; touch pwned3; 'd\" ; touch pwned4; \"e \\ * ~";
        for (script, expected) in [
            (r#"printf '%s' {agent.output}"#, hostile.to_owned()),
            (r#"printf '%s' "[{agent.output}]""#, format!("[{hostile}]")),
            (r#"printf '%s' '[{agent.output}]'"#, format!("[{hostile}]")),
            (r#"printf '%s' "it's" \" '{agent.output}'"#, format!("it's\"{hostile}")),
            ("cat <<EOF\n{agent.output}\nEOF", format!("\"{hostile}\"\n")),
        ] {
            let t = Template::parse(script, Scope::AfterAgent, Names::default()).unwrap();
            let (script, values) = t.render_shell(&|_| hostile.to_owned());
            assert!(!script.contains("touch"), "{script}");
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .envs(values)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "{script}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no command of the value ran");
    }
}
