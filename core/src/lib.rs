//! svcnet-core: plumbing shared by svcnet-proxy and svcnet-cloud-controller.
#![forbid(unsafe_code)]
