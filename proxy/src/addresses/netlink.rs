//! One `RTM_GETADDR` dump over rtnetlink: every address of every interface in this network
//! namespace, as `ip -o addr show` prints them (an IPv4 address is its `IFA_LOCAL`, the peer of a
//! point-to-point link being `IFA_ADDRESS`; otherwise `IFA_ADDRESS`). Blocking, but the kernel
//! answers a dump at once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, recv, send, socket_with, sockopt,
};

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const IFADDRMSG_LEN: usize = 8;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const SEQ: u32 = 1;

/// Every local address, sorted, without duplicates.
pub(crate) fn addresses() -> std::io::Result<Vec<IpAddr>> {
    let fd = socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        // NETLINK_ROUTE is protocol 0, which rustix spells `None`.
        None,
    )?;
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(Duration::from_secs(1)))?;
    send(&fd, &request(), SendFlags::empty())?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let (n, _) = recv(&fd, &mut buf[..], RecvFlags::empty())?;
        let part = buf.get(..n).ok_or_else(malformed)?;
        if parse(part, &mut out)? {
            break;
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The dump request: a netlink header and an `ifaddrmsg` of any family.
fn request() -> Vec<u8> {
    let len = (NLMSG_HDRLEN + IFADDRMSG_LEN) as u32;
    let mut req = Vec::with_capacity(NLMSG_HDRLEN + IFADDRMSG_LEN);
    req.extend_from_slice(&len.to_ne_bytes());
    req.extend_from_slice(&RTM_GETADDR.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&SEQ.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&[0u8; IFADDRMSG_LEN]);
    req
}

fn malformed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed rtnetlink answer")
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Adds the addresses of one datagram of the dump to `out`; true once the dump is done.
pub(super) fn parse(mut b: &[u8], out: &mut Vec<IpAddr>) -> std::io::Result<bool> {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_at(b, 0).ok_or_else(malformed)? as usize;
        let kind = u16_at(b, 4).ok_or_else(malformed)?;
        let msg = b
            .get(..len)
            .filter(|_| len >= NLMSG_HDRLEN)
            .ok_or_else(malformed)?;
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = u32_at(msg, NLMSG_HDRLEN).ok_or_else(malformed)? as i32;
                return Err(std::io::Error::from_raw_os_error(-errno));
            }
            RTM_NEWADDR => out.extend(address(msg.get(NLMSG_HDRLEN..).ok_or_else(malformed)?)),
            _ => {}
        }
        b = b.get(align4(len).min(b.len())..).unwrap_or_default();
    }
    Ok(false)
}

/// The address of one `RTM_NEWADDR` payload (`ifaddrmsg` and its attributes).
fn address(payload: &[u8]) -> Option<IpAddr> {
    let family = *payload.first()?;
    let mut attrs = payload.get(IFADDRMSG_LEN..)?;
    let (mut local, mut address) = (None, None);
    while attrs.len() >= 4 {
        let len = usize::from(u16_at(attrs, 0)?);
        let kind = u16_at(attrs, 2)?;
        let data = attrs.get(4..len)?;
        let ip = match (family, data.len()) {
            (AF_INET, 4) => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(data).ok()?))),
            (AF_INET6, 16) => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(data).ok()?))),
            _ => None,
        };
        match kind {
            IFA_LOCAL => local = ip,
            IFA_ADDRESS => address = ip,
            _ => {}
        }
        attrs = attrs.get(align4(len).min(attrs.len())..)?;
    }
    local.or(address)
}

#[cfg(test)]
mod tests;
