//! svcnet CRD types. Empty until the CRD issue lands.
#![forbid(unsafe_code)]
