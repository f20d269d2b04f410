//! A netlink message writer: `nlmsghdr` + `nfgenmsg` and (nested) attributes, padded to 4 bytes as
//! the kernel reads them. Written by hand: no Apache-compatible crate encodes nf_tables messages
//! (nftnl and rustables link or are GPL).

use super::error::EncodeError;

pub(super) const NLA_F_NESTED: u16 = 0x8000;
const NLMSG_HDRLEN: usize = 16;
const NFGENMSG_LEN: usize = 4;
const NLA_HDRLEN: usize = 4;

fn pad(len: usize) -> usize {
    (len + 3) & !3
}

/// One batch's bytes: messages back to back, as one `send` carries them.
#[derive(Debug, Default)]
pub(super) struct Writer {
    pub buf: Vec<u8>,
    pub seq: u32,
    /// Where the last message started.
    pub last: Option<usize>,
}

impl Writer {
    /// Starts a message; returns where it starts (for [`Writer::end`]).
    pub(super) fn begin(&mut self, msg_type: u16, flags: u16, family: u8, res_id: u16) -> usize {
        let start = self.buf.len();
        self.last = Some(start);
        self.seq = self.seq.wrapping_add(1);
        self.buf.extend_from_slice(&0u32.to_ne_bytes()); // length, patched by end()
        self.buf.extend_from_slice(&msg_type.to_ne_bytes());
        self.buf.extend_from_slice(&flags.to_ne_bytes());
        self.buf.extend_from_slice(&self.seq.to_ne_bytes());
        self.buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
        self.buf.push(family);
        self.buf.push(0); // NFNETLINK_V0
        self.buf.extend_from_slice(&res_id.to_be_bytes());
        debug_assert_eq!(self.buf.len() - start, NLMSG_HDRLEN + NFGENMSG_LEN);
        start
    }

    /// Asks the kernel to acknowledge the last message.
    pub(super) fn ack_last(&mut self) {
        if let Some(start) = self.last {
            let flags = u16::from_ne_bytes([self.buf[start + 6], self.buf[start + 7]]);
            self.buf[start + 6..start + 8].copy_from_slice(&(flags | super::kind::F_ACK).to_ne_bytes());
        }
    }

    pub(super) fn end(&mut self, start: usize) {
        let len = (self.buf.len() - start) as u32;
        self.buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
    }

    pub(super) fn attr(&mut self, ty: u16, data: &[u8]) -> Result<(), EncodeError> {
        let len = NLA_HDRLEN + data.len();
        let len16 = u16::try_from(len).map_err(|_| EncodeError::TooLarge(len))?;
        self.buf.extend_from_slice(&len16.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.buf.resize(self.buf.len() + pad(len) - len, 0);
        Ok(())
    }

    pub(super) fn u32_be(&mut self, ty: u16, v: u32) -> Result<(), EncodeError> {
        self.attr(ty, &v.to_be_bytes())
    }

    pub(super) fn str(&mut self, ty: u16, s: &str) -> Result<(), EncodeError> {
        let mut data = Vec::with_capacity(s.len() + 1);
        data.extend_from_slice(s.as_bytes());
        data.push(0);
        self.attr(ty, &data)
    }

    pub(super) fn nest(&mut self, ty: u16) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf.extend_from_slice(&(ty | NLA_F_NESTED).to_ne_bytes());
        start
    }

    pub(super) fn nest_end(&mut self, start: usize) -> Result<(), EncodeError> {
        let len = self.buf.len() - start;
        let len16 = u16::try_from(len).map_err(|_| EncodeError::TooLarge(len))?;
        self.buf[start..start + 2].copy_from_slice(&len16.to_ne_bytes());
        Ok(())
    }
}

/// User data as nftables writes it (libnftnl's udata): type, length, value.
#[derive(Debug, Default)]
pub(super) struct Udata(pub Vec<u8>);

impl Udata {
    pub(super) fn put(&mut self, ty: u8, value: &[u8]) -> Result<(), EncodeError> {
        let len = u8::try_from(value.len()).map_err(|_| EncodeError::TooLarge(value.len()))?;
        self.0.push(ty);
        self.0.push(len);
        self.0.extend_from_slice(value);
        Ok(())
    }

    /// A NUL-terminated string (comments).
    pub(super) fn put_str(&mut self, ty: u8, s: &str) -> Result<(), EncodeError> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.put(ty, &v)
    }

    pub(super) fn put_u32(&mut self, ty: u8, v: u32) -> Result<(), EncodeError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// One comment, the only thing svcnet stores in rule, chain, table and element user data.
    pub(super) fn comment(comment: &str) -> Result<Udata, EncodeError> {
        let mut u = Udata::default();
        u.put_str(0, comment)?;
        Ok(u)
    }
}
