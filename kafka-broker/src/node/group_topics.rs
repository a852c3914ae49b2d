//! The broker's topics as the group coordinator's KIP-848 groups see them (a
//! [`TopicsImage`]: names, ids, partition counts), and the coordinator told when they change
//! (topic creation, deletion, new partitions: on a single node here, in a cluster when the
//! metadata image's topics change, `publish.rs`). Racks are not given: the assignors see
//! none (a single node has one rack at most).

use std::sync::{Arc, Mutex, RwLock};

use crate::group::GroupCoordinator;
use crate::group::consumer::TopicsSnapshot;
use crate::sync::{lock, read, write};
use crate::topics::TopicRegistry;

use super::Broker;

/// A copy of the registry's topics.
fn snapshot(registry: &Mutex<TopicRegistry>) -> TopicsSnapshot {
    let mut image = TopicsSnapshot::default();
    for t in lock(registry).all() {
        image.add(&t.name, t.id, t.partitions);
    }
    image
}

/// Gives the coordinator the registry to read topics from when it loads groups.
pub(super) fn connect(groups: &GroupCoordinator, registry: &Arc<Mutex<TopicRegistry>>) {
    let registry = Arc::clone(registry);
    groups.set_topics_source(Arc::new(move || snapshot(&registry)));
}

/// The topics snapshot the group requests read, rebuilt only when topics change (not copied
/// per heartbeat).
#[derive(Debug, Default)]
pub(crate) struct SharedTopics(RwLock<Arc<TopicsSnapshot>>);

impl Broker {
    /// The topics as the KIP-848 group coordinator sees them now (shared, not copied).
    pub fn topics_image(&self) -> Arc<TopicsSnapshot> {
        Arc::clone(&read(&self.group_topics.0))
    }

    /// Rebuilds the shared snapshot from the registry. Built and stored under the snapshot's
    /// lock, so that two changes at once cannot leave the older snapshot stored.
    pub(super) fn refresh_topics_image(&self) -> Arc<TopicsSnapshot> {
        let mut slot = write(&self.group_topics.0);
        let image = Arc::new(snapshot(&self.topics));
        *slot = Arc::clone(&image);
        image
    }

    /// Topics were created, deleted or changed their partition count: the consumer groups
    /// subscribed to them get their new assignments without rejoining.
    pub fn topics_changed(&self) {
        let image = self.refresh_topics_image();
        self.groups.on_metadata(&*image);
    }
}
