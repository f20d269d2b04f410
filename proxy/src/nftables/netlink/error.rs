//! What the encoder refuses, naming the rule, set, element or chain.

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("nftables rule {0:?}: {1}")]
    Rule(String, String),
    #[error("nftables set {0:?}: unsupported type {1:?}")]
    SetType(String, String),
    #[error("nftables element of {0:?}: {1}")]
    Element(String, String),
    #[error("nftables chain {0:?}: {1}")]
    Chain(String, String),
    #[error("netlink attribute of {0} bytes is too large")]
    TooLarge(usize),
}
