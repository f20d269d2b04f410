//! Kubernetes client setup with kube-proxy's flag semantics.

use crate::CoreError;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use std::path::PathBuf;

/// How to reach the API server (same flags as kube-proxy / cloud-controller-manager).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KubeArgs {
    /// Path to a kubeconfig file. Without it: in-cluster config, else the default kubeconfig.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The API server URL; overrides the server named by the kubeconfig or in-cluster config.
    #[arg(long)]
    pub master: Option<String>,
}

/// Builds a client: explicit kubeconfig file, else in-cluster, else the default kubeconfig.
///
/// `--master` overrides the server URL. When only `--master` is given and no other
/// configuration exists, a bare config for that URL is used (a test server without
/// authentication), like `clientcmd.BuildConfigFromFlags(master, "")` does.
pub async fn client(args: &KubeArgs) -> Result<kube::Client, CoreError> {
    crate::tls::install_crypto_provider();
    let config = config(args).await?;
    Ok(kube::Client::try_from(config)?)
}

/// The configuration [`client`] would use (separate so it can be inspected and tested).
pub async fn config(args: &KubeArgs) -> Result<Config, CoreError> {
    let master = args.master.as_deref().map(parse_master).transpose()?;
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => match Config::incluster() {
            Ok(config) => config,
            Err(in_cluster) => match Config::from_kubeconfig(&KubeConfigOptions::default()).await {
                Ok(config) => config,
                Err(kubeconfig) => match &master {
                    Some(url) => Config::new(url.clone()),
                    None => {
                        return Err(CoreError::NoConfig {
                            in_cluster: in_cluster.to_string(),
                            kubeconfig: kubeconfig.to_string(),
                        });
                    }
                },
            },
        },
    };
    if let Some(url) = master {
        config.cluster_url = url;
    }
    Ok(config)
}

fn parse_master(url: &str) -> Result<::http::Uri, CoreError> {
    let uri: ::http::Uri = url
        .parse()
        .map_err(|e: ::http::uri::InvalidUri| CoreError::InvalidMaster {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
    // A bare host:port parses as an authority-only URI; kube needs a scheme to connect.
    if uri.scheme().is_none() || uri.host().is_none() {
        return Err(CoreError::InvalidMaster {
            url: url.to_string(),
            reason: "expected a URL like https://host:port".to_string(),
        });
    }
    Ok(uri)
}

#[cfg(test)]
mod tests;
