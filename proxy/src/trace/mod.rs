//! Packet tracer over iptables-save / iptables-restore text.
