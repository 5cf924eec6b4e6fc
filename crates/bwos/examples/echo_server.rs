//! A TCP echo server on `bwos::net`: every connection is a task that
//! writes back what it reads.
//!
//! ```text
//! cargo run --release -p bwos --example echo_server -- 127.0.0.1:7000
//! ```
//!
//! The first argument is the address to listen on (port 0: any free port);
//! the server prints `listening on ADDR` once it accepts. The accept loop
//! survives accept errors: out of file descriptors, it waits a little and
//! accepts again instead of exiting or spinning.

fn main() -> std::process::ExitCode {
    use std::process::ExitCode;

    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into());
    match bwos::block_on(serve(&address)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("echo_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(address: &str) -> std::io::Result<()> {
    use std::time::Duration;

    use bwos::net::TcpListener;

    let listener = TcpListener::bind(address).await?;
    println!("listening on {}", listener.local_addr()?);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors (EMFILE) or a connection that died in
                // the backlog: back off and keep serving the others.
                eprintln!("echo_server: accept failed: {error}; retrying");
                bwos::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        bwos::task::spawn(async move {
            let (mut reader, mut writer) = stream.split();
            if let Err(error) = futures_lite::io::copy(&mut reader, &mut writer).await {
                eprintln!("echo_server: connection failed: {error}");
            }
        });
    }
}
