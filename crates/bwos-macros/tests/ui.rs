//! The compile errors of `#[bwos::main]` and `#[bwos::test]`: every bad
//! argument and function shape gets an error that says what is wrong and
//! what is accepted (`tests/ui/*.stderr`; `TRYBUILD=overwrite` rewrites
//! them after a deliberate change of wording or of the compiler).
//!
//! bwos is built here with `macros` but without `test-util`, so
//! `start_paused = true` shows what it says without that feature.

#[test]
fn bad_arguments_and_functions_are_compile_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/pass/*.rs");
}
