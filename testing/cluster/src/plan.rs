//! A control plane prepared on disk but not started: certificates, kubeconfigs and the three command
//! lines. [`crate::Cluster`] starts a plan under the test's lifetime rules; a caller whose processes must
//! outlive it (the lab, whose components outlive `svcnet-lab up`) starts the [`Launch`]es itself.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::ClusterError;
use crate::binaries::Binaries;
use crate::certs::{self, Pki};
use crate::flags::{self, Layout, Options};
use crate::kubeconfig::{self, Credentials};
use crate::kubectl::Kubectl;

/// One process to start: `program args` (inside `netns` when the plan has one: `ip netns exec`), its
/// output appended to `log`.
#[derive(Clone, Debug)]
pub struct Launch {
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub log: PathBuf,
}

/// The files written and the processes to start, in order: etcd, kube-apiserver, then (if the options
/// ask for it) kube-controller-manager once the API server is ready.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) layout: Layout,
    pub(crate) pki: Pki,
    pub(crate) options: Options,
    pub admin_kubeconfig: PathBuf,
    pub etcd: Launch,
    pub apiserver: Launch,
    pub controller_manager: Option<Launch>,
}

impl Plan {
    /// Writes the PKI and the admin and controller-manager kubeconfigs into `dir` (which must exist) for
    /// a control plane listening on `ip`, inside `options.netns` when set.
    pub fn prepare(bins: &Binaries, dir: &Path, ip: IpAddr, options: Options) -> Result<Plan, ClusterError> {
        let layout = Layout {
            dir: dir.to_path_buf(),
            ip,
            netns: options.netns.clone(),
        };
        let pki = certs::generate(dir, &[ip])?;
        let admin_kubeconfig = layout.path("admin.kubeconfig");
        kubeconfig::write(
            &admin_kubeconfig,
            &layout.server(),
            &pki.ca.cert_pem,
            "svcnet-test-admin",
            &Credentials::Cert {
                cert_pem: &pki.admin.cert_pem,
                key_pem: &pki.admin.key_pem,
            },
        )?;
        let launch = |name: &'static str, program: PathBuf, args: Vec<String>| Launch {
            name,
            program,
            args,
            log: layout.path(&format!("{name}.log")),
        };
        let etcd = launch("etcd", bins.etcd(), flags::etcd(&layout));
        let apiserver = launch(
            "kube-apiserver",
            bins.kube_apiserver(),
            flags::apiserver(&layout, &pki, &options),
        );
        let controller_manager = if options.controller_manager {
            kubeconfig::write(
                &layout.path("controller-manager.kubeconfig"),
                &layout.server(),
                &pki.ca.cert_pem,
                "system:kube-controller-manager",
                &Credentials::Cert {
                    cert_pem: &pki.controller_manager.cert_pem,
                    key_pem: &pki.controller_manager.key_pem,
                },
            )?;
            Some(launch(
                "kube-controller-manager",
                bins.kube_controller_manager(),
                flags::controller_manager(&layout, &pki, &options),
            ))
        } else {
            None
        };
        Ok(Plan {
            layout,
            pki,
            options,
            admin_kubeconfig,
            etcd,
            apiserver,
            controller_manager,
        })
    }

    /// `https://<ip>:6443`.
    pub fn server(&self) -> String {
        self.layout.server()
    }

    /// The address every process listens on.
    pub fn ip(&self) -> IpAddr {
        self.layout.ip
    }

    /// The directory the plan's files are in.
    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    /// The options it was prepared with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The CA of the serving certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.pki.ca.cert_pem
    }

    /// kubectl as admin (inside the plan's namespace, if any).
    pub fn admin_kubectl(&self) -> Kubectl {
        self.kubectl_with(&self.admin_kubeconfig)
    }

    /// kubectl with another kubeconfig, same cache dir and namespace.
    pub fn kubectl_with(&self, kubeconfig: &Path) -> Kubectl {
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
            state: self.layout.dir.clone(),
            netns: self.layout.netns.clone(),
        }
    }

    /// `program args` of `launch` as started from the machine's namespace (behind `ip netns exec`
    /// when the plan has a namespace).
    pub fn command_line(&self, launch: &Launch) -> (PathBuf, Vec<String>) {
        self.layout.wrap(&launch.program, launch.args.clone())
    }
}
