#[bwos::test]
async fn with_an_argument(value: u32) {
    let _ = value;
}

#[bwos::test]
async fn generic<T>() {}

fn main() {}
