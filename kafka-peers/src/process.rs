//! Running a peer's process with a time limit, its output captured.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::PeerError;

/// What a finished process left.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The run as an error message: the exit code and both outputs (their ends, if long).
    pub fn describe(&self) -> String {
        format!(
            "exit code {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            tail(&self.stdout, 8000),
            tail(&self.stderr, 8000)
        )
    }
}

fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Runs `cmd` with `stdin` fed to it, and returns what it printed. A process still running at
/// `timeout` is killed and reported as failed; a non-zero exit is returned as is (the caller
/// decides; see [`Run::success`]).
pub fn run(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Result<Run, PeerError> {
    let program = format!("{:?}", cmd.get_program());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(PeerError::io(format!("starting {program}")))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let input = input.to_vec();
        // A writer thread: the child may fill its output pipes before reading all its input.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let status = wait(&mut child, timeout);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Some(code) => Ok(Run {
            code,
            stdout,
            stderr,
        }),
        None => Err(PeerError::Failed(format!(
            "{program} still running after {timeout:?}, killed\n{}",
            Run {
                code: None,
                stdout,
                stderr
            }
            .describe()
        ))),
    }
}

fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for the child until `timeout`: `Some(exit code)` when it ended, `None` when it was
/// killed for running too long.
pub(crate) fn wait(child: &mut Child, timeout: Duration) -> Option<Option<i32>> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.code()),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
