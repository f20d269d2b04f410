//! Kubeconfigs that authenticate as a svcnet component's ServiceAccount, so a test runs each binary
//! under exactly the RBAC its manifests grant (a missing verb fails the test, as it would in a cluster).

use std::path::{Path, PathBuf};

use crate::kubeconfig::{self, Credentials};
use crate::{Cluster, ClusterError, Plan};

/// A svcnet binary with an identity in `manifests/base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Proxy,
    CloudController,
}

impl Component {
    /// The ServiceAccount (in kube-system), ClusterRole and binding name.
    pub fn name(self) -> &'static str {
        match self {
            Component::Proxy => "svcnet-proxy",
            Component::CloudController => "svcnet-cloud-controller",
        }
    }

    /// Its folder under `manifests/base`.
    fn folder(self) -> &'static str {
        match self {
            Component::Proxy => "proxy",
            Component::CloudController => "cloud-controller",
        }
    }
}

/// The namespace the manifests put both components in.
pub const NAMESPACE: &str = "kube-system";

/// `manifests/` of this checkout.
pub fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests")
}

impl Plan {
    /// Applies the component's ServiceAccount and RBAC from `manifests/base/<component>/` (as admin, to
    /// the running API server) and returns a kubeconfig holding a token for that ServiceAccount, minted
    /// by the TokenRequest API.
    pub fn component_kubeconfig(&self, c: Component) -> Result<PathBuf, ClusterError> {
        let base = manifests_dir().join("base").join(c.folder());
        let sa = base.join("serviceaccount.yaml");
        let rbac = base.join("rbac.yaml");
        let (sa, rbac) = (sa.to_string_lossy(), rbac.to_string_lossy());
        self.admin_kubectl()
            .ok(&["apply", "-n", NAMESPACE, "-f", &sa, "-f", &rbac])?;
        self.service_account_kubeconfig(NAMESPACE, c.name())
    }

    /// A kubeconfig authenticating as ServiceAccount `namespace/name` (which must exist) with a token
    /// valid for a day, written into the plan's dir.
    pub fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> Result<PathBuf, ClusterError> {
        let token = self
            .admin_kubectl()
            .ok(&["create", "token", name, "-n", namespace, "--duration=24h"])?;
        let token = token.trim();
        if token.is_empty() {
            return Err(ClusterError::Api(format!("empty token for {namespace}/{name}")));
        }
        let path = self.dir().join(format!("sa-{namespace}-{name}.kubeconfig"));
        kubeconfig::write(
            &path,
            &self.server(),
            self.ca_pem(),
            &format!("system:serviceaccount:{namespace}:{name}"),
            &Credentials::Token(token),
        )?;
        Ok(path)
    }
}

impl Cluster {
    /// See [`Plan::component_kubeconfig`].
    pub fn component_kubeconfig(&self, c: Component) -> Result<PathBuf, ClusterError> {
        self.as_ref().component_kubeconfig(c)
    }

    /// See [`Plan::service_account_kubeconfig`].
    pub fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> Result<PathBuf, ClusterError> {
        self.as_ref().service_account_kubeconfig(namespace, name)
    }
}
