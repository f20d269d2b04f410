use super::*;
use std::io::Write;

const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: http://10.9.0.1:6443
contexts:
- name: lab
  context:
    cluster: lab
    user: nobody
current-context: lab
users:
- name: nobody
  user: {}
"#;

fn kubeconfig_file() -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(KUBECONFIG.as_bytes()).expect("write kubeconfig");
    file
}

#[tokio::test]
async fn explicit_kubeconfig_is_used() {
    let file = kubeconfig_file();
    let args = KubeArgs {
        kubeconfig: Some(file.path().to_path_buf()),
        master: None,
    };
    let config = config(&args).await.expect("config");
    assert_eq!(config.cluster_url.to_string(), "http://10.9.0.1:6443/");
}

#[tokio::test]
async fn master_overrides_the_kubeconfig_server() {
    let file = kubeconfig_file();
    let args = KubeArgs {
        kubeconfig: Some(file.path().to_path_buf()),
        master: Some("http://127.0.0.1:18080".to_string()),
    };
    let config = config(&args).await.expect("config");
    assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:18080/");
}

#[tokio::test]
async fn missing_kubeconfig_file_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = KubeArgs {
        kubeconfig: Some(dir.path().join("absent")),
        master: None,
    };
    assert!(matches!(config(&args).await, Err(CoreError::Kubeconfig(_))));
}

#[test]
fn master_must_be_a_url() {
    assert!(parse_master("10.0.0.1:6443").is_err());
    assert!(parse_master("not a url").is_err());
    assert!(parse_master("https://10.0.0.1:6443").is_ok());
}
