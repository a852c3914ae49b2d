//! The client address as Kafka's authorizer sees it: `InetAddress.getHostAddress()`.

use std::fmt::Write as _;
use std::net::IpAddr;

/// Formats a client address the way Java's `InetAddress.getHostAddress()` does, which is the
/// text Kafka compares with an ACL's host: IPv4 dotted (`10.0.0.1`); an IPv4-mapped IPv6
/// address (`::ffff:10.0.0.1`, what a dual-stack listener reports for IPv4 clients) as its
/// IPv4 address, as Java does; other IPv6 addresses as eight lower-case hexadecimal groups
/// without leading zeros and without `::` compression (`0:0:0:0:0:0:0:1`, not `::1`). An ACL
/// written with `::1` never matches in Kafka either. A link-local scope id (`%eth0`), which
/// Java appends, is not part of `IpAddr` and is not printed.
pub fn java_host_address(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.to_string();
            }
            let mut text = String::with_capacity(39);
            for (i, segment) in v6.segments().iter().enumerate() {
                if i > 0 {
                    text.push(':');
                }
                // Writing to a String cannot fail.
                let _ = write!(text, "{segment:x}");
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn formats_as_java_does() {
        assert_eq!(
            java_host_address(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            "10.0.0.1"
        );
        assert_eq!(
            java_host_address(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            "0:0:0:0:0:0:0:1"
        );
        assert_eq!(
            java_host_address(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            "0:0:0:0:0:0:0:0"
        );
        let addr: Ipv6Addr = "2001:db8::0a:ff00".parse().unwrap();
        assert_eq!(
            java_host_address(IpAddr::V6(addr)),
            "2001:db8:0:0:0:0:a:ff00"
        );
        let mapped = Ipv4Addr::new(192, 168, 1, 7).to_ipv6_mapped();
        assert_eq!(java_host_address(IpAddr::V6(mapped)), "192.168.1.7");
    }
}
