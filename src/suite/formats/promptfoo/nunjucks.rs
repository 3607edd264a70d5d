//! promptfoo's templating (Nunjucks, `autoescape: false`) on minijinja, which reads the same
//! syntax: what differs is shown here, and in docs/formats.md. Values print as JavaScript
//! prints them (`[object Object]`, a list joined by `,`, `1` for `1.0`, nothing for null or
//! an undefined name); `dump` and `load` are promptfoo's filters; `env` is refused (its
//! values would be written into the converted suite).

use minijinja::value::{Value as Mj, ValueKind};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Map, Value};

/// An environment that renders as promptfoo's Nunjucks does.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    // Nunjucks reads a member of an undefined value as undefined, and prints it as nothing.
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_formatter(|out, _state, value| {
        out.write_str(&js_text(value)).map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
    });
    env.add_filter("dump", |v: Mj| serde_json::to_string(&v).unwrap_or_default());
    env.add_filter("load", |s: String| -> Result<Mj, minijinja::Error> {
        serde_json::from_str::<Value>(&s)
            .map(|v| Mj::from_serialize(&v))
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
    });
    env
}

/// JavaScript's `String(v)` of a template value, as Nunjucks prints it.
fn js_text(value: &Mj) -> String {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => String::new(),
        ValueKind::Seq | ValueKind::Iterable => {
            value.try_iter().map(|items| items.map(|i| js_text(&i)).collect::<Vec<_>>().join(",")).unwrap_or_default()
        }
        ValueKind::Map => "[object Object]".into(),
        ValueKind::Number => {
            let json = serde_json::to_value(value).unwrap_or(Value::Null);
            crate::grade::promptfoo_js_string(&json)
        }
        _ => value.to_string(),
    }
}

/// promptfoo's `autoWrapRawIfPartialNunjucks`: text with a tag opened and not closed on its
/// line is taken as it is.
fn wrap_partial(text: &str) -> String {
    static PARTIAL: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?m)(\{%[^%]*$|\{\{[^}]*$|\{#[^#]*$)").expect("valid"));
    static RAW: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{%\s*raw\s*%\}").expect("valid"));
    static END: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{%\s*endraw\s*%\}").expect("valid"));
    if PARTIAL.is_match(text) && !(RAW.is_match(text) && END.is_match(text)) {
        format!("{{% raw %}}{text}{{% endraw %}}")
    } else {
        text.to_owned()
    }
}

/// `template` rendered with `vars`; `Err` says what Nunjucks would not render.
pub fn render(template: &str, vars: &Map<String, Value>) -> Result<String, String> {
    if !template.contains("{{") && !template.contains("{%") && !template.contains("{#") {
        return Ok(template.to_owned());
    }
    static ENV_USE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(\{\{|\{%)[^}%]*\benv\b").expect("valid"));
    if ENV_USE.is_match(template) && !vars.contains_key("env") {
        return Err("`env` in a template is not supported: its values would be written into the converted suite; pass the value as a var".into());
    }
    let env = environment();
    let text = wrap_partial(template);
    env.render_str(&text, Mj::from_serialize(vars)).map_err(|e| {
        let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
        format!("the template does not render: {}{detail}", e.kind())
    })
}

/// promptfoo's preparation of a test's vars before a prompt is rendered (`renderPrompt`): a
/// string loses one trailing newline, `{{ name }}` of another var is put in, and a string
/// holding a template is rendered unless it names a var that is not there.
pub fn prepare_vars(vars: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut vars = vars.clone();
    for v in vars.values_mut() {
        if let Value::String(s) = v
            && let Some(stripped) = s.strip_suffix('\n')
        {
            *s = stripped.to_owned();
        }
    }
    // `resolveVariables`: at most five rounds of `{{ name }}` → the var's text.
    static REF: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{\{\s*(\w+)\s*\}\}").expect("valid"));
    for _ in 0..5 {
        let mut changed = false;
        let keys: Vec<String> = vars.keys().cloned().collect();
        for key in keys {
            let Some(Value::String(text)) = vars.get(&key) else { continue };
            let Some(c) = REF.captures(text) else { continue };
            let Some(target) = vars.get(&c[1]) else { continue };
            let with = match target {
                Value::String(s) => s.clone(),
                other => crate::grade::promptfoo_js_string(other),
            };
            let replaced = text.replacen(&c[0], &with, 1);
            vars.insert(key, Value::String(replaced));
            changed = true;
        }
        if !changed {
            break;
        }
    }
    let mut rendered = vars.clone();
    for (key, v) in &vars {
        if let Value::String(s) = v
            && !names_missing(s, &vars)
        {
            rendered.insert(key.clone(), Value::String(render(s, &vars)?));
        }
    }
    Ok(rendered)
}

/// Whether `text` names a var (`{{ name }}`, `{% if name %}`) that `vars` lacks
/// (promptfoo's `referencesUndefinedVariables`).
fn names_missing(text: &str, vars: &Map<String, Value>) -> bool {
    static NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\{\{\s*([^{}\s|]+)\s*(?:\|[^}]+)?\}\}|\{%\s*(?:if|for)\s+([^{}\s]+)\s*.*?%\}")
            .expect("valid")
    });
    NAME.captures_iter(text).any(|c| {
        let name = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        let root = name.split(['.', '[']).next().unwrap_or_default();
        !root.is_empty() && !vars.contains_key(root) && root != "env"
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn vars(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn renders_as_nunjucks_prints() {
        let v = vars(json!({"n": 1.0, "list": ["a", "b"], "obj": {"k": 1}, "s": "x"}));
        assert_eq!(
            render("{{ n }} {{ list }} {{ obj }} {{ missing }} {{ missing.deeper }} {{ s | upper }}", &v).unwrap(),
            "1 a,b [object Object]   X"
        );
        assert_eq!(render("{{ obj | dump }}", &v).unwrap(), r#"{"k":1}"#);
        assert_eq!(render("{{ obj.k }}", &v).unwrap(), "1");
    }

    #[test]
    fn a_partial_tag_is_text() {
        assert_eq!(render("a {{ b", &Map::new()).unwrap(), "a {{ b");
    }

    #[test]
    fn env_is_refused() {
        assert!(render("{{ env.OPENAI_API_KEY }}", &Map::new()).unwrap_err().contains("`env`"));
    }

    #[test]
    fn vars_are_prepared_as_promptfoo_prepares_them() {
        let v = prepare_vars(&vars(json!({"a": "x\n", "b": "<{{ a }}>", "c": "{{ nope }}"}))).unwrap();
        assert_eq!(v["a"], "x");
        assert_eq!(v["b"], "<x>");
        assert_eq!(v["c"], "{{ nope }}");
    }
}
