//! The stack-limit probe: where the calling thread's stack ends, as the
//! lowest address a `fork` poll on it may reach before it moves to a fresh
//! segment. Each worker keeps that limit
//! ([`WorkerThread::stack_limit`](super::worker::WorkerThread::stack_limit)),
//! set from here when the worker starts; growing the stack is `stack.rs`'s.

/// Stack left before a fork moves to a fresh stack segment.
pub(crate) const STACK_RED_ZONE: usize = 128 * 1024;

/// The stack address below which a fork on the calling thread moves to a
/// fresh segment; `usize::MAX` where the thread's stack bounds are unknown
/// (every fork then asks `stacker`), zero under Miri (which cannot switch
/// stacks).
pub(crate) fn stack_limit_here() -> usize {
    if cfg!(miri) {
        return 0;
    }
    match stacker::remaining_stack() {
        Some(remaining) => stack_address().saturating_sub(remaining) + STACK_RED_ZONE,
        None => usize::MAX,
    }
}

/// Where the stack is now: the stack pointer, read in one instruction (a
/// local's address through `black_box` cost a stack slot, a store and
/// more instructions per fork: `docs/benchmarks.md`).
#[inline(always)]
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
pub(crate) fn stack_address() -> usize {
    let pointer: usize;
    // SAFETY: copies the stack pointer into a register: no memory access,
    // no stack use, no flags changed.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::asm!("mov {}, rsp", out(reg) pointer, options(nomem, nostack, preserves_flags));
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("mov {}, sp", out(reg) pointer, options(nomem, nostack, preserves_flags));
    }
    pointer
}

/// Where the stack is now: the address of a local in the caller's frame.
#[inline(always)]
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
pub(crate) fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&raw const marker) as usize
}
