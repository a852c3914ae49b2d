//! One broker started in this test process on 127.0.0.1:0 with a temporary data directory,
//! on its own runtime thread, for third-party peers (separate processes) to talk to. Groups
//! form at once (`group.initial.rebalance.delay.ms=0`) unless the settings say otherwise.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_broker::BrokerConfig;

/// A running broker; dropping it stops it.
pub(crate) struct InProcessBroker {
    pub(crate) addr: SocketAddr,
    pub(crate) node_id: i32,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Holds `data/`; taken by [`InProcessBroker::stop`].
    dir: Option<tempfile::TempDir>,
}

impl InProcessBroker {
    /// Starts a broker with `settings` (Kafka's broker keys) applied over the defaults.
    #[allow(clippy::unwrap_used)]
    pub(crate) fn start(settings: &[(&str, &str)]) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), settings)
    }

    /// Starts a broker on the data of `dir` (`dir/data`, as [`Self::stop`] left it): a restart.
    #[allow(clippy::unwrap_used)]
    pub(crate) fn start_in(dir: tempfile::TempDir, settings: &[(&str, &str)]) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let mut config = BrokerConfig {
            server: kafka_broker::config::ServerConfig {
                data_dir: dir.path().join("data"),
                ..Default::default()
            },
            ..Default::default()
        };
        config
            .apply("group.initial.rebalance.delay.ms", "0")
            .unwrap();
        for (key, value) in settings {
            config.apply(key, value).unwrap();
        }
        let node_id = config.server.node_id;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                kafka_broker::run(listener, config, async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Self {
            addr,
            node_id,
            stop: Some(stop_tx),
            thread: Some(thread),
            dir: Some(dir),
        }
    }

    /// `host:port` for a client's bootstrap servers.
    pub(crate) fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// The broker's data directory (`log.dirs`).
    #[allow(clippy::unwrap_used)]
    pub(crate) fn data_dir(&self) -> std::path::PathBuf {
        self.dir.as_ref().unwrap().path().join("data")
    }

    /// Stops the broker (cleanly: its files closed) and waits for it; a broker that failed or
    /// panicked fails the test. The returned folder holds its `data/` until dropped.
    #[allow(clippy::unwrap_used)]
    pub(crate) fn stop(mut self) -> tempfile::TempDir {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            assert!(t.join().is_ok(), "the broker failed or panicked");
        }
        self.dir.take().unwrap()
    }
}

impl Drop for InProcessBroker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
