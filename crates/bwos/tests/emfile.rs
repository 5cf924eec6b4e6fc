//! `accept` when the process is out of file descriptors: the error comes
//! back to the caller at once (no spinning, no hang), and accepting works
//! again once descriptors are free. A test binary of its own: it lowers
//! the process's descriptor limit.

#![cfg(all(unix, feature = "io", not(bwos_loom)))]

use bwos::net::TcpListener;
use bwos_testkit::watchdog;

fn soft_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to an rlimit.
    let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(status, 0);
    limit
}

fn set_soft_limit(limit: libc::rlimit) {
    // SAFETY: a valid pointer to an rlimit.
    let status = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    assert_eq!(status, 0);
}

#[test]
fn accept_out_of_descriptors_returns_the_error_and_recovers() {
    watchdog("accept_emfile", || {
        let pool = bwos::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let listener = pool.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let address = listener.local_addr().unwrap();
        // Connections wait in the backlog before the limit drops.
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(address).unwrap())
            .collect();
        let original = soft_limit();
        // The next descriptor number is the count in use: allow no more.
        let probe = std::fs::File::open("/dev/null").unwrap();
        let in_use = std::os::fd::AsRawFd::as_raw_fd(&probe) as libc::rlim_t;
        drop(probe);
        set_soft_limit(libc::rlimit {
            rlim_cur: in_use,
            rlim_max: original.rlim_max,
        });
        let refused = pool.block_on(listener.accept());
        set_soft_limit(original);
        let error = refused
            .map(|_| ())
            .expect_err("no descriptor for the connection");
        assert_eq!(error.raw_os_error(), Some(libc::EMFILE), "{error}");
        // Descriptors are free again: the waiting connections are served.
        for _ in &clients {
            let (stream, _) = pool.block_on(listener.accept()).expect("accepted");
            assert!(stream.peer_addr().is_ok());
        }
    });
}
