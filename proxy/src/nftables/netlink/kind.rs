//! nf_tables message types and netlink flags (`linux/netfilter/nfnetlink.h`, `nf_tables.h`).

pub(super) const SUBSYS_NFTABLES: u16 = 10;
pub(super) const BATCH_BEGIN: u16 = 0x10;
pub(super) const BATCH_END: u16 = 0x11;
pub(super) const NEWTABLE: u16 = 0;
pub(super) const DELTABLE: u16 = 2;
pub(super) const NEWCHAIN: u16 = 3;
pub(super) const DELCHAIN: u16 = 5;
pub(super) const NEWRULE: u16 = 6;
pub(super) const DELRULE: u16 = 8;
pub(super) const NEWSET: u16 = 9;
pub(super) const DELSET: u16 = 11;
pub(super) const NEWSETELEM: u16 = 12;
pub(super) const DELSETELEM: u16 = 14;
pub(super) const F_REQUEST: u16 = 0x1;
pub(super) const F_ACK: u16 = 0x4;
pub(super) const F_CREATE: u16 = 0x400;
pub(super) const F_APPEND: u16 = 0x800;

pub(super) fn msg(cmd: u16) -> u16 {
    (SUBSYS_NFTABLES << 8) | cmd
}
