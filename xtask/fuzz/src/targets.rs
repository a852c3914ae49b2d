//! The targets the runner knows: kafka-protocol's (`kafka_protocol::fuzzing`) and
//! kafka-auth's `sasl` (`kafka_auth::sasl::fuzzing`), behind one type.

use kafka_protocol::fuzzing as protocol;

/// A fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// One of kafka-protocol's decoders.
    Protocol(protocol::Target),
    /// The SASL state machines and the JAAS parser.
    Sasl,
}

impl Target {
    /// Every target, in the order `all` runs them.
    pub(crate) fn all() -> Vec<Self> {
        protocol::Target::ALL
            .into_iter()
            .map(Self::Protocol)
            .chain([Self::Sasl])
            .collect()
    }

    /// The target's name (also its cargo-fuzz binary name).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Protocol(t) => t.name(),
            Self::Sasl => "sasl",
        }
    }

    /// The target called `name`.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::all().into_iter().find(|t| t.name() == name)
    }

    /// Runs the target's entry point on `data`.
    pub(crate) fn run(self, data: &[u8]) {
        match self {
            Self::Protocol(t) => t.run(data),
            Self::Sasl => kafka_auth::sasl::fuzzing::sasl(data),
        }
    }
}

/// The generated seeds of `target`.
pub(crate) fn seeds(target: Target) -> Vec<Vec<u8>> {
    match target {
        Target::Protocol(t) => protocol::seeds(t),
        Target::Sasl => kafka_auth::sasl::fuzzing::seeds(),
    }
}

/// Seeds made from a golden frame (kafka-protocol's targets only).
pub(crate) fn seeds_from_frame(name: &str, bytes: &[u8]) -> Vec<(Target, Vec<u8>)> {
    protocol::seeds_from_frame(name, bytes)
        .into_iter()
        .map(|(t, s)| (Target::Protocol(t), s))
        .collect()
}
