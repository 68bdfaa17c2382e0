//! The process-wide budget of downstream answer bytes held at once.
//!
//! Owns [`AnswerBudget`] (a byte counter with a ceiling, shared behind an `Arc` by the tool
//! client in `client.rs` and the federation's provider client) and [`AnswerReservation`], the
//! guard a body read holds: it reserves bytes as the answer is read (the declared
//! `Content-Length` at once when there is one, otherwise in growing steps as frames arrive) and
//! gives them back when it is dropped with the answer buffer. A reservation that would take the
//! counter past the ceiling fails at once ([`OverBudget`]): the call fails fast instead of the
//! process growing. Must not read bodies or know HTTP: callers tell it how many bytes they hold.
//!
//! Cost: one compare-and-swap when the reservation is taken (two or a few more for an answer of
//! unknown length, which grows by doubling) and one atomic subtraction when it drops; no lock,
//! no allocation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Default `downstream_answer_budget_bytes`: downstream answer bytes (tool responses and
/// provider pages) held at once by the whole process. An answer that would take the total past
/// it fails at once: a tool call with 503 on REST or an `isError` result in MCP ("server busy"),
/// a federated source with `source_unavailable` (reason `answer_budget`).
pub(crate) const DEFAULT_ANSWER_BUDGET_BYTES: usize = 256 * 1024 * 1024;

/// The smallest step an answer of unknown length grows its reservation by.
const MIN_GROWTH: usize = 64 * 1024;

/// Reserving these bytes would take the process past its answer budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("downstream answer budget of {budget} bytes exhausted")]
pub struct OverBudget {
    /// The budget in bytes.
    pub budget: usize,
}

/// Bytes of downstream answers held now, and the ceiling.
#[derive(Debug)]
pub(crate) struct AnswerBudget {
    /// The ceiling; 0 is read as "no budget" (every reservation succeeds).
    limit: usize,
    /// Bytes reserved by live [`AnswerReservation`]s; never above `limit`.
    held: AtomicUsize,
}

impl AnswerBudget {
    /// A budget of `limit` bytes (`0`: unlimited).
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
        })
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Starts a reservation of `bytes` (e.g. the declared `Content-Length`; 0 when unknown).
    pub(crate) fn reserve(self: &Arc<Self>, bytes: usize) -> Result<AnswerReservation, OverBudget> {
        let mut reservation = AnswerReservation {
            budget: Arc::clone(self),
            bytes: 0,
        };
        if bytes > 0 {
            reservation.take(bytes)?;
        }
        Ok(reservation)
    }

    fn try_add(&self, bytes: usize) -> Result<(), OverBudget> {
        if self.limit == 0 {
            return Ok(());
        }
        let limit = self.limit;
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&total| total <= limit)
            })
            .map(drop)
            .map_err(|_| OverBudget { budget: limit })
    }
}

/// Bytes of one answer counted against the [`AnswerBudget`]; given back on drop.
#[derive(Debug)]
pub struct AnswerReservation {
    budget: Arc<AnswerBudget>,
    /// Bytes this reservation counts (at least what the answer holds).
    bytes: usize,
}

impl AnswerReservation {
    /// Makes sure at least `total` bytes are reserved (an answer of unknown length calls this
    /// as it grows): grows by doubling (at least [`MIN_GROWTH`]), never past `cap` (the
    /// per-answer size limit), so a long body costs a handful of atomic operations.
    pub fn ensure(&mut self, total: usize, cap: usize) -> Result<(), OverBudget> {
        if total <= self.bytes {
            return Ok(());
        }
        let target = total
            .max(self.bytes.saturating_mul(2))
            .max(MIN_GROWTH)
            .min(cap.max(total));
        self.take(target - self.bytes)
    }

    /// Bytes reserved now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn take(&mut self, more: usize) -> Result<(), OverBudget> {
        self.budget.try_add(more)?;
        self.bytes += more;
        Ok(())
    }
}

impl Drop for AnswerReservation {
    fn drop(&mut self) {
        if self.bytes > 0 && self.budget.limit > 0 {
            self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_bounded_and_given_back() {
        let budget = AnswerBudget::new(1000);
        let a = budget.reserve(600).unwrap();
        assert_eq!(budget.held(), 600);
        assert_eq!(
            budget.reserve(401).unwrap_err(),
            OverBudget { budget: 1000 }
        );
        assert_eq!(budget.held(), 600, "a refused reservation holds nothing");
        let b = budget.reserve(400).unwrap();
        assert_eq!(budget.held(), 1000);
        drop(a);
        assert_eq!(budget.held(), 400);
        drop(b);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn unknown_lengths_grow_by_doubling_up_to_the_cap() {
        let budget = AnswerBudget::new(1 << 20);
        let mut r = budget.reserve(0).unwrap();
        assert_eq!(budget.held(), 0);
        r.ensure(10, 300_000).unwrap();
        assert_eq!(r.bytes(), MIN_GROWTH);
        r.ensure(MIN_GROWTH, 300_000).unwrap();
        assert_eq!(
            r.bytes(),
            MIN_GROWTH,
            "within the reservation: no atomic operation"
        );
        r.ensure(MIN_GROWTH + 1, 300_000).unwrap();
        assert_eq!(r.bytes(), 2 * MIN_GROWTH);
        r.ensure(250_000, 300_000).unwrap();
        assert_eq!(r.bytes(), 262_144);
        r.ensure(262_145, 300_000).unwrap();
        assert_eq!(r.bytes(), 300_000, "never past the per-answer cap");
        assert_eq!(budget.held(), 300_000);
        let mut other = budget.reserve(0).unwrap();
        assert!(other.ensure(800_000, 900_000).is_err());
        drop(r);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn zero_is_unlimited() {
        let budget = AnswerBudget::new(0);
        let _r = budget.reserve(usize::MAX / 2).unwrap();
        let _s = budget.reserve(usize::MAX / 2).unwrap();
        assert_eq!(budget.held(), 0);
    }
}
