//! The process-wide rustls crypto provider.
//!
//! kube enables rustls' `ring` backend and the Google clients enable `aws-lc-rs`; when one binary (or a
//! workspace-wide build, through feature unification) has both, rustls refuses to guess and panics on
//! the first TLS client. Every svcnet binary and test that builds a kube or Google client calls this
//! first. It is idempotent: a provider installed earlier (by us or a library) is kept.

pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means another thread installed one between the check and here: equally fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn installs_once_and_is_idempotent() {
        super::install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        super::install_crypto_provider();
    }
}
