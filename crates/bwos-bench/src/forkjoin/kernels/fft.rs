//! Radix-2 fast Fourier transform (the Cilk benchmark's recursive
//! decimation in time): the even and odd halves are transformed in
//! parallel, then combined with butterflies that are themselves split in
//! halves with joins.

use std::f64::consts::PI;

use super::{Kernel, SplitMix, digest_f64_iter};
use crate::forkjoin::asyncfork::AsyncFork;
use crate::forkjoin::runtime::ForkJoin;

/// A complex number.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Complex {
    pub re: f64,
    pub im: f64,
}

impl Complex {
    fn add(self, other: Complex) -> Complex {
        Complex {
            re: self.re + other.re,
            im: self.im + other.im,
        }
    }

    fn sub(self, other: Complex) -> Complex {
        Complex {
            re: self.re - other.re,
            im: self.im - other.im,
        }
    }

    fn mul(self, other: Complex) -> Complex {
        Complex {
            re: self.re * other.re - self.im * other.im,
            im: self.re * other.im + self.im * other.re,
        }
    }
}

/// Transforms `input` (a power-of-two length) into a fresh output.
pub struct Fft {
    pub input: Vec<Complex>,
    /// `twiddles[k] = e^(-2πik/N)` for `k < N/2`.
    twiddles: Vec<Complex>,
}

/// Transforms of at most this many points run without joins.
const SERIAL_CUT_OFF: usize = 1024;
/// Butterfly loops of at most this many pairs run without joins.
const BUTTERFLY_LEAF: usize = 2048;

impl Fft {
    /// A random input of `len` points (a power of two, seeded).
    pub fn random(len: usize, seed: u64) -> Fft {
        assert!(
            len.is_power_of_two(),
            "the FFT length must be a power of two"
        );
        let mut rng = SplitMix(seed);
        let input = (0..len)
            .map(|_| Complex {
                re: rng.unit() - 0.5,
                im: rng.unit() - 0.5,
            })
            .collect();
        let twiddles = (0..len / 2)
            .map(|k| {
                let angle = -2.0 * PI * k as f64 / len as f64;
                Complex {
                    re: angle.cos(),
                    im: angle.sin(),
                }
            })
            .collect();
        Fft { input, twiddles }
    }

    /// The discrete Fourier transform by its definition, O(n²), to check
    /// the kernel in tests.
    #[cfg(test)]
    pub fn naive(&self) -> Vec<Complex> {
        let n = self.input.len();
        (0..n)
            .map(|k| {
                self.input
                    .iter()
                    .enumerate()
                    .fold(Complex::default(), |sum, (j, &x)| {
                        sum.add(x.mul(self.twiddle(j * k % n)))
                    })
            })
            .collect()
    }

    /// `e^(-2πik/N)` for any `k < N`.
    #[cfg(test)]
    fn twiddle(&self, k: usize) -> Complex {
        let half = self.twiddles.len();
        if k < half {
            self.twiddles[k]
        } else {
            let w = self.twiddles[k - half];
            Complex {
                re: -w.re,
                im: -w.im,
            }
        }
    }
}

impl Kernel for Fft {
    type Scratch = Vec<Complex>;

    fn scratch(&self) -> Vec<Complex> {
        vec![Complex::default(); self.input.len()]
    }

    fn run<R: ForkJoin>(&self, out: &mut Vec<Complex>, ctx: &mut R::Ctx<'_>) -> u64 {
        fft::<R>(&self.input, 1, out, &self.twiddles, ctx);
        digest_f64_iter(out.iter().flat_map(|c| [c.re, c.im]))
    }

    fn run_async<'a, A: AsyncFork>(&'a self, out: &'a mut Vec<Complex>) -> A::Boxed<'a, u64> {
        A::boxed_with(move || async move {
            fft_async::<A>(&self.input, 1, out, &self.twiddles).await;
            digest_f64_iter(out.iter().flat_map(|c| [c.re, c.im]))
        })
    }
}

/// Transforms the points `input[0], input[stride], ...` into `out`.
/// `stride` is also the twiddle step: `N / out.len()`.
fn fft<R: ForkJoin>(
    input: &[Complex],
    stride: usize,
    out: &mut [Complex],
    twiddles: &[Complex],
    ctx: &mut R::Ctx<'_>,
) {
    let n = out.len();
    if n <= SERIAL_CUT_OFF {
        fft_serial(input, stride, out, twiddles);
        return;
    }
    let (even, odd) = out.split_at_mut(n / 2);
    R::join(
        ctx,
        |ctx| fft::<R>(input, 2 * stride, even, twiddles, ctx),
        |ctx| fft::<R>(&input[stride..], 2 * stride, odd, twiddles, ctx),
    );
    butterflies::<R>(even, odd, 0, stride, twiddles, ctx);
}

/// [`fft`] in async form.
fn fft_async<'a, A: AsyncFork>(
    input: &'a [Complex],
    stride: usize,
    out: &'a mut [Complex],
    twiddles: &'a [Complex],
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = out.len();
        if n <= SERIAL_CUT_OFF {
            fft_serial(input, stride, out, twiddles);
            return;
        }
        let (even, odd) = out.split_at_mut(n / 2);
        A::join(
            fft_async::<A>(input, 2 * stride, even, twiddles),
            fft_async::<A>(&input[stride..], 2 * stride, odd, twiddles),
        )
        .await;
        butterflies_async::<A>(even, odd, 0, stride, twiddles).await;
    })
}

#[inline(never)]
fn fft_serial(input: &[Complex], stride: usize, out: &mut [Complex], twiddles: &[Complex]) {
    let n = out.len();
    if n == 1 {
        out[0] = input[0];
        return;
    }
    let (even, odd) = out.split_at_mut(n / 2);
    fft_serial(input, 2 * stride, even, twiddles);
    fft_serial(&input[stride..], 2 * stride, odd, twiddles);
    combine(even, odd, 0, stride, twiddles);
}

/// The butterflies of pairs `first..first + even.len()`.
fn butterflies<R: ForkJoin>(
    even: &mut [Complex],
    odd: &mut [Complex],
    first: usize,
    stride: usize,
    twiddles: &[Complex],
    ctx: &mut R::Ctx<'_>,
) {
    let n = even.len();
    if n <= BUTTERFLY_LEAF {
        combine(even, odd, first, stride, twiddles);
        return;
    }
    let (even_low, even_high) = even.split_at_mut(n / 2);
    let (odd_low, odd_high) = odd.split_at_mut(n / 2);
    R::join(
        ctx,
        |ctx| butterflies::<R>(even_low, odd_low, first, stride, twiddles, ctx),
        |ctx| butterflies::<R>(even_high, odd_high, first + n / 2, stride, twiddles, ctx),
    );
}

/// [`butterflies`] in async form.
fn butterflies_async<'a, A: AsyncFork>(
    even: &'a mut [Complex],
    odd: &'a mut [Complex],
    first: usize,
    stride: usize,
    twiddles: &'a [Complex],
) -> A::Boxed<'a, ()> {
    A::boxed_with(move || async move {
        let n = even.len();
        if n <= BUTTERFLY_LEAF {
            combine(even, odd, first, stride, twiddles);
            return;
        }
        let (even_low, even_high) = even.split_at_mut(n / 2);
        let (odd_low, odd_high) = odd.split_at_mut(n / 2);
        A::join(
            butterflies_async::<A>(even_low, odd_low, first, stride, twiddles),
            butterflies_async::<A>(even_high, odd_high, first + n / 2, stride, twiddles),
        )
        .await;
    })
}

#[inline(never)]
fn combine(
    even: &mut [Complex],
    odd: &mut [Complex],
    first: usize,
    stride: usize,
    twiddles: &[Complex],
) {
    for (k, (e, o)) in even.iter_mut().zip(odd.iter_mut()).enumerate() {
        let t = twiddles[(first + k) * stride].mul(*o);
        (*e, *o) = (e.add(t), e.sub(t));
    }
}
