//! Which IP addresses a push notification may be delivered to: [`is_public`].
//!
//! Owns the block list of the SSRF checks (A2A specification, push notification security: refuse
//! loopback, link-local, private, shared, multicast and reserved addresses, IPv4-mapped IPv6
//! included). Must not resolve names or know the allowlist; `push.rs` does both.
//!
//! IPv6 is judged by an allow list, not a block list: only global unicast (`2000::/3`) can be
//! public, minus the special-purpose blocks inside it, so a range IANA assigns tomorrow is
//! refused until it is known. Addresses that embed an IPv4 address (IPv4-mapped,
//! IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that IPv4 address,
//! because that is where a packet to them ends up.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address a webhook may be reached at.
///
/// False for loopback, unspecified, private (10/8, 172.16/12, 192.168/16), shared (100.64/10),
/// link-local (169.254/16, fe80::/10), multicast, broadcast, documentation, benchmarking
/// (198.18/15, 2001:2::/48), reserved (240/4), "this network" (0/8), IETF protocol assignments
/// (192.0.0/24, 2001::/23 except its global exceptions), the 6to4 relay anycast (192.88.99/24),
/// unique-local (fc00::/7), site-local (fec0::/10), discard-only (100::/64), local-use NAT64
/// (64:ff9b:1::/48), SRv6 SIDs (5f00::/16), and anything outside 2000::/3 that embeds no IPv4
/// address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4 (RFC 6890 special-purpose registry, and the multicast and reserved blocks).
fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let blocked =
        // 0.0.0.0/8 "this network" (includes the unspecified address), RFC 791.
        a == 0
        // 10.0.0.0/8 private, RFC 1918.
        || a == 10
        // 100.64.0.0/10 shared address space (carrier-grade NAT), RFC 6598.
        || (a == 100 && (b & 0xc0) == 64)
        // 127.0.0.0/8 loopback.
        || a == 127
        // 169.254.0.0/16 link-local (the cloud metadata address 169.254.169.254 among them).
        || (a == 169 && b == 254)
        // 172.16.0.0/12 private.
        || (a == 172 && (b & 0xf0) == 16)
        // 192.0.0.0/24 IETF protocol assignments, RFC 6890.
        || (a == 192 && b == 0 && c == 0)
        // 192.0.2.0/24 documentation (TEST-NET-1), RFC 5737.
        || (a == 192 && b == 0 && c == 2)
        // 192.88.99.0/24 6to4 relay anycast (deprecated), RFC 7526.
        || (a == 192 && b == 88 && c == 99)
        // 192.168.0.0/16 private.
        || (a == 192 && b == 168)
        // 198.18.0.0/15 benchmarking, RFC 2544.
        || (a == 198 && (b & 0xfe) == 18)
        // 198.51.100.0/24 documentation (TEST-NET-2).
        || (a == 198 && b == 51 && c == 100)
        // 203.0.113.0/24 documentation (TEST-NET-3).
        || (a == 203 && b == 0 && c == 113)
        // 224.0.0.0/4 multicast.
        || (a & 0xf0) == 224
        // 240.0.0.0/4 reserved, and 255.255.255.255 limited broadcast inside it.
        || (a & 0xf0) == 240;
    !blocked
}

/// IPv6 (RFC 6890 and the IANA IPv6 special-purpose registry).
fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let octets = ip.octets();
    let embedded_v4 = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);

    // ::/128 unspecified and ::1/128 loopback, before the IPv4-compatible block that holds them.
    if ip.is_unspecified() || ip.is_loopback() {
        return false;
    }
    // ::ffff:0:0/96 IPv4-mapped: the socket talks IPv4 to the embedded address.
    if segments[..5] == [0; 5] && segments[5] == 0xffff {
        return is_public_v4(embedded_v4);
    }
    // ::/96 IPv4-compatible (deprecated, RFC 4291): judged by the embedded address.
    if segments[..6] == [0; 6] {
        return is_public_v4(embedded_v4);
    }
    // 64:ff9b::/96 NAT64 well-known prefix, RFC 6052: the translator forwards to the
    // embedded address.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded_v4);
    }
    // 2002::/16 6to4, RFC 3056: the embedded address (bits 16..48) is the tunnel end point.
    if segments[0] == 0x2002 {
        let [_, _, a, b, c, d, ..] = octets;
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    // Only global unicast can be public; this refuses 64:ff9b:1::/48 (local-use NAT64),
    // 100::/64 (discard-only), fc00::/7 (unique-local), fe80::/10 (link-local), fec0::/10
    // (site-local), ff00::/8 (multicast) and every unassigned range.
    if (segments[0] & 0xe000) != 0x2000 {
        return false;
    }
    // 2001::/23 IETF protocol assignments (Teredo 2001::/32, benchmarking 2001:2::/48,
    // ORCHID 2001:10::/28 among them), except the blocks the registry marks globally
    // reachable.
    if segments[0] == 0x2001 && segments[1] < 0x0200 {
        let global_exception =
            // 2001:1::1/128 PCP anycast and 2001:1::2/128 TURN anycast.
            (segments[1] == 0x0001 && segments[2..7] == [0; 5] && matches!(segments[7], 1 | 2))
            // 2001:3::/32 AMT.
            || segments[1] == 0x0003
            // 2001:4:112::/48 AS112-v6.
            || (segments[1] == 0x0004 && segments[2] == 0x0112)
            // 2001:20::/28 ORCHIDv2.
            || (segments[1] & 0xfff0) == 0x0020;
        return global_exception;
    }
    // 2001:db8::/32 documentation, RFC 3849.
    if segments[0] == 0x2001 && segments[1] == 0x0db8 {
        return false;
    }
    // 3fff::/20 documentation, RFC 9637.
    if segments[0] == 0x3fff && (segments[1] & 0xf000) == 0 {
        return false;
    }
    true
}
