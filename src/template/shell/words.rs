//! Which words of a command are code: a command's name, `sh -c`'s script, `eval`'s words,
//! an interpreter's code, a program fed its input through a pipe.

use super::script::placeholder_column;
use crate::template::language::{Template, TemplateError};

/// Programs some of whose words are code.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "busybox"];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "tclsh",
    "pwsh",
    "osascript",
    "jshell",
];
/// Text-processing languages that can run commands (`system()`, sed's `e`).
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk", "sed", "gsed"];
/// Programs that run the rest of their words as a command (after their own options).
const WRAPPERS: &[&str] = &[
    "env", "command", "exec", "nohup", "time", "nice", "sudo", "doas", "setsid", "stdbuf", "timeout", "xargs",
    "ionice", "chrt", "taskset", "unbuffer", "builtin", "strace", "ltrace", "flock", "chroot", "runuser",
];
/// Programs whose words are a command line run by a shell (or a remote one).
/// (`let`, `declare`, `typeset`: bash's arithmetic, which runs `a[$(…)]` in a value.)
const COMMAND_STRINGS: &[&str] =
    &["eval", ".", "source", "trap", "watch", "ssh", "su", "script", "parallel", "let", "declare", "typeset"];

/// Why a command (its `words`) runs what it reads on its input as code, when that input
/// holds a value: a shell or interpreter given no script (`| sh`, `| python3`), `source
/// /dev/stdin`, or `xargs` making the input a code word of its command (`| xargs sh -c`).
pub(super) fn stdin_is_code(words: &[Option<&str>]) -> Option<String> {
    let option = |w: &&Option<&str>| w.is_some_and(|w| w.starts_with('-') && w.len() > 1);
    let mut i = 0;
    while let Some(Some(w)) = words.get(i) {
        if basename(w) == "xargs" {
            let mut j = i + 1;
            while words.get(j).is_some_and(|w| option(&w)) {
                j += 1;
            }
            // Its input becomes the next words of its command (`echo` when it has none).
            return (j < words.len())
                .then(|| code_position(&words[j..], None))
                .flatten()
                .map(|why| format!("is piped into `xargs`, where {why}"));
        }
        if !(is_assignment(w) || WRAPPERS.contains(&basename(w)) || option(&&Some(*w))) {
            break;
        }
        i += 1;
    }
    let program = basename((*words.get(i)?)?);
    if program.contains('$') {
        return Some(format!("is piped into `{program}`, a command known only when it runs"));
    }
    let args = &words[i + 1..];
    let operands: Vec<&str> = args.iter().filter(|w| !option(w)).map(|w| w.unwrap_or("")).collect();
    let no_script = operands.is_empty() || operands == ["-"];
    let code_flag = args
        .iter()
        .any(|w| w.is_some_and(|w| w.starts_with('-') && !w.starts_with("--") && (w.contains('c') || w.contains('e'))));
    let runs_input = match program {
        p if SHELLS.contains(&p) || INTERPRETERS.contains(&p) => no_script && !code_flag,
        "." | "source" | "eval" => operands.iter().any(|o| matches!(*o, "/dev/stdin" | "-")),
        _ => false,
    };
    runs_input.then(|| format!("is piped into `{program}`, which runs its input as code"))
}

/// Why a value in the word after `words` (the command's earlier words as the shell sees
/// them, `None` for one holding a value; `current`: the text of the word before the value)
/// is code: a command's name, the script of `sh -c` or `python -c`, the program of `awk`,
/// any word of `eval`. `None` when it is an argument: evalgate passes it as one word of
/// text, and what a program does with its arguments is the program's (SECURITY.md).
pub(super) fn code_position(words: &[Option<&str>], current: Option<&str>) -> Option<String> {
    let mut i = 0;
    // Assignments before the command (`A=1 cmd`), and wrappers with their options.
    loop {
        match words.get(i) {
            None if current.is_some_and(is_assignment) => return None,
            None => return Some("it is a command's name (a value is never a program to run)".to_owned()),
            Some(Some(w)) if is_assignment(w) => i += 1,
            Some(Some(w)) if WRAPPERS.contains(&basename(w)) => {
                i += 1;
                while let Some(Some(w)) = words.get(i) {
                    let count = w.starts_with(|c: char| c.is_ascii_digit())
                        && w.chars().all(|c| c.is_ascii_digit() || ".smhd".contains(c));
                    if !(w.starts_with('-') || is_assignment(w) || count) {
                        break;
                    }
                    i += 1;
                }
            }
            Some(_) => break,
        }
    }
    let Some(program) = words[i].map(basename) else {
        return Some("its command's name holds a value".to_owned());
    };
    if program.contains('$') {
        return Some(format!("its command's name, `{program}`, is known only when it runs"));
    }
    let args = &words[i + 1..];
    let option = |w: &&Option<&str>| w.is_some_and(|w| w.starts_with('-') && w.len() > 1);
    if COMMAND_STRINGS.contains(&program) {
        return Some(format!("`{program}` runs its words as a command line"));
    }
    if program == "find" {
        // `find … -exec CMD …`: a command again.
        let exec = args.iter().rposition(|w| matches!(w, Some("-exec" | "-execdir" | "-ok" | "-okdir")));
        return exec.and_then(|at| code_position(&args[at + 1..], current));
    }
    if SHELLS.contains(&program) {
        // `sh -c SCRIPT [NAME ARGS…]`: the first operand after `-c` is code; the words
        // after it are the script's `$0`, `$1`, … (text: the way to pass it a value).
        let c_flag = args.iter().rposition(|w| {
            w.is_some_and(|w| w == "--command" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c')))
        });
        return match c_flag {
            Some(at) if args[at + 1..].iter().filter(|w| !option(w)).count() == 0 => {
                Some(format!("it is the script `{program} -c` runs"))
            }
            None if !args.iter().any(|w| !option(&w)) => Some(format!("it names the script `{program}` runs")),
            _ => None,
        };
    }
    if INTERPRETERS.contains(&program) {
        let code_flag = |w: &Option<&str>| {
            matches!(
                w,
                Some("-c" | "-e" | "-E" | "-p" | "-r" | "--eval" | "--print" | "-Command" | "-command" | "eval")
            )
        };
        if args.last().is_some_and(code_flag) {
            return Some(format!("it is the code `{program}` runs"));
        }
        if !args.iter().any(code_flag) && !args.iter().any(|w| !option(&w)) {
            return Some(format!("it names the program `{program}` runs"));
        }
        return None;
    }
    if AWKS.contains(&program) {
        let program_flag = |w: &Option<&str>| matches!(w, Some("-e" | "--expression" | "-f" | "--file"));
        if args.last().is_some_and(program_flag)
            || (!args.iter().any(program_flag) && !args.iter().any(|w| !option(&w)))
        {
            return Some(format!("it is the program `{program}` runs"));
        }
    }
    None
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Checks an argv list's templates (parsed, `{vars.X}` not yet bound): a value is never a
/// program's name nor the code of an interpreter it starts (`[sh, -c, "… {x} …"]`).
/// `Err` has the index of the refused item.
pub fn check_argv(argv: &[Template]) -> Result<(), (usize, TemplateError)> {
    let words: Vec<Option<&str>> = argv.iter().map(|t| (t.vars().next().is_none()).then_some(t.source())).collect();
    for (i, t) in argv.iter().enumerate() {
        let Some(var) = t.vars().next() else { continue };
        if let Some(why) = code_position(&words[..i], None) {
            let help = format!(
                "pass it as data: an argument after the code ([sh, -c, '… \"$1\" …', sh, '{{{var}}}']), or in `env` (`X: \"{{{var}}}\"`) read from the environment inside the program"
            );
            let column = placeholder_column(t.source(), &var.to_string(), 1);
            return Err((
                i,
                TemplateError { column, message: format!("`{{{var}}}` would be code here: {why}"), help: Some(help) },
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::language::{Names, Scope};

    #[test]
    fn an_argv_never_runs_a_value_as_code() {
        let parse = |items: &[&str]| -> Vec<Template> {
            items.iter().map(|s| Template::parse(s, Scope::AfterAgent, Names::default()).unwrap()).collect()
        };
        assert!(check_argv(&parse(&["sh", "-c", "echo \"$1\"", "sh", "{agent.output}"])).is_ok());
        assert!(check_argv(&parse(&["grep", "-q", "{agent.output}", "file"])).is_ok());
        for argv in [
            &["sh", "-c", "echo {agent.output}"][..],
            &["/bin/bash", "-ec", "{agent.output}"],
            &["env", "A=1", "python3", "-c", "{agent.output}"],
            &["{agent.output}"],
            &["node", "-e", "x('{agent.output}')"],
        ] {
            let (i, e) = check_argv(&parse(argv)).unwrap_err();
            assert!(argv[i].contains("{agent.output}"), "{argv:?}: {e:?}");
        }
    }
}
