//! `evalgate convert FILE`: a suite of another format printed as a native suite, so a team
//! can migrate. Running the printed suite gives the same results as importing the original.

use crate::app::AppError;
use crate::cli::ConvertArgs;
use crate::exit;
use crate::suite::formats::{self, Format};

pub fn convert(args: &ConvertArgs) -> Result<i32, AppError> {
    let file = args.file.display();
    let text = std::fs::read_to_string(&args.file).map_err(|e| AppError::Usage(format!("cannot read {file}: {e}")))?;
    let doc: serde_json::Value =
        serde_yaml::from_str(&text).map_err(|e| AppError::Usage(format!("{file} is not JSON or YAML: {e}")))?;
    let format = match args.format.as_deref() {
        None => formats::detect(&doc),
        Some("openwop") => Format::OpenWop,
        Some(other) => return Err(AppError::Usage(format!("unknown format `{other}`; supported: openwop"))),
    };
    let suite = match format {
        Format::OpenWop => {
            let problems = formats::openwop::validate(&doc);
            if !problems.is_empty() {
                let list: Vec<String> = problems.iter().map(|(at, m)| format!("  {file}{at}: {m}")).collect();
                return Err(AppError::Usage(format!("invalid OpenWOP AgentEvalSuite:\n{}", list.join("\n"))));
            }
            formats::openwop::suite(&doc)
        }
        Format::Native => return Err(AppError::Usage(format!("{file} is already an evalgate suite"))),
        Format::Unknown => {
            return Err(AppError::Usage(format!("{file}: the format is not recognised; pass --format")));
        }
        other => {
            return Err(AppError::Usage(format!("{} files cannot be converted by this evalgate yet", other.name())));
        }
    };
    let yaml = serde_yaml::to_string(&suite).map_err(|e| AppError::Internal(e.to_string()))?;
    println!(
        "# Converted from {file} ({}) by evalgate convert.\n# OpenWOP does not say how to run the agent: point `agents.agent.command` at yours{}.\n{yaml}",
        format.name(),
        if suite.get("judge").is_some() { ", and set the `judge` model" } else { "" }
    );
    Ok(exit::SUCCESS)
}
