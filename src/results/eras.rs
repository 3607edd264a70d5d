//! Per protocol era: how the tasks of a server with a protocol list did at each version
//! ("`fx` passes on 2025-11-25; fails on 2026-07-28: …").

use super::run_results::{Results, Status};

/// One server's tasks at one protocol version.
#[derive(Debug, Clone, PartialEq)]
pub struct Era {
    pub server: String,
    pub version: String,
    pub tasks: usize,
    pub passed: usize,
    /// Why the server did not start at it, or the first task that did not pass and why.
    pub first_failure: Option<String>,
}

impl Era {
    pub fn passes(&self) -> bool {
        self.passed == self.tasks && self.first_failure.is_none()
    }
}

/// The eras of the run, by server and version (oldest first); empty when no server has a
/// protocol list.
pub fn eras(results: &Results) -> Vec<Era> {
    let mut eras: Vec<Era> = Vec::new();
    for task in &results.tasks {
        let Some(at) = &task.protocol else { continue };
        let i = eras.iter().position(|e| e.server == at.server && e.version == at.version).unwrap_or_else(|| {
            let era = Era {
                server: at.server.clone(),
                version: at.version.clone(),
                tasks: 0,
                passed: 0,
                first_failure: None,
            };
            eras.push(era);
            eras.len() - 1
        });
        let era = &mut eras[i];
        era.tasks += 1;
        if task.status == Status::Passed {
            era.passed += 1;
        } else if era.first_failure.is_none() && task.status != Status::Skipped {
            era.first_failure =
                Some(format!("`{}`: {}", task.id, task.reason.as_deref().unwrap_or(task.status.label())));
        }
    }
    for era in &mut eras {
        let info = results.mcp_servers.get(&format!("{}@{}", era.server, era.version));
        if let Some(error) = info.and_then(|i| i.error.as_ref()) {
            era.first_failure = Some(format!("did not start at it: {error}"));
        }
    }
    eras.sort_by(|a, b| (&a.server, &a.version).cmp(&(&b.server, &b.version)));
    eras
}

/// "`fx` passes on 2025-11-25; fails on 2026-07-28 (1/2 passed): …", one line per server.
pub fn lines(eras: &[Era]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for (i, e) in eras.iter().enumerate() {
        let clause = match &e.first_failure {
            None if e.passes() => format!("passes on {}", e.version),
            None => format!("does not finish on {} ({}/{} passed)", e.version, e.passed, e.tasks),
            Some(why) => format!("fails on {} ({}/{} passed): {why}", e.version, e.passed, e.tasks),
        };
        match lines.last_mut() {
            Some(line) if i > 0 && eras[i - 1].server == e.server => {
                line.push_str("; ");
                line.push_str(&clause);
            }
            _ => lines.push(format!("`{}` {clause}", e.server)),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::protocol::TaskEra;
    use crate::results::testing::{results, task};

    #[test]
    fn each_era_says_whether_its_tasks_pass_and_the_first_failure() {
        let mut tasks = Vec::new();
        for (id, server, version, status) in [
            ("echo@2026-07-28", "fx", "2026-07-28", Status::Passed),
            ("add@2026-07-28", "fx", "2026-07-28", Status::Failed),
            ("echo@2025-11-25", "fx", "2025-11-25", Status::Passed),
            ("add@2025-11-25", "fx", "2025-11-25", Status::Passed),
            ("ping@2025-03-26", "ev", "2025-03-26", Status::Passed),
            ("plain", "", "", Status::Passed),
        ] {
            let mut t = task(id, status);
            t.protocol = (!server.is_empty()).then(|| TaskEra { server: server.into(), version: version.into() });
            t.reason = (status == Status::Failed).then(|| "expected 42".into());
            tasks.push(t);
        }
        let mut results = results(tasks);
        let eras = eras(&results);
        assert_eq!(eras.len(), 3);
        assert_eq!(
            lines(&eras),
            [
                "`ev` passes on 2025-03-26",
                "`fx` passes on 2025-11-25; fails on 2026-07-28 (1/2 passed): `add@2026-07-28`: expected 42"
            ]
        );
        // An era the server did not start at says so, whatever its tasks' reasons.
        results.mcp_servers.insert(
            "ev@2025-03-26".into(),
            crate::mcp::session::ServerInfo { error: Some("no handshake".into()), ..Default::default() },
        );
        assert_eq!(
            lines(&super::eras(&results))[0],
            "`ev` fails on 2025-03-26 (1/1 passed): did not start at it: no handshake"
        );
    }
}
