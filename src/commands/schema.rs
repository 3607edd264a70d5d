//! `evalgate schema`: the JSON Schema of the native suite format, for editors.

use crate::error::Error;
use crate::exit;

pub fn schema() -> Result<i32, Error> {
    let schema = crate::suite::raw::schema();
    let text = serde_json::to_string_pretty(&schema).map_err(|e| Error::Internal(e.to_string()))?;
    crate::outln!("{text}");
    Ok(exit::SUCCESS)
}
