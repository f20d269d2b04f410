//! Validation of API strings that end up in iptables text. The API server validates these too, but
//! svcnet does not trust it: a name that could break out of a comment or a rule is refused.

/// RFC 1123 label: 1-63 chars of `[a-z0-9-]`, alphanumeric at both ends (namespaces, port names).
pub(super) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// RFC 1035 label (Service names): an RFC 1123 label that starts with a letter.
pub(super) fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// EndpointSlice names may be DNS subdomains; only used for ordering and error messages, but keep them
/// printable so errors cannot smuggle control characters into logs.
pub(super) fn printable(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(is_dns1123_label("kube-system"));
        assert!(is_dns1123_label("0abc"));
        assert!(!is_dns1123_label(""));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("a\" -j ACCEPT"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1035_label("hostnames"));
        assert!(!is_dns1035_label("0abc"));
        assert_eq!(printable("a\nb"), "a?b");
    }
}
