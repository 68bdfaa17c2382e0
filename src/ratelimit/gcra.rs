//! The generic cell rate algorithm: one number per bucket, the theoretical arrival time (TAT)
//! of the next conforming call, in microseconds.
//!
//! A call at `now` conforms when `max(tat, now) - now <= tolerance` and then moves the TAT one
//! `interval` on; `interval = period / count` and `tolerance = (burst - 1) * interval`, so after
//! a quiet period `burst` calls pass at once and then one per `interval`. A bucket whose TAT is
//! in the past is the same as no bucket, which is what lets stores forget them freely.
//!
//! Owns only the arithmetic, shared by the process-local store and (as Lua) the Redis script.

/// What one bucket says about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The call conforms; store this TAT.
    Allow {
        /// The bucket's new TAT.
        tat: u64,
    },
    /// The call does not conform; it would in `retry_after_us`.
    Deny {
        /// Microseconds until a call would conform.
        retry_after_us: u64,
    },
}

/// The shape of a bucket: its emission interval and burst tolerance, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Microseconds between calls at the sustained rate (at least 1).
    pub interval_us: u64,
    /// Microseconds of credit a quiet bucket holds: `(burst - 1) * interval`.
    pub tolerance_us: u64,
}

impl Shape {
    /// `count` calls per `period_us`, `burst` at once.
    pub(crate) fn new(count: u32, period_us: u64, burst: u32) -> Shape {
        let interval_us = (period_us / u64::from(count.max(1))).max(1);
        Shape {
            interval_us,
            tolerance_us: interval_us.saturating_mul(u64::from(burst.max(1) - 1)),
        }
    }

    /// The decision for a call at `now` on a bucket whose stored TAT is `tat` (`None`: fresh).
    pub(crate) fn decide(self, tat: Option<u64>, now: u64) -> Decision {
        let tat = tat.unwrap_or(now).max(now);
        let ahead = tat - now;
        if ahead > self.tolerance_us {
            Decision::Deny {
                retry_after_us: ahead - self.tolerance_us,
            }
        } else {
            Decision::Allow {
                tat: tat.saturating_add(self.interval_us),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs calls at the given microsecond instants on one bucket; true for each that passed.
    fn run(shape: Shape, at: &[u64]) -> Vec<bool> {
        let mut tat = None;
        at.iter()
            .map(|&now| match shape.decide(tat, now) {
                Decision::Allow { tat: next } => {
                    tat = Some(next);
                    true
                }
                Decision::Deny { .. } => false,
            })
            .collect()
    }

    #[test]
    fn a_burst_passes_at_once_then_one_per_interval() {
        // 10 per second, burst 3: interval 100 ms.
        let shape = Shape::new(10, 1_000_000, 3);
        assert_eq!(shape.interval_us, 100_000);
        assert_eq!(shape.tolerance_us, 200_000);
        assert_eq!(run(shape, &[0, 0, 0, 0]), [true, true, true, false]);
        // After the burst, the next call conforms one interval after the first.
        assert_eq!(
            run(shape, &[0, 0, 0, 99_999, 100_000]),
            [true, true, true, false, true]
        );
        // A quiet bucket refills to the burst, never beyond.
        assert_eq!(
            run(shape, &[0, 10_000_000, 10_000_000, 10_000_000, 10_000_000]),
            [true, true, true, true, false]
        );
    }

    #[test]
    fn a_refusal_says_when_the_next_call_would_pass() {
        let shape = Shape::new(2, 1_000_000, 1);
        let Decision::Allow { tat } = shape.decide(None, 1_000) else {
            panic!("a fresh bucket allows");
        };
        assert_eq!(
            shape.decide(Some(tat), 1_000),
            Decision::Deny {
                retry_after_us: 500_000
            }
        );
        assert_eq!(
            shape.decide(Some(tat), 400_000),
            Decision::Deny {
                retry_after_us: 101_000
            }
        );
        assert!(matches!(
            shape.decide(Some(tat), 501_000),
            Decision::Allow { .. }
        ));
    }

    #[test]
    fn over_any_window_no_more_than_burst_plus_rate_pass() {
        // Property over a dense schedule: in any window of length w, at most
        // burst + w / interval calls pass.
        let shape = Shape::new(50, 1_000_000, 5);
        let at: Vec<u64> = (0..20_000).map(|i| i * 137).collect();
        let passed: Vec<u64> = at
            .iter()
            .zip(run(shape, &at))
            .filter_map(|(&t, ok)| ok.then_some(t))
            .collect();
        for (i, &start) in passed.iter().enumerate() {
            let window = 1_000_000;
            let n = passed[i..]
                .iter()
                .take_while(|&&t| t < start + window)
                .count() as u64;
            assert!(
                n <= 5 + window / shape.interval_us,
                "{n} in a window from {start}"
            );
        }
    }
}
