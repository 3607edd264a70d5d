//! How many trials run at once. Trials whose system under test is a process on this
//! machine (command agents) are CPU-bound: one more than there are cores. Trials that wait on
//! a model or an MCP server are I/O-bound: the endpoint's limit (`llm/limiter.rs`) sets
//! their pace, so they get a lane of their own, not tied to the core count. `-j N` is
//! one limit for both.

use std::collections::VecDeque;

use crate::suite::model::Agent;

/// Trials of model- and MCP-bound tasks in flight when `-j` is not given: twice an
/// endpoint's default limit (32, `llm::spec::DEFAULT_MAX_CONCURRENCY`), so an agent's
/// endpoint stays full while some trials wait on a judge or a tool; far below the
/// open-file limit (`process::tasks_within_open_file_limit`), which caps it anyway.
pub const IO_JOBS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Cpu = 0,
    Io = 1,
}

impl Lane {
    pub fn of(agent: &Agent) -> Lane {
        match agent {
            Agent::Command(_) | Agent::Acp(_) => Lane::Cpu,
            Agent::Llm(_) | Agent::Http(_) | Agent::Call(_) => Lane::Io,
        }
    }
}

/// Trials in flight per lane, and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    pub cpu: usize,
    pub io: usize,
    pub total: usize,
}

impl Concurrency {
    /// `-j N`: at most N trials at once, whatever they wait on.
    pub fn jobs(n: usize) -> Self {
        let n = n.max(1);
        Concurrency { cpu: n, io: n, total: n }
    }

    /// The defaults: one command agent per core and one more, `IO_JOBS` model and MCP
    /// trials besides. The one more (as `make -j N+1`) is ready to run when an agent ends,
    /// so no core waits while evalgate grades it and starts the next: with one per core,
    /// 10,000 short agents on two cores took 1.3x as long, where `xargs` gains nothing
    /// from a third process.
    pub fn for_cores(cores: usize) -> Self {
        let cpu = cores.max(1) + 1;
        Concurrency { cpu, io: IO_JOBS, total: cpu + IO_JOBS }
    }

    /// At most `allowed` in all (the open-file limit).
    pub fn within(self, allowed: usize) -> Self {
        let allowed = allowed.max(1);
        Concurrency { cpu: self.cpu.min(allowed), io: self.io.min(allowed), total: self.total.min(allowed) }
    }
}

/// The trials waiting to start, per lane, in plan order, and those running.
pub struct Lanes {
    limits: Concurrency,
    waiting: [VecDeque<(usize, u32)>; 2],
    running: [usize; 2],
}

impl Lanes {
    pub fn new(limits: Concurrency) -> Self {
        Lanes { limits, waiting: [VecDeque::new(), VecDeque::new()], running: [0, 0] }
    }

    pub fn push_back(&mut self, lane: Lane, trial: (usize, u32)) {
        self.waiting[lane as usize].push_back(trial);
    }

    /// A retried trial goes first.
    pub fn push_front(&mut self, lane: Lane, trial: (usize, u32)) {
        self.waiting[lane as usize].push_front(trial);
    }

    /// The next trial to start, if a lane with one waiting has room; counted as running.
    pub fn start_next(&mut self) -> Option<(usize, u32)> {
        if self.running() >= self.limits.total {
            return None;
        }
        // I/O-bound trials first: starting one costs little, and they wait longest.
        for (lane, limit) in [(Lane::Io, self.limits.io), (Lane::Cpu, self.limits.cpu)] {
            let i = lane as usize;
            if self.running[i] < limit
                && let Some(trial) = self.waiting[i].pop_front()
            {
                self.running[i] += 1;
                return Some(trial);
            }
        }
        None
    }

    /// A trial of `lane` ended.
    pub fn finished(&mut self, lane: Lane) {
        self.running[lane as usize] -= 1;
    }

    pub fn running(&self) -> usize {
        self.running[0] + self.running[1]
    }

    pub fn is_idle(&self) -> bool {
        self.running() == 0 && self.waiting.iter().all(VecDeque::is_empty)
    }

    /// Every trial still waiting, which will not start.
    pub fn drain(&mut self) -> Vec<(usize, u32)> {
        self.waiting.iter_mut().flat_map(|w| w.drain(..)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(lanes: &mut Lanes) -> Vec<(usize, u32)> {
        std::iter::from_fn(|| lanes.start_next()).collect()
    }

    #[test]
    fn each_lane_has_its_own_limit_and_a_finished_trial_makes_room_in_its_lane() {
        let mut lanes = Lanes::new(Concurrency::for_cores(2));
        for i in 0..5 {
            lanes.push_back(Lane::Cpu, (i, 0));
        }
        for i in 5..85 {
            lanes.push_back(Lane::Io, (i, 0));
        }
        let first = started(&mut lanes);
        assert_eq!(first.len(), 3 + IO_JOBS);
        assert_eq!(first.iter().filter(|(i, _)| *i < 5).count(), 3, "three command agents on two cores");
        lanes.finished(Lane::Io);
        assert_eq!(started(&mut lanes), [(5 + IO_JOBS, 0)]);
        lanes.finished(Lane::Cpu);
        lanes.push_front(Lane::Cpu, (0, 1));
        assert_eq!(started(&mut lanes), [(0, 1)], "a retry goes first");
        assert_eq!(lanes.drain().len(), 2 + (80 - IO_JOBS - 1));
        assert!(!lanes.is_idle());
    }

    #[test]
    fn jobs_is_one_limit_for_both_lanes() {
        let mut lanes = Lanes::new(Concurrency::jobs(3));
        for i in 0..4 {
            lanes.push_back(Lane::Io, (i, 0));
            lanes.push_back(Lane::Cpu, (10 + i, 0));
        }
        assert_eq!(started(&mut lanes).len(), 3);
        assert_eq!(Concurrency::for_cores(8).within(20), Concurrency { cpu: 9, io: 20, total: 20 });
    }
}
