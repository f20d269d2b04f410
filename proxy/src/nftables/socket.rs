//! The netlink socket that carries nftables batches to the kernel of this network namespace: send
//! one batch, read the answers until the kernel acknowledges its last message, report the first
//! message it refused. Blocking; the daemon calls it from a blocking task.

use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, netlink, recv, send, socket_with, sockopt,
};

use crate::model::Family;
use crate::nftables::netlink::{Batch, EncodeError, SetDigest, Start, read};

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HDRLEN: usize = 16;
/// Answers are small (errors echo only the header with NETLINK_CAP_ACK); a big buffer lets many
/// errors of one batch arrive in one read.
const RECV_BUFFER: usize = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    #[error("netlink socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("nftables refused message {index} of the batch: {}", std::io::Error::from_raw_os_error(*errno))]
    Refused { index: usize, errno: i32 },
    #[error("no answer from the kernel within {0:?}")]
    Timeout(Duration),
    #[error("malformed netlink answer")]
    Malformed,
    #[error("encoding the request: {0}")]
    Request(#[from] EncodeError),
}

#[derive(Debug)]
pub struct NftSocket {
    fd: OwnedFd,
    seq: u32,
    /// Numbers the anonymous sets this socket creates: random at open, so the sets a restarted
    /// proxy adds never take the name of one its predecessor left in the table.
    anon: u64,
}

impl NftSocket {
    pub fn open(timeout: Duration) -> Result<NftSocket, NetlinkError> {
        let fd = socket_with(
            AddressFamily::NETLINK,
            SocketType::RAW,
            SocketFlags::CLOEXEC,
            Some(netlink::NETFILTER),
        )
        .map_err(std::io::Error::from)?;
        // A zero timeout would mean "none" to some and EINVAL to others: at least a millisecond.
        let timeout = timeout.max(Duration::from_millis(1));
        sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(timeout))
            .map_err(std::io::Error::from)?;
        // Best effort: a larger receive buffer only matters when many messages fail at once.
        let _ = sockopt::set_socket_recv_buffer_size_force(&fd, RECV_BUFFER)
            .or_else(|_| sockopt::set_socket_recv_buffer_size(&fd, RECV_BUFFER));
        // Random start: two processes (or a restart) never mistake each other's answers.
        let seq = std::process::id().wrapping_mul(2_654_435_761);
        Ok(NftSocket {
            fd,
            seq,
            anon: random_u64(),
        })
    }

    /// Opens the socket in the network namespace at `netns` (e.g. `/run/netns/NAME`): a thread of
    /// its own enters the namespace and ends, so the caller's namespace never changes; the socket
    /// stays bound to that namespace. For tests and the bench, which run outside the node namespace.
    pub fn open_in(netns: &std::path::Path, timeout: Duration) -> Result<NftSocket, NetlinkError> {
        let file = std::fs::File::open(netns)?;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    use std::os::fd::AsFd;
                    rustix::thread::move_into_link_name_space(
                        file.as_fd(),
                        Some(rustix::thread::LinkNameSpaceType::Network),
                    )
                    .map_err(std::io::Error::from)?;
                    NftSocket::open(timeout)
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Where the next batch starts: its sequence numbers and anonymous set names.
    pub fn next_start(&self) -> Start {
        Start {
            seq: self.seq,
            anon: self.anon,
        }
    }

    /// Sends one batch and waits for its outcome: `Ok` once the kernel committed all of it.
    pub fn apply(&mut self, batch: &Batch) -> Result<(), NetlinkError> {
        self.seq = batch.last_seq.wrapping_add(1);
        self.anon = batch.next_anon;
        // A batch is one datagram: the socket must take all of it at once.
        let want = batch.bytes.len() + 64 * 1024;
        if sockopt::socket_send_buffer_size(&self.fd).unwrap_or(0) < want {
            let _ = sockopt::set_socket_send_buffer_size_force(&self.fd, want)
                .or_else(|_| sockopt::set_socket_send_buffer_size(&self.fd, want));
        }
        send(&self.fd, &batch.bytes, SendFlags::empty()).map_err(std::io::Error::from)?;
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut refused: Option<NetlinkError> = None;
        loop {
            let n = self.recv_into(&mut buf)?;
            for answer in answers(buf.get(..n).ok_or(NetlinkError::Malformed)?)? {
                let (seq, errno) = answer;
                if errno != 0 && refused.is_none() {
                    refused = Some(NetlinkError::Refused {
                        // Message 0 is the batch begin (a commit failure is reported on it).
                        index: seq.wrapping_sub(batch.first_seq) as usize,
                        errno,
                    });
                }
                if seq == batch.last_seq {
                    return refused.map_or(Ok(()), Err);
                }
            }
        }
    }
}

impl NftSocket {
    /// Sends a dump request (built with [`NftSocket::next_dump_seq`]) and returns the messages of
    /// its answer, up to the kernel's end of dump. A refusal (e.g. ENOENT: no such set) is
    /// [`NetlinkError::Refused`] with index 0.
    pub fn dump(&mut self, request: &[u8]) -> Result<Vec<Vec<u8>>, NetlinkError> {
        let mut out = Vec::new();
        self.dump_each(request, |m| {
            out.push(m.to_vec());
            Ok(())
        })?;
        Ok(out)
    }

    /// As [`NftSocket::dump`], but gives each message of the answer to `each` as it arrives, so a
    /// dump of a large set is never held whole.
    pub fn dump_each(
        &mut self,
        request: &[u8],
        mut each: impl FnMut(&[u8]) -> Result<(), NetlinkError>,
    ) -> Result<(), NetlinkError> {
        let seq = self.next_dump_seq();
        self.seq = seq.wrapping_add(1);
        send(&self.fd, request, SendFlags::empty()).map_err(std::io::Error::from)?;
        let mut buf = vec![0u8; RECV_BUFFER];
        loop {
            let n = self.recv_into(&mut buf)?;
            let mut data = buf.get(..n).ok_or(NetlinkError::Malformed)?;
            while data.len() >= NLMSG_HDRLEN {
                let len = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]) as usize;
                if len < NLMSG_HDRLEN || len > data.len() {
                    return Err(NetlinkError::Malformed);
                }
                let ty = u16::from_ne_bytes([data[4], data[5]]);
                let msg_seq = u32::from_ne_bytes([data[8], data[9], data[10], data[11]]);
                if msg_seq == seq {
                    match ty {
                        NLMSG_DONE => return Ok(()),
                        NLMSG_ERROR => {
                            let (_, errno) =
                                *answers(&data[..len])?.first().ok_or(NetlinkError::Malformed)?;
                            if errno != 0 {
                                return Err(NetlinkError::Refused { index: 0, errno });
                            }
                        }
                        _ => each(&data[..len])?,
                    }
                }
                data = data.get(len.div_ceil(4) * 4..).unwrap_or(&[]);
            }
        }
    }

    /// The handles of `chain`'s rules in svcnet's table, in the chain's order.
    pub fn rule_handles(&mut self, family: Family, chain: &str) -> Result<Vec<u64>, NetlinkError> {
        let request = read::get_rules(family, chain, self.next_dump_seq())?;
        self.dump(&request)?
            .iter()
            .map(|m| read::rule_handle(m).ok_or(NetlinkError::Malformed))
            .collect()
    }

    /// The chains and named sets of svcnet's table of `family`, and whether it is dormant; `None`
    /// when there is no table.
    pub fn table_objects(&mut self, family: Family) -> Result<Option<read::TableObjects>, NetlinkError> {
        let enoent = rustix::io::Errno::NOENT.raw_os_error();
        let sets = match self.dump(&read::get_sets(family, self.next_dump_seq())?) {
            Err(NetlinkError::Refused { errno, .. }) if errno == enoent => return Ok(None),
            other => other?,
        };
        let chains = self.dump(&read::get_chains(family, self.next_dump_seq())?)?;
        let mut out = read::TableObjects::default();
        for m in &sets {
            out.sets.extend(read::set_of(m).ok_or(NetlinkError::Malformed)?);
        }
        for m in &chains {
            out.chains
                .extend(read::chain_of(m).ok_or(NetlinkError::Malformed)?);
        }
        for m in &self.dump(&read::get_tables(family, self.next_dump_seq())?)? {
            if let Some(dormant) = read::table_dormant(m).ok_or(NetlinkError::Malformed)? {
                out.dormant = dormant;
            }
        }
        Ok(Some(out))
    }

    /// The digest of the elements of set `set` in svcnet's table of `family`, streamed from the
    /// kernel's dump (see [`SetDigest`]).
    pub fn set_digest(&mut self, family: Family, set: &str) -> Result<SetDigest, NetlinkError> {
        let request = read::get_elements(family, set, self.next_dump_seq())?;
        let mut digest = SetDigest::default();
        self.dump_each(&request, |m| digest.add_answer(m).ok_or(NetlinkError::Malformed))?;
        Ok(digest)
    }

    /// The sequence number the next dump request must carry.
    pub fn next_dump_seq(&self) -> u32 {
        self.seq
    }

    fn recv_into(&self, buf: &mut [u8]) -> Result<usize, NetlinkError> {
        loop {
            match recv(&self.fd, &mut *buf, RecvFlags::empty()) {
                Ok((n, _)) => return Ok(n),
                Err(e) if e == rustix::io::Errno::AGAIN => {
                    let timeout = sockopt::socket_timeout(&self.fd, sockopt::Timeout::Recv)
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                    return Err(NetlinkError::Timeout(timeout));
                }
                Err(e) if e == rustix::io::Errno::INTR => continue,
                Err(e) => return Err(NetlinkError::Io(e.into())),
            }
        }
    }
}

/// A random number: std seeds every `RandomState` from the operating system's random source.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    std::hash::RandomState::new().hash_one(std::process::id())
}

/// (sequence number, errno) of each NLMSG_ERROR in a datagram (errno 0 is an acknowledgement).
fn answers(mut data: &[u8]) -> Result<Vec<(u32, i32)>, NetlinkError> {
    let mut out = Vec::new();
    while data.len() >= NLMSG_HDRLEN {
        let u32_at = |b: &[u8], at: usize| -> Result<u32, NetlinkError> {
            b.get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .map(u32::from_ne_bytes)
                .ok_or(NetlinkError::Malformed)
        };
        let len = u32_at(data, 0)? as usize;
        if len < NLMSG_HDRLEN || len > data.len() {
            return Err(NetlinkError::Malformed);
        }
        let ty = u16::from_ne_bytes([data[4], data[5]]);
        let seq = u32_at(data, 8)?;
        if ty == NLMSG_ERROR {
            let errno = u32_at(data, NLMSG_HDRLEN)? as i32;
            out.push((seq, -errno));
        }
        data = data.get(len.div_ceil(4) * 4..).unwrap_or(&[]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_msg(seq: u32, err: i32) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&36u32.to_ne_bytes());
        m.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&err.to_ne_bytes());
        m.extend_from_slice(&[0u8; 16]); // the echoed header
        m
    }

    #[test]
    fn answers_read_acks_and_errors_in_order() {
        let mut d = error_msg(7, -2);
        d.extend(error_msg(9, 0));
        assert_eq!(answers(&d).ok(), Some(vec![(7, 2), (9, 0)]));
    }

    #[test]
    fn a_truncated_answer_is_malformed() {
        let d = error_msg(7, 0);
        assert!(matches!(answers(&d[..20]), Err(NetlinkError::Malformed)));
    }
}
