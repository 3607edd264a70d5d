//! The registry of graders: `graders!`, invoked once in `grade/mod.rs` with the one list.
//! Each entry is a file (`mod text { … }`) and the graders it holds, as their `type` and
//! the struct of their keys; from it the macro makes the module declarations, the tagged
//! raw enum (and so the JSON Schema), the compiled `Check` enum, the names and the
//! dispatch of `compile`, `grade` and `uses`.

macro_rules! graders {
    ($( mod $module:ident { $( $(#[$attr:meta])* $name:literal => $variant:ident($raw:ident), )* } )*) => {
        $( mod $module; )*

        /// A grader's own keys; `type` selects which.
        #[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
        #[serde(tag = "type")]
        #[schemars(transform = $crate::grade::grader_registry::describe_type)]
        pub enum RawGraderKind {
            $( $( $(#[$attr])* #[serde(rename = $name)] $variant($module::$raw), )* )*
        }

        /// A compiled grader's check.
        #[derive(Debug)]
        pub enum Check {
            $( $( $variant(<$module::$raw as $crate::grade::CompileGrader>::Check), )* )*
        }

        impl RawGraderKind {
            /// The `type` as written.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $( RawGraderKind::$variant(_) => $name, )* )*
                }
            }

            pub fn compile(self, cx: &mut $crate::source::ValidateCx, path: &$crate::source::KeyPath) -> Option<Check> {
                use $crate::grade::CompileGrader;
                match self {
                    $( $( RawGraderKind::$variant(raw) => raw.compile(cx, path).map(Check::$variant), )* )*
                }
            }
        }

        impl Check {
            pub async fn grade(
                &self,
                input: &$crate::grade::GradeInput<'_>,
                judge_calls: &mut Vec<$crate::grade::JudgeCall>,
            ) -> $crate::grade::GradeResult {
                use $crate::grade::Grade;
                match self {
                    $( $( Check::$variant(check) => check.grade(input, judge_calls).await, )* )*
                }
            }

            pub fn uses(&self) -> $crate::uses::Uses<'_> {
                use $crate::grade::Grade;
                match self {
                    $( $( Check::$variant(check) => check.uses(), )* )*
                }
            }

            pub fn reads_output(&self) -> $crate::grade::OutputRead {
                use $crate::grade::Grade;
                match self {
                    $( $( Check::$variant(check) => check.reads_output(), )* )*
                }
            }

            pub fn a_call_can_only(&self) -> Option<$crate::grade::CallEffect> {
                use $crate::grade::Grade;
                match self {
                    $( $( Check::$variant(check) => check.a_call_can_only(), )* )*
                }
            }
        }
    };
}

pub(super) use graders;

/// Gives each grader's `type` key a description in the schema: serde's tag has no field
/// to carry a doc comment.
pub(super) fn describe_type(schema: &mut schemars::Schema) {
    let variants = schema.get_mut("oneOf").and_then(serde_json::Value::as_array_mut);
    for tag in variants.into_iter().flatten().filter_map(|v| v.pointer_mut("/properties/type")) {
        let name = tag["const"].as_str().unwrap_or_default().to_owned();
        tag["description"] = format!("The grader: `{name}`.").into();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use crate::grade::RawGraderKind;
    use crate::source::{KeyPath, Nowhere, ValidateCx};
    use crate::uses::Uses;

    /// Compiles one grader from its keys, in a suite with `vars.name` and a default judge.
    fn uses_of(keys: serde_json::Value, test: impl FnOnce(Uses<'_>)) {
        let mut cx = ValidateCx::new(Path::new("suite.yaml"), ".".into(), "", Box::new(Nowhere));
        cx.vars.insert("name".into(), "x".into());
        cx.has_judge = true;
        cx.mcp_servers.push("fs".into());
        let raw: RawGraderKind = serde_json::from_value(keys).unwrap();
        let check = raw.compile(&mut cx, &KeyPath::root("g")).unwrap_or_else(|| panic!("{:?}", cx.diagnostics));
        test(check.uses());
    }

    #[test]
    fn text_graders_read_the_env_and_vars_of_their_templates() {
        uses_of(json!({"type": "contains", "any": ["{env.TOKEN}", "{vars.name}!"]}), |uses| {
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["TOKEN"]);
            assert_eq!(uses.non_empty.len(), 2, "an empty needle is found in any output");
            assert!(uses.mcp_tools.is_empty() && uses.judges.is_empty() && uses.secrets.is_empty());
        });
    }

    #[test]
    fn mcp_and_steps_graders_call_their_tools() {
        uses_of(json!({"type": "mcp", "server": "fs", "tool": "read", "arguments": {"p": "{env.DIR}"}}), |uses| {
            assert_eq!(uses.mcp_tools, [("fs", "read")]);
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["DIR"]);
        });
        let steps = json!({"type": "steps", "steps": [{"wait": {"timeout": "1s", "step": {"mcp": {"server": "fs", "tool": "stat"}}}}]});
        uses_of(steps, |uses| assert_eq!(uses.mcp_tools, [("fs", "stat")]));
    }

    #[test]
    fn judges_and_canaries() {
        uses_of(json!({"type": "llm", "contains": "{vars.name}"}), |uses| {
            assert!(matches!(uses.judges[..], [crate::uses::Judge::SuiteDefault]));
            assert_eq!(uses.own_judges().count(), 0);
        });
        uses_of(json!({"type": "no_leak", "canaries": ["{env.SECRET}"]}), |uses| {
            assert_eq!(uses.secrets.len(), 1);
            assert_eq!(uses.secrets[0].kind, crate::uses::SecretKind::Canary);
            assert_eq!(uses.non_empty.len(), 1);
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["SECRET"]);
        });
    }
}
