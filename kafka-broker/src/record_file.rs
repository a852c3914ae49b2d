//! Small files of Kafka metadata records: a single node's security state (SCRAM credentials,
//! ACLs) kept as the records a cluster's metadata log would hold. Each record is framed as in
//! the metadata log and written as a 4-byte length, the record, and its CRC-32C; the whole
//! file is rewritten atomically (temporary file, fsync, rename, directory fsync) on every
//! change, so a torn or damaged file means damage, not a crash, and is refused.

use std::path::Path;

use bytes::Bytes;
use kafka_protocol::metadata::MetadataRecord;

use crate::error::BrokerError;

/// Largest record accepted when reading a file back.
const MAX_RECORD: usize = 64 * 1024;

/// The records of `path`; none when the file does not exist.
pub fn read(path: &Path) -> Result<Vec<MetadataRecord>, BrokerError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            parse(&bytes).map_err(|e| BrokerError::Config(format!("{}: {e}", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Writes `records` (version 0 of each) as the whole content of `path`.
pub fn write(path: &Path, records: &[MetadataRecord]) -> Result<(), BrokerError> {
    let mut out = Vec::new();
    for record in records {
        let bytes = record.encode(0).map_err(|e| {
            BrokerError::Config(format!(
                "encoding a {} for {}: {e}",
                record.name(),
                path.display()
            ))
        })?;
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(&bytes);
        out.extend_from_slice(&crc32c::crc32c(&bytes).to_be_bytes());
    }
    let tmp = path.with_extension("records.tmp");
    std::fs::write(&tmp, out)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn parse(mut bytes: &[u8]) -> Result<Vec<MetadataRecord>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
            return Err("truncated record length".into());
        };
        let len = u32::from_be_bytes(*len) as usize;
        if len > MAX_RECORD || rest.len() < len + 4 {
            return Err(format!("record of {len} bytes does not fit"));
        }
        let (body, rest) = rest.split_at(len);
        let (crc, rest) = rest.split_at(4);
        if crc32c::crc32c(body).to_be_bytes() != crc {
            return Err("record CRC mismatch".into());
        }
        let (record, _) = MetadataRecord::decode(&Bytes::copy_from_slice(body))
            .map_err(|e| format!("record: {e}"))?;
        out.push(record);
        bytes = rest;
    }
    Ok(out)
}
