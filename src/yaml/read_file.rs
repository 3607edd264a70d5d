//! Reading a file the YAML parser will parse: through the one reader (`files::read`, its
//! `TEXT` limit), and text that is not UTF-8 (a binary file, UTF-16, a stray byte) refused
//! with the line and column where it stops being UTF-8, before the parser sees it.

use std::fmt;
use std::path::Path;

use super::{Position, SyntaxError};
use crate::files::read::TEXT;

/// Files larger than this are refused unread: a suite is a few hundred kilobytes, and the
/// parser's time and memory grow with the file.
pub const MAX_FILE_BYTES: u64 = TEXT.max;

/// Why a file could not be read as YAML text.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// It was read, but it is not UTF-8 text (or is too large): located in the file.
    Text(SyntaxError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Text(e) => e.fmt(f),
        }
    }
}

/// The text of the file at `path`, at most [`MAX_FILE_BYTES`] long, without a UTF-8
/// byte-order mark.
pub fn read(path: &Path) -> Result<String, ReadError> {
    let bytes = crate::files::read::bytes(path, TEXT).map_err(ReadError::Io)?;
    decode(bytes).map_err(ReadError::Text)
}

/// `bytes` as text, or why it is not text a YAML file may hold, and where.
pub fn decode(mut bytes: Vec<u8>) -> Result<String, SyntaxError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let message =
            format!("the file is larger than {} MiB, the limit for a file evalgate reads", MAX_FILE_BYTES >> 20);
        return Err(SyntaxError { message, position: Some(Position { line: 1, column: 1 }) });
    }
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) || bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
        let message = "the file is UTF-16 or UTF-32 (it starts with that byte-order mark); save it as UTF-8";
        return Err(SyntaxError { message: message.into(), position: Some(Position { line: 1, column: 1 }) });
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    let valid = match std::str::from_utf8(&bytes) {
        Ok(_) => bytes.len(),
        Err(e) => e.valid_up_to(),
    };
    if let Some(nul) = bytes[..valid].iter().position(|&b| b == 0) {
        let message = "a NUL byte: this is a binary file (or UTF-16), not UTF-8 text";
        return Err(SyntaxError { message: message.into(), position: Some(position_of(&bytes[..nul])) });
    }
    if valid < bytes.len() {
        let message = format!("byte 0x{:02X} is not UTF-8; save the file as UTF-8", bytes[valid]);
        return Err(SyntaxError { message, position: Some(position_of(&bytes[..valid])) });
    }
    Ok(String::from_utf8(bytes).expect("checked to be UTF-8"))
}

/// The position just after `before`, valid UTF-8 text: lines and columns counted in characters.
fn position_of(before: &[u8]) -> Position {
    let text = std::str::from_utf8(before).unwrap_or_default();
    let line_start = text.rfind('\n').map_or(0, |i| i + 1);
    Position { line: text.matches('\n').count() + 1, column: text[line_start..].chars().count() + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(e: &SyntaxError) -> (usize, usize) {
        let p = e.position.expect("located");
        (p.line, p.column)
    }

    #[test]
    fn text_that_is_not_utf8_is_located() {
        let e = decode(b"a: 1\nb: \xC3\xA9\xFF\n".to_vec()).unwrap_err();
        assert_eq!((at(&e), e.message.as_str()), ((2, 5), "byte 0xFF is not UTF-8; save the file as UTF-8"));
        let e = decode(b"a: 1\n  b\0".to_vec()).unwrap_err();
        assert_eq!(at(&e), (2, 4));
        assert!(e.message.contains("binary"), "{}", e.message);
        let e = decode(b"\xFF\xFEa\0:\0".to_vec()).unwrap_err();
        assert_eq!(at(&e), (1, 1));
        assert!(e.message.contains("UTF-16"), "{}", e.message);
    }

    #[test]
    fn a_utf8_bom_is_dropped_and_a_large_file_refused() {
        assert_eq!(decode(b"\xEF\xBB\xBFa: 1\r\n".to_vec()).unwrap(), "a: 1\r\n");
        let e = decode(vec![b' '; MAX_FILE_BYTES as usize + 1]).unwrap_err();
        assert!(e.message.contains("larger than 8 MiB"), "{}", e.message);
    }
}
