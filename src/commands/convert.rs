//! `evalgate convert FILE`: a suite of another format printed as a native suite, so a team
//! can migrate. Running the printed suite (saved beside the original) gives the same results
//! as importing the original.

use crate::cli::ConvertArgs;
use crate::error::Error;
use crate::exit;
use crate::suite::formats::{self, Detected};
use crate::yaml::Document;
use serde::Deserialize;

pub fn convert(args: &ConvertArgs) -> Result<i32, Error> {
    let file = args.file.display();
    let text = crate::yaml::read(&args.file).map_err(|e| Error::Usage(format!("cannot read {file}: {e}")))?;
    let (name, yaml) = convert_text(&args.file, &text, args.format.as_deref())?;
    crate::outln!(
        "# Converted from {file} ({name}) by evalgate convert. Save it beside the original: paths are relative.\n# Where the original does not say how to run an agent, MCP server or judge, a placeholder stands in: point it at yours.\n{yaml}"
    );
    Ok(exit::SUCCESS)
}

/// `text`, the contents of `path`, as a native suite (YAML) and the name of the format it
/// was converted from; `format` names it, else it is detected.
pub fn convert_text(path: &std::path::Path, text: &str, format: Option<&str>) -> Result<(&'static str, String), Error> {
    let file = path.display();
    let parsed = Document::parse(text).map_err(|e| Error::Usage(format!("{file} is not JSON or YAML: {e}")))?;
    let doc = serde_json::Value::deserialize(parsed.de(parsed.root()))
        .map_err(|e| Error::Usage(format!("{file} is not JSON or YAML: {e}")))?;
    let format = match format {
        None => match formats::detect(&doc) {
            Detected::Foreign(format) => format,
            Detected::Native => return Err(Error::Usage(format!("{file} is already an evalgate suite"))),
            Detected::Unknown => {
                return Err(Error::Usage(format!("{file}: the format is not recognised; pass --format")));
            }
        },
        Some(name) => formats::by_import_name(name)
            .ok_or_else(|| Error::Usage(format!("unknown format `{name}`; supported: {}", formats::import_names())))?,
    };
    let absolute = std::path::absolute(path).map_err(|e| Error::Usage(format!("{file}: {e}")))?;
    let cx = formats::ConvertCx {
        file: &absolute,
        rel_dir: Default::default(),
        agent: None,
        model_agent: false,
        server: None,
    };
    let converted = format.convert(&doc, &cx).map_err(|problems| {
        let list = formats::describe(&problems, Some(&parsed), &file.to_string());
        Error::Usage(format!("invalid {}:\n  {}", format.name(), list.join("\n  ")))
    })?;
    let yaml = serde_saphyr::to_string(&converted.suite).map_err(|e| Error::Internal(e.to_string()))?;
    loads_beside(&absolute, &yaml).map_err(|problems| {
        Error::Usage(format!(
            "{file}: the converted {} suite would not load, so it is not printed:\n  {}",
            format.name(),
            problems.join("\n  ")
        ))
    })?;
    Ok((format.name(), yaml))
}

/// Loads the converted suite as if saved beside the original (its paths are relative to
/// that directory): `convert` never prints a suite that does not load.
fn loads_beside(original: &std::path::Path, yaml: &str) -> Result<(), Vec<String>> {
    let dir = original.parent().unwrap_or(std::path::Path::new("."));
    let file = tempfile::Builder::new()
        .prefix(".evalgate-convert-")
        .suffix(".yaml")
        .tempfile_in(dir)
        .and_then(|f| std::fs::write(f.path(), yaml).map(|()| f))
        .map_err(|e| vec![format!("cannot check it in {}: {e}", dir.display())])?;
    match crate::suite::load_suite(file.path(), &crate::suite::LoadOptions::default()) {
        Ok(_) => Ok(()),
        Err(crate::suite::LoadError::Invalid { diagnostics }) => {
            Err(diagnostics.iter().map(|d| format!("{}: {}", d.key_path, d.message)).collect())
        }
        Err(e) => Err(vec![e.to_string()]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_converted_suite_that_does_not_load_is_refused_with_its_problems() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("eval.yaml");
        let problems =
            super::loads_beside(&original, "evalgate: 1\nsuite: x\ntasks:\n  - id: a\n    prompt: \"{promt}\"\n")
                .unwrap_err();
        assert!(problems.iter().any(|p| p.contains("unknown variable `{promt}`")), "{problems:?}");
        let ok = "evalgate: 1\nsuite: x\nagents: {bot: {command: [echo]}}\ntasks:\n  - id: a\n    prompt: hi\n    grade: [{type: contains, value: hi}]\n";
        assert_eq!(super::loads_beside(&original, ok), Ok(()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the check leaves no file behind");
    }
}
