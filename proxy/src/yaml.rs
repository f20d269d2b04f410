//! How svcnet reads YAML (the KubeProxyConfiguration file, offline inputs): YAML 1.2 scalars, so only
//! `true`/`false` are booleans and a node named `n` or a value `on` stays a string.

/// A parse error (boxed: the parser's error carries its source snippet and is large).
pub type Error = Box<serde_saphyr::Error>;

/// One document into `T`.
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_saphyr::from_str_with_options(text, options()).map_err(Box::new)
}

/// Every document of a multi-document stream.
pub fn from_multiple<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>, Error> {
    serde_saphyr::from_multiple_with_options(text, options()).map_err(Box::new)
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { strict_booleans: true }
}
