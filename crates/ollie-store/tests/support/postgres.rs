//! A throwaway PostgreSQL server for tests: its own data directory, a free port on 127.0.0.1,
//! stopped when dropped. Built from the Debian package's binaries (`initdb`, `pg_ctl`); a test
//! that needs one fails, with how to install it, where they are missing. As root the server runs
//! as the `postgres` user, as PostgreSQL requires.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Server {
    _dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
    pub port: u16,
    user: Option<String>,
}

fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten().map(|e| e.path().join("bin")).filter(|p| p.join("initdb").exists()).collect();
    found.sort();
    if let Some(dir) = found.pop() {
        return dir;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).find(|p| p.join("initdb").exists()).expect("PostgreSQL's initdb not found: install the server (Debian: apt-get install postgresql)")
}

impl Server {
    pub fn start() -> Server {
        let dir = tempfile::Builder::new().prefix("ollie-pg-").tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let root = is_root();
        let user = root.then(|| "postgres".to_string());
        if root {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let status = Command::new("chown").args(["postgres:postgres"]).arg(&data).status().expect("chown");
            assert!(status.success(), "chown of the test server's data directory to postgres failed (is there a `postgres` user?)");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Server { data, bin: bin_dir(), port, user, _dir: dir };
        server.run("initdb", &["-D", &server.data_str(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
        server.up();
        server
    }

    fn data_str(&self) -> String {
        self.data.display().to_string()
    }

    /// One of the server's programs, run as the server's user.
    fn command(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        let mut cmd = match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.current_dir("/");
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(out.status.success(), "{program} {args:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn up(&self) {
        let options = format!("-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off -c max_connections=50", self.port, self.data_str());
        let log = self.data.join("server.log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data_str(), "-l", &log, "-w", "-t", "60", "-o", &options, "start"]);
    }

    /// Stops the server at once (as a crash would: no clean shutdown), then starts it again.
    pub fn restart(&self) {
        self.run("pg_ctl", &["-D", &self.data_str(), "-m", "immediate", "-w", "stop"]);
        self.up();
    }

    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data_str(), "-m", "immediate", "-w", "stop"]);
    }

    pub fn start_again(&self) {
        self.up();
    }

    /// A new, empty database on the server; its connection string.
    pub fn database(&self, name: &str) -> String {
        self.run("createdb", &["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", name]);
        format!("postgresql://postgres@127.0.0.1:{}/{name}", self.port)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

fn is_root() -> bool {
    // The effective user, as `id -u` prints it (no libc binding needed for one test helper).
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").args(["-D", &self.data_str(), "-m", "immediate", "-w", "stop"]).output();
    }
}
