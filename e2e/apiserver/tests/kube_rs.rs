//! kube-rs 5 against the stand-in: reflector through restart and 410, status patches, errors, paging,
//! bookmarks, and leader election with kube-lease-manager.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Server, eventually};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{reflector, watcher};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(15);

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().cloned().collect::<BTreeMap<_, _>>()},
        "data": {"v": "1"},
    }))
    .unwrap()
}

/// The test hook that forgets watch history and closes open watches.
async fn compact(s: &Server) {
    let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    c.write_all(
        b"POST /_svcnet/compact HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

#[derive(Default)]
struct Seen {
    inits: usize,
    applied: Vec<String>,
    deleted: Vec<String>,
}

#[tokio::test]
async fn reflector_follows_changes_through_restart_and_410() {
    let mut s = Server::start_with_state(&["--bookmark-interval-ms", "200"]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    api.create(&PostParams::default(), &cm("before", &[]))
        .await
        .unwrap();

    let (reader, writer) = reflector::store();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    let cfg = watcher::Config::default();
    let stream = reflector::reflector(writer, watcher::watcher(api.clone(), cfg));
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            let mut g = seen2.lock().unwrap();
            match ev {
                Ok(watcher::Event::Init) => g.inits += 1,
                Ok(watcher::Event::Apply(o)) => g.applied.push(o.metadata.name.unwrap_or_default()),
                Ok(watcher::Event::Delete(o)) => g.deleted.push(o.metadata.name.unwrap_or_default()),
                _ => {}
            }
        }
    });
    let names = {
        let reader = reader.clone();
        move || {
            let mut n: Vec<String> = reader
                .state()
                .iter()
                .map(|o| o.metadata.name.clone().unwrap_or_default())
                .collect();
            n.sort();
            n
        }
    };
    let data_of = {
        let reader = reader.clone();
        move |name: &str| {
            reader
                .state()
                .iter()
                .find(|o| o.metadata.name.as_deref() == Some(name))
                .and_then(|o| o.data.clone()?.get("v").cloned())
        }
    };
    eventually("initial list", WAIT, || names() == ["before"]).await;

    // ADDED, MODIFIED, DELETED.
    let a = api.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    eventually("ADDED a", WAIT, || names() == ["a", "before"]).await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    eventually("MODIFIED a", WAIT, || data_of("a").as_deref() == Some("2")).await;
    api.delete("before", &DeleteParams::default()).await.unwrap();
    eventually("DELETED before", WAIT, || names() == ["a"]).await;
    assert!(seen.lock().unwrap().deleted.contains(&"before".to_string()));

    // Restart (SIGKILL) with the state file: objects and uids survive, resourceVersions keep growing.
    let rv_before: u64 = api
        .get("a")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    s.restart();
    let a2 = api.get("a").await.unwrap();
    assert_eq!(a2.metadata.uid, a.metadata.uid);
    let b = api.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    let rv_b: u64 = b.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv_b > rv_before, "{rv_b} <= {rv_before}");
    eventually("ADDED b after restart", Duration::from_secs(30), || {
        names() == ["a", "b"]
    })
    .await;

    // 410: history compacted and watches closed; the reflector relists and loses nothing.
    let inits_before = seen.lock().unwrap().inits;
    compact(&s).await;
    api.create(&PostParams::default(), &cm("c", &[])).await.unwrap();
    eventually("relist after 410", Duration::from_secs(30), || {
        seen.lock().unwrap().inits > inits_before
    })
    .await;
    eventually("all objects after relist", WAIT, || names() == ["a", "b", "c"]).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("DELETED after relist", WAIT, || names() == ["b", "c"]).await;
}

#[tokio::test]
async fn watch_too_old_resource_version_is_410_gone() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    api.create(&PostParams::default(), &cm("x", &[])).await.unwrap();
    compact(&s).await;
    let mut w = api.watch(&WatchParams::default(), "1").await.unwrap().boxed();
    match w.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn idle_watch_gets_bookmarks() {
    let s = Server::start(&["--bookmark-interval-ms", "150"]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let created = api.create(&PostParams::default(), &cm("x", &[])).await.unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let mut w = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            }
            .timeout(20),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let mut bookmarks = 0;
    while bookmarks < 2 {
        match tokio::time::timeout(Duration::from_secs(5), w.next()).await {
            Ok(Some(Ok(WatchEvent::Bookmark(b)))) => {
                assert_eq!(b.metadata.resource_version, rv);
                bookmarks += 1;
            }
            other => panic!("expected a bookmark, got {other:?}"),
        }
    }
    // Without allowWatchBookmarks nothing arrives on an idle watch.
    let mut quiet = api
        .watch(&WatchParams::default().disable_bookmarks().timeout(20), &rv)
        .await
        .unwrap()
        .boxed();
    assert!(
        tokio::time::timeout(Duration::from_millis(600), quiet.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn status_subresource_and_service_semantics() {
    let s = Server::start(&[]);
    let api: Api<Service> = Api::namespaced(s.client().await, "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80, "targetPort": 8080}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &svc).await.unwrap();
    let spec = created.spec.clone().unwrap();
    assert!(spec.cluster_ip.as_deref().unwrap().starts_with("10.96."));
    let np = spec.ports.as_ref().unwrap()[0].node_port.unwrap();
    assert!((30000..=32767).contains(&np));
    let hc = spec.health_check_node_port.unwrap();
    assert_ne!(hc, np);
    assert_eq!(
        created.status.clone().unwrap().load_balancer.unwrap().ingress,
        None,
        "status is reset on create"
    );

    let patched = api
        .patch_status(
            "lb",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"type": "ClusterIP"},
                "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}},
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.spec.as_ref().unwrap().type_.as_deref(),
        Some("LoadBalancer"),
        "status writes keep spec"
    );
    let ip = patched.status.unwrap().load_balancer.unwrap().ingress.unwrap()[0]
        .ip
        .clone();
    assert_eq!(ip.as_deref(), Some("203.0.113.7"));

    // Main-resource writes ignore status. Services carry no generation (as upstream).
    let p = api
        .patch(
            "lb",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"externalTrafficPolicy": "Cluster"}, "status": null})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, None);
    assert!(
        p.spec.as_ref().unwrap().health_check_node_port.is_none(),
        "released with ETP Cluster"
    );
    assert_eq!(p.status.unwrap().load_balancer.unwrap().ingress.unwrap().len(), 1);
    let l = api
        .patch(
            "lb",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(l.metadata.labels.unwrap()["x"], "y");

    // Stale update -> 409 Conflict; invalid -> 422 Invalid; missing -> 404 NotFound.
    let mut stale = created.clone();
    stale.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    let err = api
        .replace("lb", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );
    let bad: Service = serde_json::from_value(
        json!({"metadata": {"name": "bad"}, "spec": {"ports": [{"port": 0, "protocol": "ICMP"}]}}),
    )
    .unwrap();
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.reason == "Invalid"),
        "{err:?}"
    );
    let err = api.get("nope").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{err:?}"
    );
    let err = api
        .create(&PostParams::default(), &created_named(&created, "lb"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    // Deleting releases the allocations: the same nodePort can be requested again.
    api.delete("lb", &DeleteParams::default()).await.unwrap();
    let again: Service = serde_json::from_value(json!({"metadata": {"name": "again"},
        "spec": {"type": "NodePort", "clusterIP": spec.cluster_ip, "ports": [{"port": 80, "nodePort": np}]}}))
    .unwrap();
    let again = api.create(&PostParams::default(), &again).await.unwrap();
    assert_eq!(again.spec.unwrap().ports.unwrap()[0].node_port, Some(np));
}

fn created_named(svc: &Service, name: &str) -> Service {
    let mut s = svc.clone();
    s.metadata = kube::api::ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    };
    if let Some(spec) = s.spec.as_mut() {
        spec.cluster_ip = None;
        spec.cluster_ips = None;
        spec.health_check_node_port = None;
        spec.ports.iter_mut().flatten().for_each(|p| p.node_port = None);
    }
    s
}

#[tokio::test]
async fn list_paging_selectors_and_generate_name() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    for i in 0..5 {
        let tier = if i % 2 == 0 { "gold" } else { "silver" };
        api.create(&PostParams::default(), &cm(&format!("cm{i}"), &[("tier", tier)]))
            .await
            .unwrap();
    }
    let mut generated = cm("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let g = api.create(&PostParams::default(), &generated).await.unwrap();
    let gname = g.metadata.name.unwrap();
    assert!(gname.starts_with("gen-") && gname.len() == 9, "{gname}");

    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 2);
        names.extend(page.items.iter().map(|o| o.metadata.name.clone().unwrap()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(names, ["cm0", "cm1", "cm2", "cm3", "cm4", gname.as_str()]);

    let sel = |l: &str| {
        let api = api.clone();
        let l = l.to_string();
        async move {
            let list = api.list(&ListParams::default().labels(&l)).await.unwrap();
            list.items
                .into_iter()
                .map(|o| o.metadata.name.unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(sel("tier=gold").await, ["cm0", "cm2", "cm4"]);
    assert_eq!(
        sel("tier notin (gold)").await,
        ["cm1", "cm3", gname.as_str()],
        "notin also matches objects without the label"
    );
    assert_eq!(sel("!tier").await, [gname.as_str()]);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm3"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let all_ns: Api<ConfigMap> = Api::all(s.client().await);
    let other = all_ns
        .list(&ListParams::default().fields("metadata.namespace=kube-system"))
        .await
        .unwrap();
    assert!(other.items.is_empty());
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let mut w = api.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
    api.delete("held", &DeleteParams::default()).await.unwrap();
    match w.next().await {
        Some(Ok(WatchEvent::Modified(o))) => assert!(o.metadata.deletion_timestamp.is_some()),
        other => panic!("expected MODIFIED with deletionTimestamp, got {other:?}"),
    }
    assert!(api.get("held").await.is_ok());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
        {"op": "remove", "path": "/metadata/finalizers"}]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Deleted(_)))));
    assert!(api.get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn lease_acquired_and_renewed_by_kube_lease_manager() {
    use k8s_openapi::api::coordination::v1::Lease;
    let s = Server::start(&[]);
    let client = s.client().await;
    let m1 = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), "svcnet-test")
        .with_namespace("default")
        .with_identity("one")
        .with_duration(2)
        .with_grace(1)
        .build()
        .await
        .unwrap();
    let (mut rx1, h1) = m1.watch().await;
    tokio::time::timeout(WAIT, async {
        while !*rx1.borrow_and_update() {
            rx1.changed().await.unwrap();
        }
    })
    .await
    .expect("manager one becomes leader");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let first = leases.get("svcnet-test").await.unwrap().spec.unwrap();
    assert_eq!(first.holder_identity.as_deref(), Some("one"));

    // A second candidate does not take a held lease.
    let m2 = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), "svcnet-test")
        .with_namespace("default")
        .with_identity("two")
        .with_duration(2)
        .with_grace(1)
        .build()
        .await
        .unwrap();
    let (mut rx2, h2) = m2.watch().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!*rx2.borrow_and_update(), "two must not lead while one renews");
    let later = leases.get("svcnet-test").await.unwrap().spec.unwrap();
    assert_eq!(later.holder_identity.as_deref(), Some("one"));
    assert!(
        later.renew_time.unwrap().0 > first.renew_time.unwrap().0,
        "lease renewed"
    );

    // One steps down (dropping its receiver releases the lease); two takes over.
    drop(rx1);
    h1.await.unwrap().unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !*rx2.borrow_and_update() {
            rx2.changed().await.unwrap();
        }
    })
    .await
    .expect("manager two becomes leader");
    let after = leases.get("svcnet-test").await.unwrap().spec.unwrap();
    assert_eq!(after.holder_identity.as_deref(), Some("two"));
    drop(rx2);
    let _ = h2.await;
}

#[tokio::test]
async fn streaming_list_and_selector_moves() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    api.create(&PostParams::default(), &cm("in", &[("pick", "yes")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("out", &[])).await.unwrap();

    // sendInitialEvents (kube-rs streaming lists) with a label selector.
    let cfg = watcher::Config::default().streaming_lists().labels("pick=yes");
    let mut w = watcher::watcher(api.clone(), cfg).boxed();
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, w.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["in"]);
    // Labelling "out" moves it into the selection (ADDED); unlabelling "in" moves it out (DELETED).
    api.patch(
        "out",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"pick": "yes"}}})),
    )
    .await
    .unwrap();
    match tokio::time::timeout(WAIT, w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.name.as_deref(), Some("out")),
        other => panic!("expected Apply(out), got {other:?}"),
    }
    api.patch(
        "in",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"pick": null}}})),
    )
    .await
    .unwrap();
    match tokio::time::timeout(WAIT, w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        watcher::Event::Delete(o) => assert_eq!(o.metadata.name.as_deref(), Some("in")),
        other => panic!("expected Delete(in), got {other:?}"),
    }
}

#[tokio::test]
async fn server_side_apply_conflicts_between_managers() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let cfg = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": v}});
    let a = api
        .patch("ssa", &PatchParams::apply("mgr-a"), &Patch::Apply(cfg("a")))
        .await
        .unwrap();
    assert_eq!(a.data.unwrap()["k"], "a");
    let err = api
        .patch("ssa", &PatchParams::apply("mgr-b"), &Patch::Apply(cfg("b")))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );
    let forced = api
        .patch(
            "ssa",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(cfg("b")),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "b");
    // A no-op apply keeps the resourceVersion.
    let again = api
        .patch("ssa", &PatchParams::apply("mgr-b"), &Patch::Apply(cfg("b")))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, forced.metadata.resource_version);
}

#[tokio::test]
async fn metadata_only_list_get_and_watch() {
    let s = Server::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    api.create(&PostParams::default(), &cm("m1", &[("a", "b")]))
        .await
        .unwrap();
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.labels.as_ref().unwrap()["a"], "b");
    let one = api.get_metadata("m1").await.unwrap();
    assert_eq!(
        one.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let meta_api: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(s.client().await, "default");
    let mut w = watcher::watcher(meta_api, watcher::Config::default()).boxed();
    let mut seen = false;
    while let Ok(Some(ev)) = tokio::time::timeout(WAIT, w.next()).await {
        if let watcher::Event::InitApply(o) = ev.unwrap() {
            seen = o.metadata.name.as_deref() == Some("m1");
        }
        if seen {
            break;
        }
    }
    assert!(seen, "metadata watcher listed m1");
}
