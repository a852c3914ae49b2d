//! Authorization of one request: who asks (the connection's principal and address, as Kafka
//! passes them to its authorizer) and the questions handlers ask ([`Authz`]). Everything is
//! allowed when authorization is off (`authorizer.class.name` not set) and for callers in
//! this process (no peer address).

use kafka_auth::acl::{AclOperation, ResourceType, java_host_address};

use super::context::RequestContext;
use crate::acls::Request;
use crate::node::Broker;

/// The name of the one cluster resource.
pub(crate) const CLUSTER: &str = "kafka-cluster";

/// The authorization questions of one request. Costs nothing when authorization is off.
pub(crate) struct Authz<'a> {
    broker: &'a Broker,
    /// The principal (`User:alice`) and the client's address as Java prints it; `None` when
    /// authorization is off or the caller is in this process (everything allowed).
    who: Option<(String, String)>,
}

impl<'a> Authz<'a> {
    pub(crate) fn new(broker: &'a Broker, ctx: &RequestContext<'_>) -> Self {
        let who = match ctx.peer() {
            Some(peer) if broker.acls.enabled() => {
                Some((ctx.principal().to_string(), java_host_address(peer.ip())))
            }
            _ => None,
        };
        Self { broker, who }
    }

    fn who(&self) -> Option<Request<'_>> {
        self.who
            .as_ref()
            .map(|(principal, host)| Request { principal, host })
    }

    /// Whether the request may do `op` on the resource.
    pub(crate) fn allowed(&self, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        match self.who() {
            Some(who) => self.broker.acls.allowed(who, op, rt, name),
            None => true,
        }
    }

    /// `op` on the cluster.
    pub(crate) fn cluster(&self, op: AclOperation) -> bool {
        self.allowed(op, ResourceType::Cluster, CLUSTER)
    }

    /// `op` on a topic.
    pub(crate) fn topic(&self, op: AclOperation, topic: &str) -> bool {
        self.allowed(op, ResourceType::Topic, topic)
    }

    /// `op` on a group.
    pub(crate) fn group(&self, op: AclOperation, group: &str) -> bool {
        self.allowed(op, ResourceType::Group, group)
    }

    /// `op` on a transactional id.
    pub(crate) fn transactional_id(&self, op: AclOperation, id: &str) -> bool {
        self.allowed(op, ResourceType::TransactionalId, id)
    }

    /// Kafka's `authorizeByResourceType`: `op` on some resource of the type.
    pub(crate) fn on_any(&self, op: AclOperation, rt: ResourceType) -> bool {
        match self.who() {
            Some(who) => self.broker.acls.allowed_on_any(who, op, rt),
            None => true,
        }
    }

    /// The `authorized_operations` bits of a resource.
    pub(crate) fn operations(&self, rt: ResourceType, name: &str) -> i32 {
        match self.who() {
            Some(who) => self.broker.acls.authorized_operations(who, rt, name),
            None => all_of(rt),
        }
    }
}

fn all_of(rt: ResourceType) -> i32 {
    rt.supported_operations()
        .iter()
        .fold(0, |bits, op| bits | (1 << op.code()))
}
