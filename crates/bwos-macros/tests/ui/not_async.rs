#[bwos::test]
fn not_async() {}

#[bwos::main]
fn main() {}
