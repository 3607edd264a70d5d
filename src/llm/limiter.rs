//! How many requests one endpoint gets at once, adapted to what it answers (AIMD): the
//! limit starts at `max_concurrency`, halves on 429/503/529 (at most once a second), grows
//! back by one per window of successful calls, and new requests wait while the provider's
//! rate-limit headers say its budget is (nearly) spent. A caller holds a slot only while a
//! request is on the wire: waiting to retry holds none.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::rate_limits::RateLimits;

/// A decrease is a reaction to one overload: the answers to requests already on the
/// wire when it happened do not halve the limit again.
const DECREASE_COOLDOWN: Duration = Duration::from_secs(1);

pub struct EndpointLimiter {
    ceiling: usize,
    state: Mutex<State>,
    changed: Notify,
}

struct State {
    /// The current limit, fractional so successes can grow it by `1/limit` each.
    limit: f64,
    in_flight: usize,
    last_decrease: Option<Instant>,
    /// No request starts before this (the provider's budget is spent until its reset).
    paused_until: Option<Instant>,
}

/// Permission for one request on the wire; released when dropped.
pub struct Slot<'a> {
    limiter: &'a EndpointLimiter,
}

impl EndpointLimiter {
    /// `ceiling`: the most requests in flight at once (`max_concurrency`), and the start.
    pub fn new(ceiling: usize) -> Self {
        let ceiling = ceiling.max(1);
        EndpointLimiter {
            ceiling,
            state: Mutex::new(State { limit: ceiling as f64, in_flight: 0, last_decrease: None, paused_until: None }),
            changed: Notify::new(),
        }
    }

    /// Requests allowed in flight now.
    pub fn limit(&self) -> usize {
        self.lock().limit as usize
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for a slot: below the limit and outside a pause.
    pub async fn acquire(&self) -> Slot<'_> {
        loop {
            // Registered before the state is read, so a release in between is not missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let paused_until = {
                let mut state = self.lock();
                match state.paused_until {
                    Some(until) if until > Instant::now() => Some(until),
                    _ => {
                        state.paused_until = None;
                        if state.in_flight < state.limit as usize {
                            state.in_flight += 1;
                            return Slot { limiter: self };
                        }
                        None
                    }
                }
            };
            match paused_until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => changed.await,
            }
        }
    }
}

impl Slot<'_> {
    /// What the endpoint answered to this slot's request: its status and rate-limit headers.
    pub fn observe(&self, status: u16, limits: &RateLimits) {
        let limiter = self.limiter;
        let now = Instant::now();
        let mut state = limiter.lock();
        if (200..300).contains(&status) {
            state.limit = (state.limit + 1.0 / state.limit).min(limiter.ceiling as f64);
        } else if matches!(status, 429 | 503 | 529)
            && state.last_decrease.is_none_or(|at| now.duration_since(at) >= DECREASE_COOLDOWN)
        {
            state.limit = (state.limit / 2.0).max(1.0);
            state.last_decrease = Some(now);
        }
        // The requests in flight besides this one will spend the budget too.
        if let Some(wait) = limits.wait_before_next(state.in_flight.saturating_sub(1)) {
            let until = now + wait;
            state.paused_until = Some(state.paused_until.map_or(until, |p| p.max(until)));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limiter.lock().in_flight -= 1;
        self.limiter.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::rate_limits::Budget;

    async fn blocked(limiter: &EndpointLimiter) -> bool {
        tokio::time::timeout(Duration::from_millis(1), limiter.acquire()).await.is_err()
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_the_limit_is_in_flight_and_a_release_lets_the_next_in() {
        let limiter = EndpointLimiter::new(2);
        let a = limiter.acquire().await;
        let _b = limiter.acquire().await;
        assert!(blocked(&limiter).await);
        // A request already waiting is woken by the release.
        let started = Instant::now();
        let waiter = async {
            let _slot = limiter.acquire().await;
            started.elapsed()
        };
        let release = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(a);
        };
        let (waited, ()) = tokio::time::timeout(Duration::from_secs(1), async { tokio::join!(waiter, release) })
            .await
            .expect("the waiting request was never let in");
        assert_eq!(waited, Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn overload_halves_the_limit_once_per_cooldown_and_successes_grow_it_back() {
        let limiter = EndpointLimiter::new(16);
        let none = RateLimits::default();
        let slot = limiter.acquire().await;
        slot.observe(429, &none);
        assert_eq!(limiter.limit(), 8);
        // The other answers of the same burst do not halve it again…
        slot.observe(503, &none);
        slot.observe(429, &none);
        assert_eq!(limiter.limit(), 8);
        // …a later overload does.
        tokio::time::advance(DECREASE_COOLDOWN).await;
        slot.observe(529, &none);
        assert_eq!(limiter.limit(), 4);
        // Other errors are not a signal about load.
        tokio::time::advance(DECREASE_COOLDOWN).await;
        slot.observe(500, &none);
        slot.observe(400, &none);
        assert_eq!(limiter.limit(), 4);
        // Additive increase: about one more per window of successes, never above the ceiling.
        for _ in 0..4 {
            slot.observe(200, &none);
        }
        assert_eq!(limiter.limit(), 4, "4.93 after four");
        slot.observe(200, &none);
        assert_eq!(limiter.limit(), 5);
        for _ in 0..1000 {
            slot.observe(200, &none);
        }
        assert_eq!(limiter.limit(), 16);
        tokio::time::advance(DECREASE_COOLDOWN).await;
        for _ in 0..10 {
            slot.observe(429, &none);
            tokio::time::advance(DECREASE_COOLDOWN).await;
        }
        assert_eq!(limiter.limit(), 1, "never below one");
    }

    #[tokio::test(start_paused = true)]
    async fn a_halved_limit_holds_back_new_requests() {
        let limiter = EndpointLimiter::new(4);
        let slots: Vec<Slot<'_>> = vec![limiter.acquire().await, limiter.acquire().await];
        slots[0].observe(429, &RateLimits::default());
        assert_eq!(limiter.limit(), 2);
        assert!(blocked(&limiter).await, "two in flight, limit two");
        drop(slots);
        assert!(!blocked(&limiter).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_spent_budget_pauses_new_requests_until_its_reset() {
        let limiter = EndpointLimiter::new(8);
        let started = Instant::now();
        let spent = RateLimits {
            requests: Some(Budget { limit: Some(100), remaining: 0, reset: Some(Duration::from_secs(3)) }),
            tokens: None,
        };
        limiter.acquire().await.observe(200, &spent);
        let slot = limiter.acquire().await;
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        // With budget left for the requests in flight, nothing waits.
        let plenty = RateLimits {
            requests: Some(Budget { limit: Some(100), remaining: 50, reset: Some(Duration::from_secs(3)) }),
            tokens: None,
        };
        slot.observe(200, &plenty);
        let before = Instant::now();
        let _other = limiter.acquire().await;
        assert_eq!(before.elapsed(), Duration::ZERO);
    }
}
