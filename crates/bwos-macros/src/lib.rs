//! `#[bwos::main]` and `#[bwos::test]`: the attributes behind bwos's
//! `macros` feature. Use them through `bwos` (`bwos::main`, `bwos::test`);
//! their documentation is there.
//!
//! Each turns an `async fn` without arguments into a plain one that runs
//! the body in `block_on` on a bwos pool: for `main`, the global pool,
//! built with `worker_threads` workers if given; for `test`, a fresh pool
//! per test. The generated code calls `bwos::__macros`, so that the
//! runtime side lives (and is tested) in `bwos`; `start_paused = true`
//! calls `bwos::time::pause()` directly, spanned at the argument, so that
//! without bwos's `test-util` feature the compile error points there.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// Runs an `async fn main` in `block_on` on the global pool: see
/// `bwos::main`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Main, args.into(), item.into()).into()
}

/// Runs an `async fn` test in `block_on` on a fresh pool: see
/// `bwos::test`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Test, args.into(), item.into()).into()
}

/// Which attribute is expanded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

impl Kind {
    fn attribute(self) -> &'static str {
        match self {
            Kind::Main => "#[bwos::main]",
            Kind::Test => "#[bwos::test]",
        }
    }

    /// The arguments the attribute accepts, for error messages.
    fn accepted(self) -> &'static str {
        match self {
            Kind::Main => "`worker_threads = N`",
            Kind::Test => "`worker_threads = N` and `start_paused = true`",
        }
    }
}

/// The attribute's arguments.
#[derive(Default)]
struct Options {
    /// `worker_threads = N`, and where it was written.
    worker_threads: Option<(usize, Span)>,
    /// `start_paused = true|false`, and where it was written.
    start_paused: Option<(bool, Span)>,
}

fn expand(kind: Kind, args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let function = syn::parse2::<ItemFn>(item.clone());
    let options = parse_options(kind, args);
    let checked = match function {
        Ok(function) => check_function(kind, &function).map(|()| function),
        Err(error) => Err(error),
    };
    match (options, checked) {
        (Ok(options), Ok(function)) => generate(kind, &options, function),
        (options, function) => {
            let mut errors = Vec::new();
            errors.extend(options.err());
            errors.extend(function.err());
            let errors = errors.into_iter().map(syn::Error::into_compile_error);
            // A program whose `main` failed to expand would also be told
            // that it has no `main`: give it an empty one.
            let stand_in = (kind == Kind::Main).then(|| quote! { fn main() {} });
            quote! { #(#errors)* #stand_in }
        }
    }
}

/// Parses `key = value, ...`, collecting every error.
fn parse_options(kind: Kind, args: TokenStream2) -> syn::Result<Options> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut options = Options::default();
    let mut errors: Option<syn::Error> = None;
    let mut fail = |error: syn::Error| match &mut errors {
        Some(errors) => errors.combine(error),
        None => errors = Some(error),
    };
    for meta in metas {
        let Meta::NameValue(pair) = &meta else {
            fail(syn::Error::new(
                meta.span(),
                format!(
                    "{} takes arguments of the form `key = value`: {}",
                    kind.attribute(),
                    kind.accepted()
                ),
            ));
            continue;
        };
        let key = pair
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "worker_threads" => {
                if options.worker_threads.is_some() {
                    fail(duplicate(&pair.path, &key));
                    continue;
                }
                match worker_threads(&pair.value) {
                    Ok(threads) => options.worker_threads = Some((threads, pair.span())),
                    Err(error) => fail(error),
                }
            }
            "start_paused" if kind == Kind::Test => {
                if options.start_paused.is_some() {
                    fail(duplicate(&pair.path, &key));
                    continue;
                }
                match &pair.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(paused),
                        ..
                    }) => options.start_paused = Some((paused.value, pair.span())),
                    other => fail(syn::Error::new(
                        other.span(),
                        "`start_paused` takes `true` or `false`",
                    )),
                }
            }
            "start_paused" => fail(syn::Error::new(
                pair.path.span(),
                "`start_paused` is an argument of #[bwos::test] only \
                 (call `bwos::time::pause()` in the body to pause the clock of `main`'s pool)",
            )),
            _ => fail(syn::Error::new(
                pair.path.span(),
                format!(
                    "unknown argument `{}`: {} accepts {}",
                    path_text(&pair.path),
                    kind.attribute(),
                    kind.accepted()
                ),
            )),
        }
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(options),
    }
}

/// The value of `worker_threads`: a positive integer literal.
fn worker_threads(value: &Expr) -> syn::Result<usize> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    else {
        return Err(syn::Error::new(
            value.span(),
            "`worker_threads` takes an integer literal, as in `worker_threads = 4`",
        ));
    };
    let threads = int.base10_parse::<usize>().map_err(|_| {
        syn::Error::new(
            int.span(),
            "`worker_threads` takes a number of threads that fits a `usize`",
        )
    })?;
    if threads == 0 {
        return Err(syn::Error::new(
            int.span(),
            "`worker_threads` must be at least 1",
        ));
    }
    Ok(threads)
}

/// A path as written, without the spaces `quote` puts between tokens.
fn path_text(path: &syn::Path) -> String {
    quote!(#path).to_string().replace(' ', "")
}

fn duplicate(path: &syn::Path, key: &str) -> syn::Error {
    syn::Error::new(path.span(), format!("`{key}` is given twice"))
}

/// The function must be an `async fn` without arguments or generics.
fn check_function(kind: Kind, function: &ItemFn) -> syn::Result<()> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        return Err(syn::Error::new(
            signature.fn_token.span(),
            format!(
                "{} applies to an `async fn`: add `async` before `fn`",
                kind.attribute()
            ),
        ));
    }
    if !signature.inputs.is_empty() {
        return Err(syn::Error::new(
            signature.inputs.span(),
            format!("the function of {} takes no arguments", kind.attribute()),
        ));
    }
    if !signature.generics.params.is_empty() || signature.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            signature.generics.span(),
            format!("the function of {} cannot be generic", kind.attribute()),
        ));
    }
    Ok(())
}

fn generate(kind: Kind, options: &Options, mut function: ItemFn) -> TokenStream2 {
    function.sig.asyncness = None;
    let body = &function.block;
    let threads = match options.worker_threads {
        Some((threads, _)) => quote! { ::core::option::Option::Some(#threads) },
        None => quote! { ::core::option::Option::None },
    };
    // More threads than the pool allows: a compile error that says so
    // (bwos's bound is a constant of bwos, not of this crate).
    let bound = options.worker_threads.map(|(threads, span)| {
        let message = format!(
            "{}: worker_threads = {threads} is more than bwos::MAX_THREADS",
            kind.attribute()
        );
        quote_spanned! {span=>
            const _: () = ::core::assert!(#threads <= ::bwos::MAX_THREADS, #message);
        }
    });
    let run = match kind {
        Kind::Main => quote! {
            ::bwos::__macros::run_main(#threads, async move #body)
        },
        Kind::Test => {
            // Spanned at the argument: without bwos's `test-util` feature
            // `bwos::time::pause` does not exist, and the error points
            // here.
            let pause = match options.start_paused {
                Some((true, span)) => quote_spanned! {span=> ::bwos::time::pause(); },
                _ => TokenStream2::new(),
            };
            quote! {
                ::bwos::__macros::run_test(#threads, async move {
                    #pause
                    async move #body.await
                })
            }
        }
    };
    let test_attribute = (kind == Kind::Test).then(|| quote! { #[::core::prelude::v1::test] });
    // The same call outside the test function, which `#[test]` removes
    // from builds that are not tests: `start_paused` without bwos's
    // `test-util` feature fails to compile in every build, at the
    // argument (rustc reports the two identical errors once).
    let pause_exists = match options.start_paused {
        Some((true, span)) => Some(quote_spanned! {span=>
            const _: () = {
                #[allow(dead_code)]
                fn start_paused_needs_bwos_feature_test_util() {
                    ::bwos::time::pause();
                }
            };
        }),
        _ => None,
    };
    let attributes = &function.attrs;
    let visibility = &function.vis;
    let signature = &function.sig;
    quote! {
        #pause_exists
        #(#attributes)*
        #test_attribute
        #visibility #signature {
            #bound
            #run
        }
    }
}
