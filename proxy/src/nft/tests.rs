//! Unit tests of the nftables renderer, one rule family at a time.
