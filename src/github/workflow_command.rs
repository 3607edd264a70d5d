//! Workflow commands (`::error file=…::message`), escaped as the runner expects.

/// Escapes a command's message: `%`, CR and LF.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a property value: as data, plus `:` and `,` (they separate properties).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `::NAME key=value,…::message`
pub fn command(name: &str, properties: &[(&str, String)], message: &str) -> String {
    let props: Vec<String> = properties.iter().map(|(k, v)| format!("{k}={}", escape_property(v))).collect();
    if props.is_empty() {
        format!("::{name}::{}", escape_data(message))
    } else {
        format!("::{name} {}::{}", props.join(","), escape_data(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_data_and_properties() {
        assert_eq!(
            command("error", &[("file", "a,b:c.yaml".into()), ("line", "3".into())], "50% done\r\nnext: x, y"),
            "::error file=a%2Cb%3Ac.yaml,line=3::50%25 done%0D%0Anext: x, y"
        );
        assert_eq!(command("add-mask", &[], "s3cr3t"), "::add-mask::s3cr3t");
    }
}
