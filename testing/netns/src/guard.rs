//! The namespace guard.

use std::process::Command;

use crate::{NetnsError, Ran, name, sweep};

/// A network namespace that lives as long as this value: created with a unique name
/// (`svcnet-t-<tag>-<pid>-<n>`) and `lo` up, never linked to the root namespace (links are only ever
/// made between two namespaces of a test), and on drop, also while a panic unwinds, every process still
/// inside is killed and the namespace deleted.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace, or says why it cannot (not root, no `ip`).
    pub fn new(tag: &str) -> Result<Netns, NetnsError> {
        let name = name::unique(tag);
        sweep::add(&name)?;
        Ok(Netns { name })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `args` as a command that runs inside the namespace, not yet started.
    pub fn command(&self, args: &[&str]) -> Command {
        crate::command(&self.name, args)
    }

    /// Runs `args` inside with `stdin` on its standard input: (success, stdout, stderr). Panics when
    /// the command cannot be started at all (a broken test machine, not a test outcome).
    pub fn exec(&self, args: &[&str], stdin: &str) -> (bool, String, String) {
        self.finish(args, crate::exec(&self.name, args, Some(stdin)))
    }

    /// Runs `args` inside with no stdin: (success, stdout, stderr). Panics like [`Netns::exec`].
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        self.finish(args, crate::exec(&self.name, args, None))
    }

    /// Runs `args` inside; panics (with its output) unless it succeeds; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "in {}: {args:?} failed: {err}{out}", self.name);
        out
    }

    fn finish(&self, args: &[&str], ran: Result<Ran, NetnsError>) -> (bool, String, String) {
        match ran {
            Ok(r) => (r.success, r.stdout, r.stderr),
            Err(e) => panic!("in {}: {args:?}: {e}", self.name),
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        sweep::delete(&self.name);
    }
}
