//! requestId format and the poll error policy's classification.

use std::collections::BTreeSet;

use google_cloud_gax::error::Error;
use google_cloud_gax::error::rpc::{Code, Status};
use google_cloud_gax::polling_error_policy::PollingErrorPolicy;
use google_cloud_gax::polling_state::PollingState;

use super::{MutationId, PollTransientErrors, new_request_id};
use crate::gce::error::GceError;

#[test]
fn request_ids_are_distinct_version_4_uuids() {
    let ids: BTreeSet<String> = (0..1000).map(|_| new_request_id()).collect();
    assert_eq!(ids.len(), 1000);
    for id in &ids {
        let parts: Vec<&str> = id.split('-').collect();
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{id}");
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()), "{id}");
        assert!(parts[2].starts_with('4'), "version nibble: {id}");
        assert!(
            matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
            "variant: {id}"
        );
        assert_ne!(id, "00000000-0000-0000-0000-000000000000");
    }
}

#[test]
fn mutation_id_is_kept_across_call_failures_and_renewed_after_a_failed_operation() {
    let id = MutationId::default();
    let first = id.current();
    assert_eq!(id.current(), first);
    // The call failed (503, 429, transport): GCE may have accepted it, so the retry repeats the id.
    let mut call_failed = GceError::new("create_firewall k8s-fw-a", "backendError");
    call_failed.status = Some(503);
    id.failed(&call_failed);
    call_failed.transport = true;
    id.failed(&call_failed);
    assert_eq!(id.current(), first);
    // The operation ended DONE with an error: the old id would only get that operation back.
    let mut op_failed = GceError::new("create_firewall k8s-fw-a", "backendError");
    op_failed.status = Some(503);
    op_failed.from_operation = true;
    id.failed(&op_failed);
    let second = id.current();
    assert_ne!(second, first);
    assert_eq!(id.current(), second);
}

fn service_error(code: Code) -> Error {
    Error::service(Status::default().set_code(code).set_message("x"))
}

#[test]
fn transient_poll_errors_continue_others_stop() {
    let p = PollTransientErrors;
    let st = PollingState::default();
    assert!(p.on_error(&st, service_error(Code::Unavailable)).is_continue());
    assert!(p.on_error(&st, service_error(Code::NotFound)).is_permanent());
    assert!(
        p.on_error(&st, service_error(Code::InvalidArgument))
            .is_permanent()
    );
}
