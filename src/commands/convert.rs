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
    let text = std::fs::read_to_string(&args.file).map_err(|e| Error::Usage(format!("cannot read {file}: {e}")))?;
    let parsed = Document::parse(&text).map_err(|e| Error::Usage(format!("{file} is not JSON or YAML: {e}")))?;
    let doc = serde_json::Value::deserialize(parsed.de(parsed.root()))
        .map_err(|e| Error::Usage(format!("{file} is not JSON or YAML: {e}")))?;
    let format = match args.format.as_deref() {
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
    let absolute = std::path::absolute(&args.file).map_err(|e| Error::Usage(format!("{file}: {e}")))?;
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
    crate::outln!(
        "# Converted from {file} ({}) by evalgate convert. Save it beside the original: paths are relative.\n# Where the original does not say how to run an agent, MCP server or judge, a placeholder stands in: point it at yours.\n{yaml}",
        format.name()
    );
    Ok(exit::SUCCESS)
}
