//! Waiting for GCE operations. The client's poller follows the operation until DONE, but
//! returns Ok for an operation that ended DONE *with an error* (GCE reports asynchronous failures
//! that way): [`check_done`] turns those into errors.

use std::future::Future;

use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;

use crate::gce::client::Gce;
use crate::gce::error::GceError;

/// Ok when the operation finished without an error.
pub fn check_done(call: &str, op: &Operation) -> Result<(), GceError> {
    if op.status != Some(Status::Done) {
        return Err(GceError::new(
            call,
            format!("operation {} did not finish", op.name.as_deref().unwrap_or("?")),
        ));
    }
    let first = op.error.as_ref().and_then(|e| e.errors.first());
    if first.is_none() && op.http_error_status_code.is_none() {
        return Ok(());
    }
    let status = op
        .http_error_status_code
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400);
    if first.is_none() && status.is_none() {
        return Ok(());
    }
    let message = first
        .and_then(|e| e.message.clone())
        .or_else(|| op.http_error_message.clone())
        .unwrap_or_else(|| "operation failed".to_owned());
    Err(GceError {
        call: call.to_owned(),
        status,
        reason: first.and_then(|e| e.code.clone()),
        message,
        from_operation: true,
        transport: false,
    })
}

/// Runs `fut` (send + wait for the operation) under the call timeout, then checks the result.
pub async fn wait<F>(gce: &Gce, call: &str, fut: F) -> Result<Operation, GceError>
where
    F: Future<Output = google_cloud_gax::Result<Operation>>,
{
    let op = match tokio::time::timeout(gce.call_timeout, fut).await {
        Err(_) => {
            let mut e = GceError::new(call, format!("no result within {:?}", gce.call_timeout));
            e.transport = true;
            return Err(e);
        }
        Ok(Err(e)) => return Err(GceError::from_gax(call, &e)),
        Ok(Ok(op)) => op,
    };
    check_done(call, &op)?;
    Ok(op)
}

#[cfg(test)]
mod tests;
