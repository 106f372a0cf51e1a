//! Where a URL really goes. Network tools are judged by their destination, not their spelling:
//! the host is parsed the way fetchers parse it (WHATWG: `http://2130706433/`,
//! `http://0x7f.1/` and `http://[::ffff:127.0.0.1]/` are all loopback), and loopback,
//! private, link-local (cloud metadata), unspecified, multicast and internal names are not the
//! public web.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    /// Not a URL the guard can parse.
    #[error("`{url}` is not a URL the guard can parse: {reason}")]
    Unparsable {
        /// The URL.
        url: String,
        /// The parser's reason.
        reason: String,
    },
    /// A scheme other than http(s).
    #[error("the scheme `{scheme}` is not web access (only http(s) and ws(s) reach the web)")]
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// A destination that is not the public web.
    #[error(
        "`{host}` is {what}, not the public web; fetching it could reach internal services or cloud credentials"
    )]
    Internal {
        /// The host as parsed.
        host: String,
        /// What it is (one of [`INTERNAL_NAMES`]' or the address ranges' descriptions).
        what: &'static str,
    },
}

impl UrlRefusal {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            UrlRefusal::Unparsable { .. } => "bad_url",
            UrlRefusal::Scheme { .. } => "url_scheme",
            UrlRefusal::Internal { .. } => "internal_address",
        }
    }
}

/// Host names (exact, or as a suffix when they start with `.`) that are internal whatever they
/// resolve to. Knowledge as data: each entry has a test.
pub const INTERNAL_NAMES: &[(&str, &str)] = &[
    ("localhost", "the loopback name"),
    (".localhost", "a loopback name"),
    ("metadata.google.internal", "the GCE metadata service"),
    ("metadata", "a cloud metadata service name"),
    ("instance-data", "the EC2 metadata service name"),
    (".internal", "an internal DNS name"),
    (".local", "an mDNS (local network) name"),
    (".localdomain", "a local-domain name"),
    (".home.arpa", "a home-network name"),
    (".lan", "a local network name"),
    (".intranet", "an intranet name"),
    (".corp", "a corporate network name"),
    // Public wildcard DNS that answers with the address spelled in the name.
    (
        ".nip.io",
        "a wildcard DNS name that resolves to the address it spells",
    ),
    (
        ".sslip.io",
        "a wildcard DNS name that resolves to the address it spells",
    ),
    (
        ".xip.io",
        "a wildcard DNS name that resolves to the address it spells",
    ),
    (".localtest.me", "a public name that resolves to loopback"),
    (".lvh.me", "a public name that resolves to loopback"),
    (".vcap.me", "a public name that resolves to loopback"),
    (".localh.st", "a public name that resolves to loopback"),
    // DNS rebinding services: the name spells the addresses it answers with, in turn.
    (
        ".rbndr.us",
        "a DNS rebinding name (answers with the addresses it spells)",
    ),
    (
        ".1u.ms",
        "a DNS rebinding name (answers with the addresses it spells)",
    ),
    // Kubernetes cluster DNS: services inside the cluster, API server included. (Not a bare
    // `.svc` suffix: it would also refuse the word `svc` in `kubectl get svc`.)
    (".cluster.local", "a Kubernetes cluster name"),
    ("kubernetes.default", "the Kubernetes API server"),
    ("kubernetes.default.svc", "the Kubernetes API server"),
];

/// Judges `url`: `Ok` for an http(s) URL to a public host.
pub fn judge_url(url: &str) -> Result<(), UrlRefusal> {
    let (url, parsed) = parse_unambiguous(url)?;
    if !matches!(parsed.scheme(), "http" | "https" | "ws" | "wss") {
        return Err(UrlRefusal::Scheme {
            scheme: parsed.scheme().to_owned(),
        });
    }
    judge_host(url, &parsed)
}

/// Parses `url`, refusing one whose destination depends on the parser.
fn parse_unambiguous(url: &str) -> Result<(&str, url::Url), UrlRefusal> {
    let url = url.trim();
    // Parsers disagree about `a@b@c` and backslashes in the authority (curl and the WHATWG
    // spec pick different hosts): a URL whose destination depends on the parser is refused.
    let authority = url.split_once("://").map_or("", |(_, rest)| {
        rest.split(['/', '?', '#']).next().unwrap_or("")
    });
    if authority.matches('@').count() > 1 || authority.contains('\\') {
        return Err(UrlRefusal::Unparsable {
            url: url.to_owned(),
            reason: "an ambiguous authority (several `@` or a backslash)".to_owned(),
        });
    }
    let parsed = url::Url::parse(url).map_err(|e| UrlRefusal::Unparsable {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    Ok((url, parsed))
}

fn judge_host(url: &str, parsed: &url::Url) -> Result<(), UrlRefusal> {
    match parsed.host() {
        None => Err(UrlRefusal::Unparsable {
            url: url.to_owned(),
            reason: "no host".to_owned(),
        }),
        Some(url::Host::Ipv4(ip)) => judge_ip(IpAddr::V4(ip), &ip.to_string()),
        Some(url::Host::Ipv6(ip)) => judge_ip(IpAddr::V6(ip), &ip.to_string()),
        Some(url::Host::Domain(name)) => judge_name(name),
    }
}

/// Judges a destination named on a network client's command line (`curl`, `wget`, `ssh`,
/// `nc`, `git`, `pip -i` ...): a URL of any scheme, or a bare `[user@]host[:port|:path]`.
/// `Ok` when it is public, or when the word is not recognisably a destination: a bare word is
/// refused only when it is an address literal (a dotted quad in any radix, IPv6) or an
/// internal name, so `install`, `origin` or `1.5` (an option value) pass.
pub fn judge_destination(target: &str) -> Result<(), UrlRefusal> {
    let target = target.trim();
    if let Some((scheme, _)) = target.split_once("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        let (url, parsed) = parse_unambiguous(target)?;
        if parsed.scheme() == "file" {
            // `curl file:///etc/shadow` reads a local file, out of the sandbox's sight.
            return Err(UrlRefusal::Scheme {
                scheme: "file".to_owned(),
            });
        }
        // A URL parser knows no host for some schemes (`ssh://`, `git://` are opaque to
        // WHATWG); their authority is judged as a bare destination.
        return match parsed.host() {
            // Non-special schemes (`gopher:`, `ftp:` in some parsers) keep an address as an
            // opaque name: read it as an address too.
            Some(url::Host::Domain(name)) => judge_bare(name).and_then(|()| judge_name(name)),
            Some(_) => judge_host(url, &parsed),
            None => {
                let authority = target.split_once("://").map_or("", |(_, rest)| {
                    rest.split(['/', '?', '#']).next().unwrap_or("")
                });
                judge_bare(authority)
            }
        };
    }
    judge_bare(target)
}

/// Every URL in free text (`scheme://...`, any scheme), up to the first character that
/// cannot be in one. A scheme is the run of scheme characters right before `://`.
pub fn urls_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text.get(from..).and_then(|rest| rest.find("://")) {
        let sep = from + pos;
        let head = text.get(..sep).unwrap_or_default();
        let scheme_len = head
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .count();
        let start = sep - scheme_len;
        let tail = text.get(start..).unwrap_or_default();
        let end = tail
            .find(|c: char| c.is_whitespace() || "<>\"'`(){}".contains(c))
            .unwrap_or(tail.len());
        let url = tail
            .get(..end)
            .unwrap_or_default()
            .trim_end_matches(['.', ',', ';', ':', '!', '?', ']']);
        if scheme_len > 0 {
            out.push(url.to_owned());
        }
        from = sep + 3;
    }
    out
}

/// `[user@]host[:port|:path]`, `[v6]:port`, a bare IPv6 address.
fn judge_bare(word: &str) -> Result<(), UrlRefusal> {
    let host = word.rsplit_once('@').map_or(word, |(_, host)| host);
    if let Some(rest) = host.strip_prefix('[') {
        let inner = rest.split(']').next().unwrap_or("");
        let inner = inner.split('%').next().unwrap_or("");
        return match inner.parse::<Ipv6Addr>() {
            Ok(ip) => judge_ip(IpAddr::V6(ip), inner),
            Err(_) => Ok(()),
        };
    }
    if let Ok(ip) = host.split('%').next().unwrap_or("").parse::<Ipv6Addr>() {
        return judge_ip(IpAddr::V6(ip), host);
    }
    let host = host.split([':', '/']).next().unwrap_or("");
    let parts: Vec<&str> = host.split('.').collect();
    let numeric = |p: &&str| {
        !p.is_empty()
            && (p.chars().all(|c| c.is_ascii_digit())
                || p.strip_prefix("0x")
                    .or_else(|| p.strip_prefix("0X"))
                    .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit())))
    };
    let hex_literal =
        parts.len() == 1 && host.len() > 2 && host.starts_with(['0']) && numeric(&host);
    if (parts.len() == 4 && parts.iter().all(numeric)) || (hex_literal && host.contains(['x', 'X']))
    {
        // The WHATWG IPv4 parser reads every radix the way inet_aton (and curl) do.
        return match url::Url::parse(&format!("http://{host}/"))
            .ok()
            .and_then(|u| match u.host() {
                Some(url::Host::Ipv4(ip)) => Some(ip),
                _ => None,
            }) {
            Some(ip) => judge_ip(IpAddr::V4(ip), host),
            None => Ok(()),
        };
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    let known = INTERNAL_NAMES
        .iter()
        .any(|(pattern, _)| match pattern.strip_prefix('.') {
            Some(suffix) => name.ends_with(pattern) || name == suffix,
            None => name == *pattern,
        });
    if known { judge_name(&name) } else { Ok(()) }
}

/// Judges a host name (already lowercased by the URL parser).
pub fn judge_name(name: &str) -> Result<(), UrlRefusal> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    for (pattern, what) in INTERNAL_NAMES {
        let hit = match pattern.strip_prefix('.') {
            Some(suffix) => name.ends_with(pattern) || name == suffix,
            None => name == *pattern,
        };
        if hit {
            return Err(UrlRefusal::Internal { host: name, what });
        }
    }
    // A bare name without a dot is a local search-domain name.
    if !name.contains('.') {
        return Err(UrlRefusal::Internal {
            host: name,
            what: "a single-label (local network) name",
        });
    }
    Ok(())
}

/// Judges an address.
pub fn judge_ip(ip: IpAddr, host: &str) -> Result<(), UrlRefusal> {
    match internal_ip(ip) {
        Some(what) => Err(UrlRefusal::Internal {
            host: host.to_owned(),
            what,
        }),
        None => Ok(()),
    }
}

/// What an address is when it is not public.
pub fn internal_ip(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() || a == 0 {
        Some("the unspecified address (this host)")
    } else if ip.is_link_local() {
        Some("a link-local address (cloud metadata lives at 169.254.169.254)")
    } else if ip.is_private() {
        Some("a private network address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT address")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking network address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("an IETF protocol address")
    } else {
        None
    }
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4);
    }
    let [s0, s1, s2, s3, s4, s5, s6, s7] = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("the unspecified address (this host)")
    } else if s0 & 0xfe00 == 0xfc00 {
        Some("a unique-local (private) address, e.g. AWS metadata at fd00:ec2::254")
    } else if s0 & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if [s0, s1, s2, s3, s4, s5] == [0; 6] {
        // IPv4-compatible (deprecated) `::a.b.c.d`.
        internal_v4(embedded(s6, s7)).or(Some("an IPv4-compatible address"))
    } else if s0 == 0x64 && s1 == 0xff9b {
        // NAT64 `64:ff9b::a.b.c.d` reaches the embedded IPv4 address.
        internal_v4(embedded(s6, s7))
    } else if s0 == 0x2002 {
        // 6to4 `2002:aabb:ccdd::` embeds an IPv4 address.
        internal_v4(embedded(s1, s2))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_loopback_and_metadata_is_internal() {
        for url in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:169.254.169.254]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0:8080/",
            "http://0/",
            "http://10.0.0.1/",
            "http://172.16.3.4/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://[fe80::1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[::127.0.0.1]/",
            "http://localhost:3000/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://metadata/",
            "http://db.internal/",
            "http://printer.local/",
            "http://router.home.arpa/",
            "http://127.0.0.1.nip.io/",
            "http://app.localtest.me/",
            "http://intranet/",
            "http://vcap.me/",
            "http://localh.st/",
            "http://7f000001.c0a80001.rbndr.us/",
            "http://make-127.0.0.1-rebind-8.8.8.8-rr.1u.ms/",
            "http://kubernetes.default.svc/",
            "https://kubernetes.default/",
            "http://redis.prod.svc.cluster.local:6379/",
        ] {
            let r = judge_url(url);
            assert!(
                matches!(r, Err(UrlRefusal::Internal { .. })),
                "{url}: {r:?}"
            );
        }
    }

    #[test]
    fn public_hosts_pass() {
        for url in [
            "https://docs.rs/serde",
            "https://example.com/a?b=c",
            "http://93.184.216.34/",
            "https://[2606:2800:220:1:248:1893:25c8:1946]/",
            "https://crates.io/",
            "https://172.32.0.1/",
        ] {
            assert_eq!(judge_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn other_schemes_and_garbage_are_refused() {
        assert!(matches!(
            judge_url("file:///etc/passwd"),
            Err(UrlRefusal::Scheme { .. })
        ));
        assert!(matches!(
            judge_url("gopher://example.com/"),
            Err(UrlRefusal::Scheme { .. })
        ));
        assert!(matches!(
            judge_url("http://user:pw@127.0.0.1@example.com/"),
            Err(UrlRefusal::Unparsable { .. })
        ));
        assert!(matches!(
            judge_url("not a url"),
            Err(UrlRefusal::Unparsable { .. })
        ));
    }

    #[test]
    fn urls_are_found_in_prose() {
        assert_eq!(
            urls_in("Summarise https://example.com/a, then (http://127.0.0.1:8080/x)."),
            vec!["https://example.com/a", "http://127.0.0.1:8080/x"]
        );
        assert_eq!(
            urls_in("ws://[::1]:9/x and gopher://10.0.0.1:70/ and HTTP://A.B"),
            vec!["ws://[::1]:9/x", "gopher://10.0.0.1:70/", "HTTP://A.B"]
        );
        assert!(urls_in("no links here, nor ://this").is_empty());
    }

    #[test]
    fn command_line_destinations_are_judged_by_where_they_go() {
        for target in [
            "http://0x7f.1/",
            "https://127.0.0.1.nip.io/x",
            "ftp://10.0.0.1/f",
            "gopher://127.0.0.1:6379/_x",
            "file:///etc/shadow",
            "ssh://git@169.254.169.254/x",
            "root@10.0.0.5",
            "127.0.0.1:8080",
            "0x7f.0.0.1",
            "0177.0.0.1",
            "0x7f000001",
            "[::1]:22",
            "::1",
            "fe80::1%eth0",
            "git@192.168.0.2:repo.git",
            "localhost:3000",
            "metadata.google.internal",
            "instance-data",
            "db.internal:5432",
        ] {
            assert!(judge_destination(target).is_err(), "{target}");
        }
        for target in [
            "https://example.com/x",
            "git@github.com:org/repo.git",
            "origin",
            "install",
            "1.5",
            "30",
            "0",
            "a.txt",
            "Accept: text/html",
            "93.184.216.34",
            "ssh://git@github.com/org/repo",
        ] {
            assert_eq!(judge_destination(target), Ok(()), "{target}");
        }
    }

    #[test]
    fn every_internal_name_entry_is_refused() {
        for (pattern, _) in INTERNAL_NAMES {
            let host = match pattern.strip_prefix('.') {
                Some(suffix) => format!("x.{suffix}"),
                None => (*pattern).to_owned(),
            };
            assert!(judge_name(&host).is_err(), "{host}");
        }
    }
}
