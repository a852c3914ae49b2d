//! A private network of Linux network namespaces for a cluster test: one namespace per node
//! and one for the clients, each with a veth pair whose other end is a port of a bridge in a
//! hub namespace, addresses 10.231.X.Y/24 that exist only inside these namespaces. Nothing
//! touches this machine's own interfaces or routes. Names carry the test process's pid and a
//! counter, so concurrent tests and runs never share one; everything is deleted on drop, also
//! when the test fails.
//!
//! Two kinds of partition, with `ip` alone (`tc` may lack its filter actions in a container,
//! `iptables` and `nft` may be missing):
//! - [`Net::cut_from_peers`]: blackhole routes inside the node namespaces, between one node and
//!   every other node; the clients still reach it (an old leader that clients can talk to and
//!   its replicas cannot).
//! - [`Net::isolate`]: the node's veth port in the hub set down; nobody reaches it.
//!
//! Namespaces left by a test process that was killed (its pid is gone) are deleted by the
//! next [`Net::create`].

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::harness::Place;

static NEXT: AtomicU32 = AtomicU32::new(0);

pub(crate) struct Net {
    hub: String,
    client: String,
    /// Node id -> its namespace.
    nodes: BTreeMap<i32, String>,
    subnet: String,
    /// Every namespace made, for the teardown.
    made: Vec<String>,
}

/// Runs `ip ARGS`; the error names the command and what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Net {
    /// Namespaces for nodes `ids` and the clients, all on one bridge. `Err` says why they
    /// could not be made (no `ip`, not root, no namespaces in this container...).
    pub(crate) fn create(ids: &[i32]) -> Result<Self, String> {
        remove_leftovers();
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("krs{}x{k}", std::process::id());
        // A third octet per net, for readable logs; the nets never see each other anyway.
        let third = (std::process::id() * 7 + k) % 250 + 1;
        let mut net = Self {
            hub: format!("{prefix}-hub"),
            client: format!("{prefix}-cl"),
            nodes: ids
                .iter()
                .map(|&id| (id, format!("{prefix}-n{id}")))
                .collect(),
            subnet: format!("10.231.{third}"),
            made: Vec::new(),
        };
        net.build()?;
        Ok(net)
    }

    fn add_ns(&mut self, name: &str) -> Result<(), String> {
        // A leftover of a killed run with a recycled pid.
        let _ = ip(&["netns", "del", name]);
        ip(&["netns", "add", name])?;
        self.made.push(name.to_owned());
        ip(&["-n", name, "link", "set", "lo", "up"])
    }

    fn build(&mut self) -> Result<(), String> {
        let hub = self.hub.clone();
        self.add_ns(&hub)?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        let mut ends: Vec<(String, String, String)> = self
            .nodes
            .iter()
            .map(|(&id, ns)| (ns.clone(), Self::port(id), self.node_ip(id)))
            .collect();
        ends.push((self.client.clone(), "vcl".to_owned(), self.client_ip()));
        for (ns, port, addr) in ends {
            self.add_ns(&ns)?;
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// The hub's end of node `id`'s veth pair.
    fn port(id: i32) -> String {
        format!("vn{id}")
    }

    pub(crate) fn node_ip(&self, id: i32) -> String {
        format!("{}.{}", self.subnet, 10 + id)
    }

    pub(crate) fn client_ip(&self) -> String {
        format!("{}.2", self.subnet)
    }

    /// Where node `id` runs, for [`crate::harness::Cluster::placed`].
    pub(crate) fn place(&self, id: i32) -> Place {
        Place {
            netns: Some(self.nodes[&id].clone()),
            host: self.node_ip(id),
        }
    }

    /// Moves the calling thread (and the threads and processes it starts from now on) into
    /// the clients' namespace.
    pub(crate) fn enter_client(&self) -> Result<(), String> {
        let path = format!("/var/run/netns/{}", self.client);
        let f = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&f),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .map_err(|e| format!("setns {path}: {e}"))
    }

    /// Blackhole routes between node `id` and every other node, both ways; the clients
    /// still reach it and it them.
    pub(crate) fn cut_from_peers(&self, id: i32) -> Result<(), String> {
        self.peer_routes(id, "add")
    }

    /// Removes the routes of [`Self::cut_from_peers`].
    pub(crate) fn heal_peers(&self, id: i32) -> Result<(), String> {
        self.peer_routes(id, "del")
    }

    fn peer_routes(&self, id: i32, op: &str) -> Result<(), String> {
        for (&other, ns) in &self.nodes {
            if other == id {
                continue;
            }
            let me = &self.nodes[&id];
            ip(&[
                "-n",
                me,
                "route",
                op,
                "blackhole",
                &format!("{}/32", self.node_ip(other)),
            ])?;
            ip(&[
                "-n",
                ns,
                "route",
                op,
                "blackhole",
                &format!("{}/32", self.node_ip(id)),
            ])?;
        }
        Ok(())
    }

    /// Node `id`'s port in the hub down: nobody reaches it, it reaches nobody.
    pub(crate) fn isolate(&self, id: i32) -> Result<(), String> {
        ip(&["-n", &self.hub, "link", "set", &Self::port(id), "down"])
    }

    /// Node `id`'s port in the hub up again.
    pub(crate) fn reconnect(&self, id: i32) -> Result<(), String> {
        ip(&["-n", &self.hub, "link", "set", &Self::port(id), "up"])
    }
}

/// Deletes the namespaces of test processes that are gone (`krs<pid>x...`).
fn remove_leftovers() {
    let Ok(entries) = std::fs::read_dir("/var/run/netns") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("krs")
            .and_then(|rest| rest.split('x').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.made.iter().rev() {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("teardown: {e}");
            }
        }
    }
}
