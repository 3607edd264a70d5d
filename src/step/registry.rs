//! The registry of step kinds: `steps!`, invoked once in `step/mod.rs` with the one list.
//! Each entry is a file (`mod http { … }`) and the kinds it holds, as their action key and
//! the struct of their keys; from it the macro makes the module declarations, the raw step
//! (the common keys, the `run` keys and one optional key a kind: so the JSON Schema), the
//! compiled `Action` enum, the names and the dispatch of `compile`, `execute` and `uses`.
//!
//! `run` steps are the exception: their keys (`run`/`argv`, `env`, `workdir`, `expect`)
//! sit at the step's top level, so they are declared here with the common keys (a
//! flattened struct would lose the key path of every error inside it); `command.rs` holds
//! the rest of the kind.

macro_rules! steps {
    ($( mod $module:ident { $( $(#[$attr:meta])* $key:ident => $variant:ident($raw:ident), )* } )*) => {
        mod command;
        $( mod $module; )*

        #[doc = concat!("One step: exactly one action key (`run`/`argv`", $( $( ", `", stringify!($key), "`", )* )*
                        ") plus the common keys.")]
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct RawStep {
            /// Names the step, so later steps, the prompt, graders and cleanup can use its outputs.
            pub id: Option<String>,
            /// A failure of this step is recorded but does not stop the task.
            #[serde(default)]
            pub continue_on_error: bool,
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
            pub expect: Option<command::RawRunExpect>,

            $( $( $(#[$attr])* pub $key: Option<Box<$module::$raw>>, )* )*
        }

        /// What a compiled step does.
        #[derive(Debug)]
        pub enum Action {
            Run(command::RunAction),
            $( $( $variant(Box<<$module::$raw as $crate::step::CompileStep>::Action>), )* )*
        }

        /// Every action key, in the order of the list.
        const ACTION_KEYS: &[&str] = &["run", "argv", $( $( stringify!($key), )* )*];

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
                command::CAPTURES
            }

            /// Compiles the action of a step that sets exactly one action key; `path` is the step's.
            fn compile_action(&self, cx: &mut $crate::source::ValidateCx, path: &str, scope: $crate::template::Scope) -> Option<Action> {
                use $crate::step::CompileStep;
                $( $( if let Some(raw) = &self.$key {
                    let at = format!("{path}.{}", stringify!($key));
                    return raw.compile(cx, &at, scope).map(|action| Action::$variant(Box::new(action)));
                } )* )*
                command::compile(self, cx, path, scope).map(Action::Run)
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
                    Action::Run(_) => <command::RunAction as RunStep>::OWN_TIMEOUT,
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
