//! [`Binary`]: the real `sluice serve` process over a configuration file in a fresh temporary
//! directory, its JSON log lines parsed as they come; killed (and its directory removed) on
//! drop. Owns only running the binary; what its logs must say is the tests' business.

use std::io::BufRead;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{TempDir, GUARD};

/// A running `sluice serve`; its configuration must log JSON (`[server.log] format = "json"`).
pub(crate) struct Binary {
    pub child: Child,
    lines: mpsc::Receiver<Value>,
    _dir: TempDir,
}

impl Binary {
    /// Runs `sluice serve --config` over `config` (written to a fresh directory named after
    /// `name`).
    pub(crate) fn start(name: &str, config: &str) -> Binary {
        Self::start_in_shell(name, config, None)
    }

    /// Like [`Binary::start`], through `sh -c "{shell_prefix} exec sluice …"` so a test can set
    /// limits (`ulimit`) first.
    pub(crate) fn start_in_shell(name: &str, config: &str, shell_prefix: Option<&str>) -> Binary {
        let dir = TempDir::new(name);
        let file = dir.join("sluice.toml");
        std::fs::write(&file, config).expect("config");
        let mut command = match shell_prefix {
            Some(prefix) => {
                let mut command = Command::new("sh");
                command
                    .arg("-c")
                    .arg(format!("{prefix} exec \"$0\" serve --config \"$1\""))
                    .arg(env!("CARGO_BIN_EXE_sluice"))
                    .arg(&file);
                command
            }
            None => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
                command.args(["serve", "--config"]).arg(&file);
                command
            }
        };
        let mut child = command
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sluice");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| panic!("log line is not JSON ({err}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Binary {
            child,
            lines,
            _dir: dir,
        }
    }

    /// The next log line whose message starts with `what` (hang guard [`GUARD`]).
    pub(crate) fn next(&self, what: &str) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(GUARD)
                .unwrap_or_else(|_| panic!("no {what:?} log line"));
            if line["fields"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with(what))
            {
                return line;
            }
        }
    }

    /// The next log line whose message is exactly `message` (hang guard [`GUARD`]).
    pub(crate) fn until(&self, message: &str) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(GUARD)
                .unwrap_or_else(|_| panic!("no {message:?} log line"));
            if line["fields"]["message"] == message {
                return line;
            }
        }
    }

    /// Every line logged from now on until none comes for `quiet`.
    pub(crate) fn drain(&self, quiet: Duration) -> Vec<Value> {
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(quiet) {
            lines.push(line);
        }
        lines
    }

    /// The address of the `listening` line.
    pub(crate) fn addr(&self) -> String {
        let listening = self.next("listening");
        listening["fields"]["addr"]
            .as_str()
            .expect("addr")
            .to_owned()
    }

    /// Sends signal `name` (`TERM`, `INT`, …) with `kill`.
    pub(crate) fn signal(&self, name: &str) {
        signal(self.child.id(), name);
    }

    /// Waits for the exit, failing after `within`.
    pub(crate) fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(exit) = self.child.try_wait().expect("try_wait") {
                return exit;
            }
            assert!(Instant::now() < deadline, "did not exit within {within:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Sends signal `name` (`TERM`, `INT`, …) to process `pid` with `kill`.
pub(crate) fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
