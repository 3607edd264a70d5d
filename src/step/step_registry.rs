//! The registry of step kinds: `steps!`, invoked once in `step/mod.rs` with the one list.
//! Each entry is a file (`mod http { … }`) and the kinds it holds, as their action key and
//! the struct of their keys; from it the macro makes the module declarations, the raw step
//! (the common keys, the `run` keys and one optional key a kind: so the JSON Schema), the
//! compiled `Action` enum, the names and the dispatch of `compile`, `execute` and `uses`.
//!
//! `run` steps are the exception: their keys (`run`/`argv`, `env`, `workdir`, `expect`)
//! sit at the step's top level, so they are declared here with the common keys (a
//! flattened struct would lose the key path of every error inside it); `run_step.rs` holds
//! the rest of the kind.

macro_rules! steps {
    ($( mod $module:ident { $( $(#[$attr:meta])* $key:ident => $variant:ident($raw:ident), )* } )*) => {
        mod run_step;
        $( mod $module; )*

        #[doc = concat!("One step: exactly one action key (`run`/`argv`", $( $( ", `", stringify!($key), "`", )* )*
                        ") plus the common keys.")]
        #[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[schemars(extend("examples" = [
            {"run": "./seed-db.sh", "timeout": "30s"},
            {"id": "token", "argv": ["./login.sh", "--user", "test"], "outputs": {"value": "{stdout}"}},
            {"http": {"url": "http://localhost:8080/health", "expect": {"status": 200}}},
            {"file": {"path": "fixtures/inbox.txt", "content": "hello"}},
            {"wait": {"step": {"http": {"url": "http://localhost:8080/ready"}}, "timeout": "60s"}},
            {"mcp": {"server": "kube", "tool": "pods_list", "arguments": {"namespace": "default"}}},
        ]))]
        #[schemars(transform = one_action)]
        pub struct RawStep {
            /// Names the step, so later steps, the prompt, graders and cleanup can use its outputs.
            pub id: Option<String>,
            /// A failure of this step is recorded but does not stop the task.
            #[serde(default)]
            pub continue_on_error: bool,
            /// Bounds the step: a `run` step's default is 60s and kills its process group; an `http`
            /// or `mcp` step's request; any other step as a whole.
            pub timeout: Option<$crate::values::RawDuration>,
            /// Values to capture: `"{stdout}"`, `"{stderr}"`, `"{exit_code}"`, `{from: stdout, json_path: a.b}`,
            /// `"{response.status}"`, `"{response.body}"`, `"{response.headers.NAME}"`, `"{response.json.PATH}"`.
            #[serde(default)]
            pub outputs: std::collections::BTreeMap<String, RawOutput>,
            /// A hook step marked `preflight: true` that fails means the environment is not ready (exit 3).
            #[serde(default)]
            pub preflight: bool,

            /// A shell command, run with `sh -c`.
            pub run: Option<String>,
            /// A program and its arguments, run directly.
            pub argv: Option<Vec<String>>,
            /// `run`/`argv` only.
            #[serde(default)]
            pub env: std::collections::BTreeMap<String, String>,
            /// `run`/`argv` only.
            pub workdir: Option<String>,
            /// `run`/`argv` only.
            pub expect: Option<run_step::RawRunExpect>,

            $( $( $(#[$attr])* pub $key: Option<Box<$module::$raw>>, )* )*
        }

        /// What a compiled step does.
        #[derive(Debug)]
        pub enum Action {
            Run(run_step::RunAction),
            $( $( $variant(Box<<$module::$raw as $crate::step::CompileStep>::Action>), )* )*
        }

        /// Every action key, in the order of the list.
        const ACTION_KEYS: &[&str] = &["run", "argv", $( $( stringify!($key), )* )*];

        /// The schema says what the loader says: a step sets exactly one action key.
        fn one_action(schema: &mut schemars::Schema) {
            let choices: Vec<serde_json::Value> =
                ACTION_KEYS.iter().map(|key| serde_json::json!({"required": [key]})).collect();
            schema.insert("oneOf".into(), choices.into());
        }

        impl RawStep {
            /// The action keys this step sets.
            fn action_keys(&self) -> Vec<&'static str> {
                let set = [self.run.is_some(), self.argv.is_some(), $( $( self.$key.is_some(), )* )*];
                ACTION_KEYS.iter().zip(set).filter_map(|(key, set)| set.then_some(*key)).collect()
            }

            /// The outputs the step's kind can capture.
            fn captures(&self) -> Option<Captures> {
                use $crate::step::CompileStep;
                $( $( if self.$key.is_some() {
                    return <$module::$raw as CompileStep>::CAPTURES;
                } )* )*
                run_step::CAPTURES
            }

            /// Compiles the action of a step that sets exactly one action key; `path` is the step's.
            fn compile_action(&self, cx: &mut $crate::source::ValidateCx, path: &$crate::source::KeyPath, scope: $crate::template::Scope) -> Option<Action> {
                use $crate::step::CompileStep;
                $( $( if let Some(raw) = &self.$key {
                    let at = path.key(stringify!($key));
                    return raw.compile(cx, &at, scope).map(|action| Action::$variant(Box::new(action)));
                } )* )*
                run_step::compile(self, cx, path, scope).map(Action::Run)
            }
        }

        impl Action {
            /// The kind's name (`run` for `argv` too), as results show it.
            pub fn kind(&self) -> &'static str {
                match self {
                    Action::Run(_) => "run",
                    $( $( Action::$variant(_) => stringify!($key), )* )*
                }
            }

            fn own_timeout(&self) -> bool {
                use $crate::step::RunStep;
                match self {
                    Action::Run(_) => <run_step::RunAction as RunStep>::OWN_TIMEOUT,
                    $( $( Action::$variant(_) => <<$module::$raw as $crate::step::CompileStep>::Action as RunStep>::OWN_TIMEOUT, )* )*
                }
            }

            async fn execute(
                &self,
                timeout: Option<std::time::Duration>,
                env: StepEnv<'_>,
                bindings: &mut $crate::template::Bindings,
                result: &mut $crate::results::StepResult,
            ) -> Option<Leaf> {
                use $crate::step::RunStep;
                match self {
                    Action::Run(action) => action.execute(timeout, env, bindings, result).await,
                    $( $( Action::$variant(action) => action.execute(timeout, env, bindings, result).await, )* )*
                }
            }

            pub fn uses(&self) -> $crate::uses::Uses<'_> {
                use $crate::step::RunStep;
                match self {
                    Action::Run(action) => action.uses(),
                    $( $( Action::$variant(action) => action.uses(), )* )*
                }
            }
        }
    };
}

pub(super) use steps;

#[cfg(test)]
pub(super) mod tests {
    use std::path::Path;

    use serde_json::json;

    use crate::source::{KeyPath, Nowhere, ValidateCx};
    use crate::step::compiled_step::compile_step;
    use crate::step::{RawStep, Step};
    use crate::template::Scope;

    /// Compiles one step from its keys, in a suite with `vars.name` and an MCP server `fs`;
    /// `Err` with each problem as `path: message`.
    pub fn compile(keys: serde_json::Value) -> Result<Step, Vec<String>> {
        let mut cx = ValidateCx::new(Path::new("suite.yaml"), ".".into(), "", Box::new(Nowhere));
        cx.vars.insert("name".into(), "x".into());
        cx.mcp_servers.push("fs".into());
        cx.extensions.push("fx".into());
        let raw: RawStep = serde_json::from_value(keys).unwrap();
        let step = compile_step(&mut cx, &raw, &KeyPath::root("s"), Scope::Task);
        match step {
            Some(step) if cx.diagnostics.is_empty() => Ok(step),
            _ => Err(cx.diagnostics.iter().map(|d| format!("{}: {}", d.key_path, d.message)).collect()),
        }
    }

    #[test]
    fn each_kind_is_selected_by_its_key() {
        let kinds = [
            (json!({"run": "true"}), "run"),
            (json!({"argv": ["true"]}), "run"),
            (json!({"http": {"url": "http://localhost/"}}), "http"),
            (json!({"mcp": {"server": "fs", "tool": "stat"}}), "mcp"),
            (json!({"file": {"path": "a", "absent": true}}), "file"),
            (json!({"wait": {"timeout": "1s", "step": {"run": "true"}}}), "wait"),
            (json!({"foreach": {"var": "x", "in": [1], "steps": [{"run": "echo {x}"}]}}), "foreach"),
            (json!({"any_of": [{"run": "true"}]}), "any_of"),
            (json!({"group": {"steps": [{"run": "true"}]}}), "group"),
            (json!({"extension": {"name": "fx", "operation": "write", "args": {"path": "{vars.name}"}}}), "extension"),
        ];
        for (keys, kind) in kinds {
            assert_eq!(compile(keys).unwrap().action.kind(), kind);
        }
    }

    #[test]
    fn a_step_has_exactly_one_action_key_from_the_list() {
        let [nothing] = &compile(json!({"id": "x"})).unwrap_err()[..] else { panic!("one error") };
        assert!(
            nothing.starts_with("s: the step has nothing to do: add one of `run`, `argv`, `http`, `mcp`"),
            "{nothing}"
        );
        assert!(crate::step::ACTION_KEYS.iter().all(|key| nothing.contains(&format!("`{key}`"))), "{nothing}");
        assert_eq!(
            compile(json!({"argv": ["a"], "any_of": []})).unwrap_err(),
            ["s: a step does one thing, but this one has argv and any_of"]
        );
    }

    #[test]
    fn an_extension_step_names_a_suite_extension_and_keeps_its_args_as_written() {
        let [unknown] = &compile(json!({"extension": {"name": "fz", "operation": "write"}})).unwrap_err()[..] else {
            panic!("one error")
        };
        assert_eq!(unknown, "s.extension.name: unknown extension `fz`");
        let args = json!({"a": ["{env.HOME}", 1, "{vars.name}"], "b/c": "{task.id}"});
        let step = compile(json!({"extension": {"name": "fx", "operation": "write", "args": args}})).unwrap();
        let [call] = &step.uses().extension_calls[..] else { panic!("one call") };
        assert_eq!((call.name, call.operation), ("fx", "write"));
        assert_eq!(call.templated, ["/a/0", "/b~1c"], "a suite var is known at load");
        assert_eq!(call.written, &json!({"a": ["{env.HOME}", 1, "x"], "b/c": "{task.id}"}));
    }

    #[test]
    fn steps_use_what_they_and_their_inner_steps_render_and_call() {
        let step = compile(json!({"group": {
            "setup": [{"run": "echo {vars.name}", "env": {"T": "{env.TOKEN}"}}],
            "steps": [{"foreach": {"var": "p", "in": "{env.PATHS}", "steps": [
                {"wait": {"timeout": "1s", "step": {"mcp": {"server": "fs", "tool": "stat", "arguments": {"p": "{p}"}}}}}
            ]}}],
            "cleanup": [{"http": {"url": "{env.URL}", "headers": {"auth": "{env.KEY}"}}}],
        }}))
        .unwrap();
        let uses = step.uses();
        assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["TOKEN", "PATHS", "URL", "KEY"]);
        assert_eq!(uses.secrets.len(), 1, "the `auth` header's value");
        assert_eq!(uses.mcp_tools, [("fs", "stat")]);
    }
}
