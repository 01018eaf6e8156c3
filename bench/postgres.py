"""A throwaway PostgreSQL server for the benchmarks that need one (bench/workers, bench/soak --workers):
the Debian package's binaries, a data directory under the benchmark's work directory, a free port
of 127.0.0.1, no fsync. Not a benchmark itself."""

import glob
import os
import shutil
import socket
import subprocess


class Server:
    """A PostgreSQL server in a temporary directory, on a free port of 127.0.0.1."""

    def __init__(self, work):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise SystemExit("PostgreSQL's server binaries are missing (Debian: apt-get install postgresql)")
        self.bin = os.path.dirname(bins[-1])
        self.data = os.path.join(work, "pg")
        os.makedirs(self.data)
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            os.chmod(work, 0o755)
            shutil.chown(self.data, self.user, self.user)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.data} -c fsync=off"
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.data, "log"), "-w", "-o", options, "start")

    def run(self, program, *args):
        cmd = [os.path.join(self.bin, program), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd="/")

    def database(self, name):
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def query(self, url, sql):
        """Rows of one query, through psql (tab-separated, unaligned)."""
        out = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-A", "-t", "-F", "\t", "-c", sql, url], check=True, capture_output=True, text=True, cwd="/").stdout
        return [tuple(line.split("\t")) for line in out.splitlines() if line]
