//! [`ToSocketAddrs`]: what `bind` and `connect` take, as tokio's: socket
//! addresses as they are, and host names resolved on a blocking thread
//! (`task::spawn_blocking`), so that a DNS lookup never stalls a worker.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Addresses a socket can bind or connect to: a [`SocketAddr`] (or its v4
/// and v6 forms), an `(IpAddr, u16)` pair, a slice of addresses, or a
/// string `"host:port"` / pair `("host", port)` whose host is an IP
/// address or a name. Names are resolved on a blocking thread of the
/// current pool.
///
/// The trait is sealed: its method is an implementation detail.
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    use super::*;

    /// How an address argument becomes socket addresses.
    pub trait Sealed {
        /// The addresses without a lookup, or the name to look up.
        #[doc(hidden)]
        fn to_addrs(&self) -> Addrs;
    }

    /// Addresses in hand, or a `host:port` to resolve.
    #[doc(hidden)]
    pub enum Addrs {
        Ready(Vec<SocketAddr>),
        Lookup(String),
    }
}

use sealed::{Addrs, Sealed};

/// The addresses `target` stands for: resolved on a blocking thread if it
/// names a host. An empty result is an error that says so.
pub(crate) async fn resolve(target: &impl ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    let addrs = match target.to_addrs() {
        Addrs::Ready(addrs) => addrs,
        Addrs::Lookup(host) => {
            let lookup = host.clone();
            crate::task::spawn_blocking(move || {
                std::net::ToSocketAddrs::to_socket_addrs(&lookup).map(Iterator::collect)
            })
            .await
            .map_err(|error| io::Error::other(format!("resolving {host}: {error}")))?
            .map_err(|error| io::Error::new(error.kind(), format!("resolving {host}: {error}")))?
        }
    };
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no socket address to use (an empty list, or a name without addresses)",
        ));
    }
    Ok(addrs)
}

/// Tries `operation` on each address in turn; the first success, else the
/// last error with its address in the message.
pub(crate) async fn each_addr<T, F, Fut>(addrs: Vec<SocketAddr>, mut operation: F) -> io::Result<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: Future<Output = io::Result<T>>,
{
    let mut last = None;
    for addr in addrs {
        match operation(addr).await {
            Ok(value) => return Ok(value),
            Err(error) => last = Some(io::Error::new(error.kind(), format!("{addr}: {error}"))),
        }
    }
    Err(last.expect("resolve returns at least one address"))
}

impl ToSocketAddrs for SocketAddr {}
impl Sealed for SocketAddr {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![*self])
    }
}

impl ToSocketAddrs for SocketAddrV4 {}
impl Sealed for SocketAddrV4 {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![SocketAddr::V4(*self)])
    }
}

impl ToSocketAddrs for SocketAddrV6 {}
impl Sealed for SocketAddrV6 {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![SocketAddr::V6(*self)])
    }
}

impl ToSocketAddrs for (IpAddr, u16) {}
impl Sealed for (IpAddr, u16) {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![SocketAddr::from(*self)])
    }
}

impl ToSocketAddrs for (Ipv4Addr, u16) {}
impl Sealed for (Ipv4Addr, u16) {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![SocketAddr::from(*self)])
    }
}

impl ToSocketAddrs for (Ipv6Addr, u16) {}
impl Sealed for (Ipv6Addr, u16) {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(vec![SocketAddr::from(*self)])
    }
}

impl ToSocketAddrs for [SocketAddr] {}
impl Sealed for [SocketAddr] {
    fn to_addrs(&self) -> Addrs {
        Addrs::Ready(self.to_vec())
    }
}

impl ToSocketAddrs for str {}
impl Sealed for str {
    fn to_addrs(&self) -> Addrs {
        match self.parse::<SocketAddr>() {
            Ok(addr) => Addrs::Ready(vec![addr]),
            Err(_) => Addrs::Lookup(self.to_owned()),
        }
    }
}

impl ToSocketAddrs for String {}
impl Sealed for String {
    fn to_addrs(&self) -> Addrs {
        self.as_str().to_addrs()
    }
}

impl ToSocketAddrs for (&str, u16) {}
impl Sealed for (&str, u16) {
    fn to_addrs(&self) -> Addrs {
        let (host, port) = *self;
        match host.parse::<IpAddr>() {
            Ok(ip) => Addrs::Ready(vec![SocketAddr::new(ip, port)]),
            Err(_) => Addrs::Lookup(format!("{host}:{port}")),
        }
    }
}

impl ToSocketAddrs for (String, u16) {}
impl Sealed for (String, u16) {
    fn to_addrs(&self) -> Addrs {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: Sealed + ?Sized> Sealed for &T {
    fn to_addrs(&self) -> Addrs {
        (**self).to_addrs()
    }
}
