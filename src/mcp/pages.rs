//! A paginated list's guard (`tools/list`, `evals/list`): a cursor seen before (a loop), or
//! more pages or bytes than a list may have (an endless one), ends the list with an error,
//! never with a run that grows until it is killed.

use std::collections::HashSet;

/// The most pages of one list: a large server lists hundreds of tools in a few pages.
pub const MAX_PAGES: usize = 1000;
/// The most bytes of one list, all pages together.
pub const MAX_BYTES: usize = 64 << 20;

pub struct Pages {
    method: &'static str,
    seen: HashSet<String>,
    pages: usize,
    bytes: usize,
}

impl Pages {
    pub fn new(method: &'static str) -> Self {
        Pages { method, seen: HashSet::new(), pages: 0, bytes: 0 }
    }

    /// Counts a page of `bytes` whose next cursor is `cursor`: `Ok(Some)` is the cursor of
    /// the next page to ask for, `Ok(None)` the end of the list.
    pub fn next(&mut self, bytes: usize, cursor: Option<String>) -> Result<Option<String>, String> {
        self.pages += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        let Some(cursor) = cursor else { return Ok(None) };
        let method = self.method;
        if !self.seen.insert(cursor.clone()) {
            let cursor = crate::excerpt::excerpt(&cursor, 80);
            return Err(format!("`{method}` returned the cursor `{cursor}` twice"));
        }
        if self.pages >= MAX_PAGES || self.bytes > MAX_BYTES {
            return Err(format!(
                "`{method}` did not end: {} pages ({} MiB) and another cursor, past the most evalgate reads of a list \
                 ({MAX_PAGES} pages, {} MiB)",
                self.pages,
                self.bytes >> 20,
                MAX_BYTES >> 20
            ));
        }
        Ok(Some(cursor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_cursor_or_an_endless_list_is_an_error() {
        let mut pages = Pages::new("tools/list");
        assert_eq!(pages.next(10, Some("a".into())), Ok(Some("a".into())));
        assert_eq!(pages.next(10, Some("b".into())), Ok(Some("b".into())));
        assert_eq!(pages.next(10, Some("a".into())), Err("`tools/list` returned the cursor `a` twice".into()));
        let mut pages = Pages::new("tools/list");
        let ended = (0..).find_map(|i| pages.next(0, Some(format!("c{i}"))).err().map(|e| (i, e)));
        let (at, error) = ended.unwrap();
        assert_eq!(at, MAX_PAGES - 1);
        assert!(error.starts_with("`tools/list` did not end: 1000 pages (0 MiB)"), "{error}");
        let mut pages = Pages::new("evals/list");
        assert!(pages.next(MAX_BYTES + 1, Some("x".into())).is_err());
        assert_eq!(Pages::new("evals/list").next(MAX_BYTES + 1, None), Ok(None));
    }
}
