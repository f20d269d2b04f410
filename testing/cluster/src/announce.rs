//! Servers that announce the address they bound on their first line of stdout (the fake GCE's
//! `listening on ADDR` with `--listen 127.0.0.1:0`, `kubectl proxy --port=0`'s `Starting to serve on
//! ADDR`): the way a test gets a free port without racing another test for it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::ClusterError;

/// The fake GCE's announcement.
pub const FAKE_GCE: &str = "listening on ";
/// `kubectl proxy`'s announcement.
pub const KUBECTL_PROXY: &str = "Starting to serve on ";

/// Spawns `cmd` with stdout piped and returns the child and the rest of its first line after
/// `prefix`. The child is killed and reaped when that line does not come or does not match.
pub fn spawn(cmd: &mut Command, prefix: &str) -> Result<(Child, String), ClusterError> {
    let what = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .map_err(ClusterError::io(format!("spawning {what}")))?;
    match first_line(&mut child, prefix) {
        Ok(addr) => Ok((child, addr)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(ClusterError::Api(format!("{what}: {e}")))
        }
    }
}

fn first_line(child: &mut Child, prefix: &str) -> Result<String, String> {
    let out = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| format!("reading its first line: {e}"))?;
    line.trim()
        .strip_prefix(prefix)
        .map(str::to_owned)
        .ok_or_else(|| format!("unexpected first line {line:?} (see its stderr)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_follows_the_prefix() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo 'listening on 127.0.0.1:5'; sleep 5"]);
        let (mut child, addr) = spawn(&mut cmd, FAKE_GCE).expect("spawn");
        assert_eq!(addr, "127.0.0.1:5");
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn another_first_line_is_an_error() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hello; sleep 5"]);
        let e = spawn(&mut cmd, FAKE_GCE)
            .expect_err("no announcement")
            .to_string();
        assert!(e.contains("unexpected first line \"hello\\n\""), "{e}");
    }
}
