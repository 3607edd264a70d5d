//! `evalgate schema`: the JSON Schema of the native suite format, for editors, or with
//! `--results` that of `results.json`, which every command reading one checks it against.

use crate::cli::SchemaArgs;
use crate::error::Error;
use crate::exit;

pub fn schema(args: &SchemaArgs) -> Result<i32, Error> {
    let schema = if args.results { crate::results::validate::schema() } else { crate::suite::raw::schema() };
    let text = serde_json::to_string_pretty(&schema).map_err(|e| Error::Internal(e.to_string()))?;
    crate::outln!("{text}");
    Ok(exit::SUCCESS)
}
