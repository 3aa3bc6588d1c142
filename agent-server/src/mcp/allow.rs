//! Which MCP servers a request may name (`--mcp-allowed-servers`). A `server_url` is checked as
//! written, before any connection and without resolving any name: a host name is allowed only by
//! an entry naming it, an address only by an entry whose network holds it.
//!
//! Entries, comma-separated:
//! - a URL prefix, `http://judge:7600/mcp/`: the same scheme, host and port (the scheme's default
//!   when none is written), and a path that starts with the prefix's path;
//! - a host name, `judge` or `*.example.com` (any name under it), with `:PORT` for that port only;
//! - an address or a network, `10.1.2.3`, `10.0.0.0/8`, `::1`, `[fd00::1]:7600`, `fd00::/8`;
//! - `*`: any http or https server.
//!
//! Any port and http or https unless the entry says otherwise. The default, `localhost,
//! 127.0.0.0/8, ::1`, allows loopback only; an empty list allows none. An IPv4-mapped IPv6
//! address is checked as the IPv4 address it maps.

use std::net::{IpAddr, SocketAddr};

use url::{Host, Url};

/// The default allow-list: loopback only.
pub(crate) const LOOPBACK: &str = "localhost,127.0.0.0/8,::1";

/// The servers requests may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowList {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Any,
    Prefix {
        scheme: String,
        host: Host<String>,
        port: Option<u16>,
        path: String,
    },
    Name {
        name: String,
        /// `*.name`: names under it, not the name itself.
        under: bool,
        port: Option<u16>,
    },
    Network {
        address: IpAddr,
        prefix: u8,
        port: Option<u16>,
    },
}

/// Why an entry of the list is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--mcp-allowed-servers entry {entry:?}: {reason}")]
pub(crate) struct BadEntry {
    entry: String,
    reason: String,
}

impl Default for AllowList {
    fn default() -> Self {
        Self::parse(LOOPBACK).unwrap_or(Self {
            entries: Vec::new(),
        })
    }
}

impl AllowList {
    /// The list `text` writes; empty entries are skipped.
    pub(crate) fn parse(text: &str) -> Result<Self, BadEntry> {
        let entries = text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| {
                Entry::parse(e).map_err(|reason| BadEntry {
                    entry: e.to_owned(),
                    reason,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { entries })
    }

    /// Whether requests may name `url` (parsed, http or https, with a host).
    pub(crate) fn allows(&self, url: &Url) -> bool {
        self.entries.iter().any(|entry| entry.allows(url))
    }
}

impl Entry {
    fn parse(entry: &str) -> Result<Self, String> {
        if entry == "*" {
            return Ok(Entry::Any);
        }
        if entry.contains("://") {
            let url = Url::parse(entry).map_err(|e| format!("not a URL: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err("a URL prefix must be http or https".into());
            }
            let host = url
                .host()
                .map(|h| h.to_owned())
                .ok_or("a URL prefix needs a host")?;
            return Ok(Entry::Prefix {
                scheme: url.scheme().to_owned(),
                host,
                port: url.port_or_known_default(),
                path: url.path().to_owned(),
            });
        }
        if let Some((address, prefix)) = entry.split_once('/') {
            let address = bare_address(address).ok_or("not an IP address before the /")?;
            let most = if address.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= most)
                .ok_or_else(|| format!("the prefix length must be 0 to {most}"))?;
            return Ok(Entry::Network {
                address: canonical(address),
                prefix,
                port: None,
            });
        }
        if let Ok(socket) = entry.parse::<SocketAddr>() {
            return Ok(Entry::single(socket.ip(), Some(socket.port())));
        }
        if let Some(address) = bare_address(entry) {
            return Ok(Entry::single(address, None));
        }
        let (name, port) = match entry.rsplit_once(':') {
            Some((name, port)) => (
                name,
                Some(
                    port.parse::<u16>()
                        .map_err(|_| "the port is not a number")?,
                ),
            ),
            None => (entry, None),
        };
        let (name, under) = match name.strip_prefix("*.") {
            Some(name) => (name, true),
            None => (name, false),
        };
        let name = name.to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if !valid {
            return Err("not a host name, an address, a network or a URL prefix".into());
        }
        Ok(Entry::Name { name, under, port })
    }

    fn single(address: IpAddr, port: Option<u16>) -> Self {
        let address = canonical(address);
        Entry::Network {
            address,
            prefix: if address.is_ipv4() { 32 } else { 128 },
            port,
        }
    }

    fn allows(&self, url: &Url) -> bool {
        let port_ok = |port: &Option<u16>| port.is_none() || *port == url.port_or_known_default();
        match (self, url.host()) {
            (_, None) => false,
            (Entry::Any, Some(_)) => true,
            (
                Entry::Prefix {
                    scheme,
                    host,
                    port,
                    path,
                },
                Some(h),
            ) => {
                url.scheme() == scheme
                    && h.to_owned() == *host
                    && url.port_or_known_default() == *port
                    && url.path().starts_with(path.as_str())
            }
            (Entry::Name { name, under, port }, Some(Host::Domain(domain))) => {
                let domain = domain.to_ascii_lowercase();
                let matches = if *under {
                    domain
                        .strip_suffix(name.as_str())
                        .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1)
                } else {
                    domain == *name
                };
                matches && port_ok(port)
            }
            (
                Entry::Network {
                    address,
                    prefix,
                    port,
                },
                Some(Host::Ipv4(ip)),
            ) => within(IpAddr::V4(ip), *address, *prefix) && port_ok(port),
            (
                Entry::Network {
                    address,
                    prefix,
                    port,
                },
                Some(Host::Ipv6(ip)),
            ) => within(canonical(IpAddr::V6(ip)), *address, *prefix) && port_ok(port),
            (Entry::Name { .. } | Entry::Network { .. }, Some(_)) => false,
        }
    }
}

/// An address, bracketed or not.
fn bare_address(text: &str) -> Option<IpAddr> {
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.parse().ok()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it maps; any other as it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `ip` is in the network `address/prefix` (of the same family).
fn within(ip: IpAddr, address: IpAddr, prefix: u8) -> bool {
    match (ip, address) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(list: &str, url: &str) -> bool {
        AllowList::parse(list)
            .unwrap()
            .allows(&Url::parse(url).unwrap())
    }

    #[test]
    fn the_default_allows_loopback_only() {
        let list = AllowList::default();
        for url in [
            "http://127.0.0.1:7600/mcp/t1",
            "https://127.9.9.9/mcp",
            "http://localhost:1/",
            "http://LOCALHOST/",
            "http://[::1]:8080/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
            // The WHATWG reading reqwest connects by: 127.0.0.1.
            "http://2130706433/mcp",
        ] {
            assert!(list.allows(&Url::parse(url).unwrap()), "{url}");
        }
        for url in [
            "http://10.1.2.3:9/mcp",
            "http://[::2]/mcp",
            "http://localhost.example.com/",
            "http://example.com/",
            "http://128.0.0.1/",
            "http://[::ffff:10.0.0.1]/",
        ] {
            assert!(!list.allows(&Url::parse(url).unwrap()), "{url}");
        }
    }

    #[test]
    fn url_prefixes_pin_scheme_host_port_and_path() {
        let list = "http://judge:7600/mcp/";
        assert!(allows(list, "http://judge:7600/mcp/trial-1"));
        assert!(allows(list, "http://JUDGE:7600/mcp/"));
        assert!(!allows(list, "https://judge:7600/mcp/trial-1"));
        assert!(!allows(list, "http://judge:7601/mcp/trial-1"));
        assert!(!allows(list, "http://judge/mcp/trial-1"));
        assert!(!allows(list, "http://judge:7600/other"));
        assert!(!allows(list, "http://judge.evil:7600/mcp/"));
        assert!(allows(
            "https://tools.example.com",
            "https://tools.example.com:443/x"
        ));
    }

    #[test]
    fn names_networks_and_ports() {
        assert!(allows("judge", "http://judge:1234/mcp"));
        assert!(allows("judge", "https://judge/mcp"));
        assert!(!allows("judge", "http://judge.example.com/mcp"));
        assert!(allows("judge:7600", "http://judge:7600/mcp"));
        assert!(!allows("judge:7600", "http://judge:7601/mcp"));
        assert!(allows("*.example.com", "http://a.b.example.com/mcp"));
        assert!(!allows("*.example.com", "http://example.com/mcp"));
        assert!(!allows("*.example.com", "http://badexample.com/mcp"));
        assert!(allows("10.0.0.0/8", "http://10.1.2.3:9/mcp"));
        assert!(!allows("10.0.0.0/8", "http://11.1.2.3:9/mcp"));
        assert!(allows("10.1.2.3:9", "http://10.1.2.3:9/mcp"));
        assert!(!allows("10.1.2.3:9", "http://10.1.2.3:10/mcp"));
        assert!(allows("[fd00::1]:7600", "http://[fd00::1]:7600/mcp"));
        assert!(allows("fd00::/8", "http://[fd12::1]/mcp"));
        assert!(!allows("fd00::/8", "http://10.0.0.1/mcp"));
        // A name never matches an address, nor an address a name: nothing is resolved.
        assert!(!allows("judge", "http://10.1.2.3/mcp"));
        assert!(!allows("127.0.0.0/8", "http://judge/mcp"));
        assert!(allows("*", "http://anything.example:1/"));
        assert!(!allows("", "http://127.0.0.1/"));
    }

    #[test]
    fn bad_entries_say_which_and_why() {
        for entry in ["ftp://x/", "10.0.0.0/33", "host:port", "a..b", "*", "/8"] {
            let parsed = AllowList::parse(entry);
            if entry == "*" {
                assert!(parsed.is_ok());
                continue;
            }
            let e = parsed.unwrap_err().to_string();
            assert!(e.contains(entry), "{e}");
        }
    }
}
