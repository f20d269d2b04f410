//! A minimal GCE metadata server, so application-default credentials and "which project/zone am
//! I in" lookups can run against the fake (point GCE_METADATA_HOST at it).
use crate::app::App;

pub struct MetaReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

pub fn handle(app: &App, path: &str, flavor_header: Option<&str>) -> MetaReply {
    let text = |status, body: String| MetaReply {
        status,
        content_type: "application/text",
        body,
    };
    if path == "/" || path == "/computeMetadata/v1" || path == "/computeMetadata/v1/" {
        return text(200, "computeMetadata/\n".into());
    }
    // The real server refuses requests without this header (SSRF protection); clients send it.
    if flavor_header != Some("Google") {
        return text(403, "Missing Metadata-Flavor:Google header.".into());
    }
    let zone = app.cfg.zones.first().cloned().unwrap_or_default();
    let rest = path
        .trim_start_matches("/computeMetadata/v1/")
        .trim_end_matches('/');
    match rest {
        "project/project-id" => text(200, app.cfg.project.clone()),
        "project/numeric-project-id" => text(200, "1000000000001".into()),
        "instance/zone" => text(200, format!("projects/1000000000001/zones/{zone}")),
        "instance/name" | "instance/hostname" => text(200, "svcnet-fake-instance".into()),
        "instance/id" => text(200, "1".into()),
        "instance/service-accounts/default/email" => {
            text(200, "default@svcnet-fake.iam.gserviceaccount.com".into())
        }
        "instance/service-accounts/default/scopes" => {
            text(200, "https://www.googleapis.com/auth/cloud-platform".into())
        }
        "instance/service-accounts" => text(200, "default/\n".into()),
        "instance/service-accounts/default/token" => MetaReply {
            status: 200,
            content_type: "application/json",
            body: r#"{"access_token":"svcnet-fake-token","expires_in":3599,"token_type":"Bearer"}"#.into(),
        },
        _ => text(404, "Not Found".into()),
    }
}
