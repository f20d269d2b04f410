//! The instance's PKI, generated in-process: a CA, the API server's serving certificate, client
//! certificates for the admin and kube-controller-manager, and the ServiceAccount token signing key.
//! ECDSA P-256 throughout (Kubernetes accepts it for all of these, and ring generates it quickly).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::ClusterError;

/// A PEM certificate and key on disk, and the same PEM text for kubeconfigs.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Every file the control plane needs.
#[derive(Clone, Debug)]
pub struct Pki {
    pub ca: CertFiles,
    pub apiserver: CertFiles,
    pub admin: CertFiles,
    pub controller_manager: CertFiles,
    /// ServiceAccount token signing key (private) and its public half.
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
}

/// Who a client certificate names: RBAC sees CN as the user and O as groups.
struct Subject<'a> {
    cn: &'a str,
    org: Option<&'a str>,
}

/// Writes the PKI into `dir`. `server_ips` and the usual in-cluster names are the serving certificate's
/// subject alternative names.
pub fn generate(dir: &Path, server_ips: &[IpAddr]) -> Result<Pki, ClusterError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "svcnet-testcluster-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca = write(dir, "ca", ca_cert.pem(), ca_key.serialize_pem())?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut names: Vec<SanType> = server_ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    for dns in [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ] {
        names.push(SanType::DnsName(dns.try_into()?));
    }
    let apiserver = leaf(
        dir,
        "apiserver",
        &issuer,
        Subject {
            cn: "kube-apiserver",
            org: None,
        },
        names,
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let admin = client(
        dir,
        "admin",
        &issuer,
        Subject {
            cn: "svcnet-test-admin",
            org: Some("system:masters"),
        },
    )?;
    // The user the bootstrap RBAC policy binds to system:kube-controller-manager.
    let controller_manager = client(
        dir,
        "controller-manager",
        &issuer,
        Subject {
            cn: "system:kube-controller-manager",
            org: None,
        },
    )?;

    let sa = KeyPair::generate()?;
    let sa_key = dir.join("sa.key");
    let sa_pub = dir.join("sa.pub");
    write_file(&sa_key, &sa.serialize_pem())?;
    write_file(&sa_pub, &sa.public_key_pem())?;
    Ok(Pki {
        ca,
        apiserver,
        admin,
        controller_manager,
        sa_key,
        sa_pub,
    })
}

fn client(
    dir: &Path,
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
    subject: Subject<'_>,
) -> Result<CertFiles, ClusterError> {
    leaf(
        dir,
        name,
        issuer,
        subject,
        Vec::new(),
        ExtendedKeyUsagePurpose::ClientAuth,
    )
}

fn leaf(
    dir: &Path,
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
    subject: Subject<'_>,
    names: Vec<SanType>,
    usage: ExtendedKeyUsagePurpose,
) -> Result<CertFiles, ClusterError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.subject_alt_names = names;
    params.distinguished_name.push(DnType::CommonName, subject.cn);
    if let Some(org) = subject.org {
        params.distinguished_name.push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer)?;
    write(dir, name, cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, cert_pem: String, key_pem: String) -> Result<CertFiles, ClusterError> {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    write_file(&cert, &cert_pem)?;
    write_file(&key, &key_pem)?;
    Ok(CertFiles {
        cert,
        key,
        cert_pem,
        key_pem,
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), ClusterError> {
    std::fs::write(path, text).map_err(ClusterError::io(format!("writing {}", path.display())))
}
