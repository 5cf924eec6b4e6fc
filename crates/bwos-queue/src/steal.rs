//! The outcome of a steal attempt.

/// The result of a steal attempt, named as in crossbeam-deque.
///
/// ```
/// use bwos_queue::{fifo, Config, Steal};
///
/// let (worker, stealer) = fifo::new::<u32>(Config::default());
/// assert!(stealer.steal().is_empty());
/// worker.push(7).unwrap();
/// assert_eq!(stealer.steal(), Steal::Success(7));
/// ```
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Steal<T> {
    /// The queue had nothing a thief could take.
    Empty,
    /// One item was stolen.
    Success(T),
    /// The attempt lost a race with another thief or with the owner; trying
    /// again may succeed.
    Retry,
}

impl<T> Steal<T> {
    /// `true` for [`Steal::Empty`].
    pub fn is_empty(&self) -> bool {
        matches!(self, Steal::Empty)
    }

    /// `true` for [`Steal::Success`].
    pub fn is_success(&self) -> bool {
        matches!(self, Steal::Success(_))
    }

    /// `true` for [`Steal::Retry`].
    pub fn is_retry(&self) -> bool {
        matches!(self, Steal::Retry)
    }

    /// The stolen item, if there was one.
    pub fn success(self) -> Option<T> {
        match self {
            Steal::Success(item) => Some(item),
            _ => None,
        }
    }
}
