//! `run`, `scale`, `delete`: pods are namespaces on a node's `cbr0` bridge running this binary's hidden
//! `serve-hostname` (like serve_hostname: answers its pod name over TCP (HTTP) and UDP). The VPC agent
//! turns them into EndpointSlices ([`crate::endpoints`]).

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::state::{self, Pod, State};
use crate::{netns, procs};

/// Creates or removes pods of `app` until there are `replicas`.
/// Creates or deletes pods of `app` until it has `replicas`. Deleted pods first spend `grace` as
/// terminating endpoints (still answering), then go away.
pub fn scale(dir: &Path, app: &str, replicas: usize, port: Option<u16>, grace: Duration) -> Result<()> {
    let mut st = state::load(dir)?;
    let have: Vec<Pod> = st.pods.iter().filter(|p| p.app == app).cloned().collect();
    let port = match (port, have.first()) {
        (Some(p), _) => p,
        (None, Some(p)) => p.port,
        (None, None) => bail!("no pods of {app}: give --port"),
    };
    for _ in have.len()..replicas {
        let pod = create(dir, &mut st, app, port)?;
        println!("pod/{} created on {} ({})", pod.name, pod.node, pod.ip);
    }
    // Newest first, like a ReplicaSet scaling down.
    let going: Vec<Pod> = have
        .iter()
        .rev()
        .take(have.len().saturating_sub(replicas))
        .cloned()
        .collect();
    if !going.is_empty() && !grace.is_zero() {
        for p in st
            .pods
            .iter_mut()
            .filter(|p| going.iter().any(|g| g.name == p.name))
        {
            p.terminating = true;
            println!("pod/{} terminating ({}s grace)", p.name, grace.as_secs_f32());
        }
        state::save(dir, &st)?;
        std::thread::sleep(grace);
    }
    for pod in &going {
        remove(&mut st, pod);
        println!("pod/{} deleted", pod.name);
    }
    state::save(dir, &st)
}

pub fn delete(dir: &Path, app: &str, grace: Duration) -> Result<()> {
    scale(dir, app, 0, Some(0), grace)
}

fn create(dir: &Path, st: &mut State, app: &str, port: u16) -> Result<Pod> {
    if st.nodes.is_empty() {
        bail!("no nodes");
    }
    st.next_seq += 1;
    let seq = st.next_seq;
    let node = st.nodes[(seq as usize - 1) % st.nodes.len()].clone();
    let pod = Pod {
        name: format!("{app}-{seq:05x}"),
        app: app.to_owned(),
        ns: format!("{}-pod-{seq}", st.prefix),
        ip: format!("10.64.{}.{}", node.index, 9 + seq),
        node: node.name.clone(),
        port,
        seq,
        terminating: false,
    };
    // Recorded first so `down` removes the namespace even if wiring fails.
    st.pods.push(pod.clone());
    state::save(dir, st)?;
    netns::add(&pod.ns)?;
    let link = format!("p{seq}");
    netns::veth(&node.ns, &link, &pod.ns, "eth0")?;
    netns::ip(&node.ns, &["link", "set", &link, "master", "cbr0"])?;
    netns::ip(
        &pod.ns,
        &["addr", "add", &format!("{}/24", pod.ip), "dev", "eth0"],
    )?;
    netns::ip(&pod.ns, &["route", "add", "default", "via", &node.bridge_ip()])?;
    let args = vec![
        "serve-hostname".to_string(),
        "--name".into(),
        pod.name.clone(),
        "--port".into(),
        port.to_string(),
    ];
    let pid = procs::spawn(dir, &pod.ns, &pod.name, &std::env::current_exe()?, &args)?;
    st.pids.push(pid);
    Ok(pod)
}

fn remove(st: &mut State, pod: &Pod) {
    netns::del(&pod.ns);
    st.pods.retain(|p| p.name != pod.name);
}

/// The pod's server: TCP answers an HTTP request (or any bytes) with the name; UDP echoes the name.
pub fn serve_hostname(name: &str, port: u16) -> Result<()> {
    let tcp = TcpListener::bind(("0.0.0.0", port))?;
    let udp = UdpSocket::bind(("0.0.0.0", port))?;
    let uname = name.to_owned();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((_, peer)) = udp.recv_from(&mut buf) {
            let _ = udp.send_to(format!("{uname}\n").as_bytes(), peer);
        }
    });
    println!("serving {name} on :{port}");
    for conn in tcp.incoming() {
        let Ok(mut c) = conn else { continue };
        let body = format!("{name}\n");
        std::thread::spawn(move || {
            let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        });
    }
    Ok(())
}
