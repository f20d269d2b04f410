//! The official google-cloud-compute-v1 clients, one per service the controller calls, built
//! once with the same endpoint, credentials and policies.
//!
//! Credentials: anonymous for a plain-HTTP endpoint override (the fake GCE), otherwise
//! application-default credentials (GOOGLE_APPLICATION_CREDENTIALS key file, gcloud ADC, or the
//! metadata server on a GCE VM). Retries are switched off in the clients: the executor retries
//! with backon, so one place decides what is retried and every attempt passes the rate limiter of
//! its quota group.

use std::sync::Arc;
use std::time::Duration;

use google_cloud_compute_v1::client::{
    Addresses, Firewalls, ForwardingRules, HealthChecks, HttpHealthChecks, InstanceGroups, Instances,
    RegionBackendServices, RegionHealthChecks, Regions, Routes, TargetPools,
};
use google_cloud_gax::retry_policy::NeverRetry;

use crate::gce::error::GceError;
use crate::gce::ratelimit::{PollPacing, QuotaGroup, QuotaLimits, RateLimiter};
use crate::gce::request_id::PollTransientErrors;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CredentialsMode {
    /// Anonymous for an `http://` endpoint override, application-default credentials otherwise.
    #[default]
    Auto,
    Anonymous,
    /// Application-default credentials (key file, gcloud ADC, metadata server).
    Adc,
}

#[derive(Debug, Clone)]
pub(crate) struct GceOptions {
    pub project: String,
    pub region: String,
    /// `http://127.0.0.1:PORT` for the fake; None = the real API.
    pub endpoint: Option<String>,
    pub credentials: CredentialsMode,
    /// Client-side rate limit per quota group (reads, writes, operation polls: calls per second
    /// each, 0 = off) and burst.
    pub qps: f64,
    pub burst: u32,
    /// First and longest pause between operation polls (`ops::wait`; doubling in between).
    pub poll_initial: Duration,
    pub poll_max: Duration,
    /// How long one call (including waiting for its operation) may take before it counts as failed.
    pub call_timeout: Duration,
}

impl GceOptions {
    pub(crate) fn new(project: &str, region: &str) -> Self {
        GceOptions {
            project: project.to_owned(),
            region: region.to_owned(),
            endpoint: None,
            credentials: CredentialsMode::Auto,
            qps: 20.0,
            burst: 40,
            poll_initial: Duration::from_millis(200),
            poll_max: Duration::from_secs(5),
            call_timeout: Duration::from_secs(300),
        }
    }

    fn anonymous(&self) -> bool {
        match self.credentials {
            CredentialsMode::Anonymous => true,
            CredentialsMode::Adc => false,
            CredentialsMode::Auto => self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://")),
        }
    }
}

/// Everything that talks to GCE. Cheap to clone (the clients are reference counted).
#[derive(Clone, Debug)]
pub(crate) struct Gce {
    pub project: String,
    pub region: String,
    pub call_timeout: Duration,
    /// Token buckets of GCE's read (get/list), write (mutation) and operation-read (polls)
    /// quota groups.
    limits: Arc<QuotaLimits>,
    /// Pauses between operation polls.
    pub poll_pacing: PollPacing,
    pub metrics: Arc<crate::metrics::Metrics>,
    pub addresses: Addresses,
    pub firewalls: Firewalls,
    pub forwarding_rules: ForwardingRules,
    pub http_health_checks: HttpHealthChecks,
    pub instances: Instances,
    pub routes: Routes,
    pub target_pools: TargetPools,
    pub instance_groups: InstanceGroups,
    pub region_backend_services: RegionBackendServices,
    pub health_checks: HealthChecks,
    pub region_health_checks: RegionHealthChecks,
    pub regions: Regions,
}

/// One builder call per client type, all configured alike. No polling backoff policy: only the
/// client's `until_done()` uses it, and `ops::wait` runs its own loop with `poll_pacing`. The
/// polling error policy keeps polling through transient errors (`request_id`).
macro_rules! build {
    ($ty:ty, $opts:expr, $creds:expr) => {{
        let mut b = <$ty>::builder()
            .with_credentials($creds.clone())
            .with_retry_policy(NeverRetry)
            .with_polling_error_policy(PollTransientErrors);
        if let Some(endpoint) = &$opts.endpoint {
            b = b.with_endpoint(endpoint.clone());
        }
        b.build()
            .await
            .map_err(|e| GceError::new("building the GCE client", e.to_string()))?
    }};
}

impl Gce {
    pub(crate) async fn new(opts: &GceOptions) -> Result<Self, GceError> {
        let creds = if opts.anonymous() {
            google_cloud_auth::credentials::anonymous::Builder::new().build()
        } else {
            google_cloud_auth::credentials::Builder::default()
                .build()
                .map_err(|e| GceError::new("loading application-default credentials", e.to_string()))?
        };
        Ok(Gce {
            project: opts.project.clone(),
            region: opts.region.clone(),
            call_timeout: opts.call_timeout,
            limits: Arc::new(QuotaLimits::new(opts.qps, opts.burst)),
            poll_pacing: PollPacing {
                initial: opts.poll_initial,
                max: opts.poll_max,
            },
            metrics: Arc::new(crate::metrics::Metrics::new()),
            addresses: build!(Addresses, opts, creds),
            firewalls: build!(Firewalls, opts, creds),
            forwarding_rules: build!(ForwardingRules, opts, creds),
            http_health_checks: build!(HttpHealthChecks, opts, creds),
            instances: build!(Instances, opts, creds),
            routes: build!(Routes, opts, creds),
            target_pools: build!(TargetPools, opts, creds),
            instance_groups: build!(InstanceGroups, opts, creds),
            region_backend_services: build!(RegionBackendServices, opts, creds),
            health_checks: build!(HealthChecks, opts, creds),
            region_health_checks: build!(RegionHealthChecks, opts, creds),
            regions: build!(Regions, opts, creds),
        })
    }

    /// The token bucket of a quota group.
    pub(crate) fn limiter(&self, group: QuotaGroup) -> &RateLimiter {
        self.limits.of(group)
    }
}
