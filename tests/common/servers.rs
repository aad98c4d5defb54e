//! Real servers on loopback for the remote-shard tests: nginx (HTTP, and Google Cloud Storage's
//! XML paths through a service-account key that points there), s3s-fs (an S3 server over a
//! folder, which checks the requests' signatures), and a fault proxy that cuts connections,
//! stalls or delays answers. tools/test.sh installs the servers; a test that cannot start them
//! fails, saying which is missing.
//!
//! Each server runs under `sh`, which kills it when the test process's end closes its standard
//! input: nothing outlives the tests.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The S3 server's bucket, and its credentials.
pub const BUCKET: &str = "training";
const ACCESS_KEY: &str = "gpuprep-test";
const SECRET_KEY: &str = "gpuprep-test-secret";

/// The servers, started once per test process over `root`: `root/www` is nginx's document
/// root, `root/s3/training` the S3 bucket.
pub struct Servers {
    pub root: PathBuf,
    pub http_port: u16,
    _guards: Vec<Child>,
}

impl Servers {
    pub fn www(&self) -> PathBuf {
        self.root.join("www")
    }

    pub fn bucket(&self) -> PathBuf {
        self.root.join("s3").join(BUCKET)
    }

    pub fn http(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.http_port)
    }
}

/// The servers, started on first use. The environment points the S3 and GCS clients at them:
/// `AWS_ENDPOINT_URL` and credentials for s3://, a service-account key whose base URL is nginx
/// (so gs://BUCKET/KEY is nginx's /BUCKET/KEY) for gs://.
pub fn servers() -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(start)
}

fn start() -> Servers {
    let root = std::env::temp_dir().join(format!("gpuprep-servers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["www", "s3/training", "nginx/tmp"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let [http_port, s3_port] = free_ports();
    let conf = root.join("nginx/nginx.conf");
    let temp = root.join("nginx/tmp");
    let user = if is_root() { "user root root;" } else { "" };
    std::fs::write(
        &conf,
        format!(
            "{user}\ndaemon off;\nworker_processes 1;\npid {pid};\nerror_log {log};\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {t}/body;\n  \
             proxy_temp_path {t}/proxy;\n  fastcgi_temp_path {t}/fastcgi;\n  \
             uwsgi_temp_path {t}/uwsgi;\n  scgi_temp_path {t}/scgi;\n  \
             server {{\n    listen 127.0.0.1:{http_port};\n    root {www};\n    \
             location /forbidden/ {{ return 403; }}\n  }}\n}}\n",
            pid = root.join("nginx/nginx.pid").display(),
            log = root.join("nginx/error.log").display(),
            t = temp.display(),
            www = root.join("www").display(),
        ),
    )
    .unwrap();
    let nginx = guarded(
        &binary("nginx"),
        &[
            "-e",
            "stderr",
            "-p",
            &root.join("nginx").display().to_string(),
            "-c",
            &conf.display().to_string(),
        ],
        &root,
    );
    let s3 = guarded(
        &binary("s3s-fs"),
        &[
            "--host",
            "127.0.0.1",
            "--port",
            &s3_port.to_string(),
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
            &root.join("s3").display().to_string(),
        ],
        &root.join("s3"),
    );
    wait_for(http_port, "nginx");
    wait_for(s3_port, "s3s-fs");
    let gcs_key = format!(
        r#"{{"private_key": "unused", "private_key_id": "unused", "client_email": "unused",
            "disable_oauth": true, "gcs_base_url": "http://127.0.0.1:{http_port}"}}"#
    );
    for (name, value) in [
        ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{s3_port}")),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("GOOGLE_SERVICE_ACCOUNT_KEY", gcs_key),
    ] {
        std::env::set_var(name, value);
    }
    Servers {
        root,
        http_port,
        _guards: vec![nginx, s3],
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// A server program: in `GPUPREP_TEST_SERVERS` (where tools/test.sh installs them), on the
/// PATH, or in /usr/sbin (Debian's nginx).
fn binary(name: &str) -> PathBuf {
    let dirs = std::env::var_os("GPUPREP_TEST_SERVERS")
        .into_iter()
        .chain(std::env::var_os("PATH"))
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin")]);
    for dir in dirs {
        let path = dir.join(name);
        if path.is_file() {
            return path;
        }
    }
    panic!(
        "{name} is not installed: the remote-shard tests run real servers (tools/test.sh \
         installs nginx from Debian and s3s-fs from crates.io into target/servers/bin)"
    );
}

/// `program args…` under `sh`, which kills it when its standard input (held by the returned
/// child) closes, at the latest when this process ends, then removes `then_remove`.
fn guarded(program: &Path, args: &[&str], then_remove: &Path) -> Child {
    let quoted: Vec<String> = std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "{} </dev/null & server=$!; cat >/dev/null; kill $server; wait; rm -rf '{}'",
        quoted.join(" "),
        then_remove.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

/// Two ports free now (held together while asked for, so that they differ).
fn free_ports() -> [u16; 2] {
    let listeners = [(); 2].map(|()| TcpListener::bind("127.0.0.1:0").unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

fn wait_for(port: u16, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what} did not start listening on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the fault proxy does to the connections it takes from now on.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Passes everything through.
    None,
    /// Closes the next `times` connections after `bytes` bytes of their answers.
    Cut { bytes: usize, times: usize },
    /// Closes every connection after `bytes` bytes of its answer.
    CutAlways { bytes: usize },
    /// Closes the next connection after `bytes` bytes, then replaces the file at `path` with
    /// `with` (the object changes between the answer and its resumption).
    CutAndReplace {
        bytes: usize,
        path: PathBuf,
        with: Vec<u8>,
    },
    /// Takes requests and never answers.
    Stall,
    /// Waits this long before passing on each piece of an answer.
    Delay(Duration),
}

/// A TCP proxy on loopback in front of `upstream`, doing what its fault says.
pub struct Proxy {
    pub port: u16,
    fault: Arc<Mutex<Fault>>,
    /// The clients' connections taken so far.
    clients: Arc<Mutex<Vec<TcpStream>>>,
    /// Answers it cut.
    cuts: Arc<Mutex<usize>>,
}

impl Proxy {
    pub fn new(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fault = Arc::new(Mutex::new(Fault::None));
        let clients = Arc::new(Mutex::new(Vec::new()));
        let cuts = Arc::new(Mutex::new(0));
        let (f, c, cut) = (Arc::clone(&fault), Arc::clone(&clients), Arc::clone(&cuts));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                c.lock().unwrap().push(client.try_clone().unwrap());
                let fault = next_fault(&f);
                let cut = Arc::clone(&cut);
                std::thread::spawn(move || relay(client, upstream, fault, &cut));
            }
        });
        Self {
            port,
            fault,
            clients,
            cuts,
        }
    }

    /// The fault for the connections taken from now on; the open ones (a client's idle pool)
    /// are closed, so that the next requests come through new ones.
    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
        for client in self.clients.lock().unwrap().iter() {
            let _ = client.shutdown(Shutdown::Both);
        }
    }

    /// Answers cut so far.
    pub fn cuts(&self) -> usize {
        *self.cuts.lock().unwrap()
    }
}

/// The fault of the connection taken now (counting down `Cut`'s times).
fn next_fault(fault: &Mutex<Fault>) -> Fault {
    let mut fault = fault.lock().unwrap();
    match &mut *fault {
        Fault::Cut { bytes, times } if *times > 0 => {
            *times -= 1;
            Fault::CutAlways { bytes: *bytes }
        }
        Fault::Cut { .. } => Fault::None,
        Fault::CutAndReplace { .. } => std::mem::replace(&mut *fault, Fault::None),
        other => other.clone(),
    }
}

fn relay(client: TcpStream, upstream: u16, fault: Fault, cuts: &Mutex<usize>) {
    if let Fault::Stall = fault {
        // Reads the request, answers nothing, until the client gives up.
        let mut sink = [0u8; 4096];
        let mut client = client;
        while client.read(&mut sink).is_ok_and(|n| n > 0) {}
        return;
    }
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let (mut to_server, mut from_client) =
        (server.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let (mut from_server, mut to_client) = (server, client);
    let limit = match &fault {
        Fault::CutAlways { bytes } | Fault::CutAndReplace { bytes, .. } => Some(*bytes),
        _ => None,
    };
    let mut sent = 0;
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = match from_server.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Fault::Delay(delay) = fault {
            std::thread::sleep(delay);
        }
        let n = limit.map_or(n, |l| n.min(l - sent));
        if to_client.write_all(&buf[..n]).is_err() {
            break;
        }
        sent += n;
        if limit == Some(sent) {
            if let Fault::CutAndReplace { path, with, .. } = &fault {
                std::fs::write(path, with).unwrap();
            }
            break;
        }
    }
    if limit == Some(sent) {
        *cuts.lock().unwrap() += 1;
    }
    let _ = to_client.shutdown(Shutdown::Both);
    let _ = from_server.shutdown(Shutdown::Both);
}
