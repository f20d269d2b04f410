//! WATCH: newline-delimited JSON events from a resourceVersion, synthetic ADDED events for "from now",
//! `sendInitialEvents` with the initial-events-end bookmark, periodic BOOKMARKs, `timeoutSeconds`, and an
//! ERROR event carrying a 410 Status when the requested resourceVersion is older than the kept history.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::list::{Filter, present};
use crate::resources::ResourceType;
use crate::store::{EventType, Store};
use crate::table::{self, Include};

/// Default when the client gives no timeoutSeconds (the real apiserver picks 30-60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

pub struct WatchRequest {
    pub rt: ResourceType,
    pub filter: Filter,
    pub resource_version: Option<String>,
    pub timeout: Duration,
    pub bookmarks: bool,
    pub send_initial: bool,
    pub table: Option<Include>,
    /// Send PartialObjectMetadata instead of full objects.
    pub metadata_only: bool,
}

impl WatchRequest {
    pub fn from_query(
        rt: ResourceType,
        filter: Filter,
        q: &HashMap<String, String>,
        table: Option<Include>,
    ) -> Self {
        let flag = |k: &str| q.get(k).is_some_and(|v| v == "true" || v == "1");
        Self {
            rt,
            filter,
            resource_version: q.get("resourceVersion").cloned(),
            timeout: q
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .filter(|t| *t > 0)
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_TIMEOUT),
            bookmarks: flag("allowWatchBookmarks"),
            send_initial: flag("sendInitialEvents"),
            table,
            metadata_only: false,
        }
    }
}

struct Emitter {
    req: WatchRequest,
    tx: mpsc::Sender<Bytes>,
    columns_sent: bool,
}

impl Emitter {
    async fn send(&mut self, etype: &str, obj: &Value) -> bool {
        let object = match self.req.table {
            Some(inc) if etype != "BOOKMARK" && etype != "ERROR" => {
                let mut t = table::table(&self.req.rt, std::slice::from_ref(obj), json!({}), inc);
                if self.columns_sent {
                    t["columnDefinitions"] = json!([]);
                }
                self.columns_sent = true;
                t
            }
            _ if self.req.metadata_only && etype != "BOOKMARK" && etype != "ERROR" => table::partial(obj),
            _ => obj.clone(),
        };
        let mut line = serde_json::to_vec(&json!({"type": etype, "object": object})).unwrap_or_default();
        line.push(b'\n');
        self.tx.send(Bytes::from(line)).await.is_ok()
    }

    async fn bookmark(&mut self, rv: u64, initial_end: bool) -> bool {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj =
            json!({"kind": self.req.rt.kind, "apiVersion": self.req.rt.api_version(), "metadata": meta});
        self.send("BOOKMARK", &obj).await
    }

    async fn gone(&mut self, rv: u64, floor: u64) {
        let e = ApiError::gone(format!("too old resource version: {rv} ({floor})"));
        self.send("ERROR", &e.status()).await;
    }
}

/// Starts the watch; the response body streams until timeout, client disconnect, or compaction.
pub fn start(store: Arc<Store>, req: WatchRequest, bookmark_every: Duration) -> Result<Response, ApiError> {
    let from = match req.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v}")))?,
        ),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(run(store, req, from, tx, bookmark_every));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

async fn run(
    store: Arc<Store>,
    req: WatchRequest,
    from: Option<u64>,
    tx: mpsc::Sender<Bytes>,
    bookmark_every: Duration,
) {
    let mut pulse = store.subscribe();
    let epoch = pulse.borrow_and_update().1;
    let deadline = tokio::time::Instant::now() + req.timeout;
    let initial_snapshot = from.is_none() || req.send_initial;
    let bookmarks = req.bookmarks;
    let send_initial = req.send_initial;
    let mut em = Emitter {
        req,
        tx,
        columns_sent: false,
    };

    // Initial state: a snapshot as ADDED events, or the replay of events after `from`.
    let start = {
        let g = store.lock();
        if initial_snapshot {
            let storage = em.req.rt.storage();
            let objs: Vec<Value> = g
                .objects
                .iter()
                .filter(|(k, o)| k.storage == storage && em.req.filter.matches(o))
                .map(|(_, o)| present(&em.req.rt, o))
                .collect();
            Ok((objs, g.rv, None))
        } else {
            let rv = from.unwrap_or(0);
            match g.events_since(rv) {
                Some(evs) => Ok((Vec::new(), g.rv, Some(evs))),
                None => Err((rv, g.floor)),
            }
        }
    };
    let (initial, mut pos, replay) = match start {
        Ok(s) => s,
        Err((rv, floor)) => {
            em.gone(rv, floor).await;
            return;
        }
    };
    for o in &initial {
        if !em.send("ADDED", o).await {
            return;
        }
    }
    if let Some(evs) = replay {
        for e in evs {
            if !deliver(&mut em, &e).await {
                return;
            }
        }
    }
    if send_initial && !em.bookmark(pos, true).await {
        return;
    }

    let mut tick = tokio::time::interval(bookmark_every);
    tick.tick().await;
    loop {
        tokio::select! {
            changed = pulse.changed() => {
                if changed.is_err() || pulse.borrow_and_update().1 != epoch {
                    return;
                }
                if !drain(&store, &mut em, &mut pos).await {
                    return;
                }
            }
            _ = tick.tick(), if bookmarks => {
                if !drain(&store, &mut em, &mut pos).await || !em.bookmark(pos, false).await {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline) => return,
            _ = em.tx.closed() => return,
        }
    }
}

/// Sends every event after `pos`; false when the watch must end (client gone, or history compacted).
async fn drain(store: &Store, em: &mut Emitter, pos: &mut u64) -> bool {
    let (evs, rv, floor) = {
        let g = store.lock();
        (g.events_since(*pos), g.rv, g.floor)
    };
    let Some(evs) = evs else {
        em.gone(*pos, floor).await;
        return false;
    };
    for e in evs {
        if !deliver(em, &e).await {
            return false;
        }
    }
    *pos = rv;
    true
}

/// One stored event as this watch sees it: selector moves become ADDED/DELETED.
async fn deliver(em: &mut Emitter, e: &crate::store::Event) -> bool {
    if e.key.storage != em.req.rt.storage() {
        return true;
    }
    let now = em.req.filter.matches(&e.object);
    let before = e.old.as_ref().is_some_and(|o| em.req.filter.matches(o));
    let etype = match e.etype {
        EventType::Added if now => "ADDED",
        EventType::Modified if now && before => "MODIFIED",
        EventType::Modified if now => "ADDED",
        EventType::Modified if before => "DELETED",
        EventType::Deleted if now || before => "DELETED",
        _ => return true,
    };
    let obj = present(&em.req.rt, &e.object);
    em.send(etype, &obj).await
}
