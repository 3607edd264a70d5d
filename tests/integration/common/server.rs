//! A minimal HTTP/1.1 server on 127.0.0.1 for tests: each request is answered by a closure
//! (on its own thread, so a slow answer does not hold up the others) and kept in a log.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// What follows `?` in the target, undecoded; empty if none.
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The value of the query parameter `name`, undecoded.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply { status, headers: Vec::new(), body: body.into().into_bytes() }
    }
}

pub struct Server {
    pub port: u16,
    /// Every request seen, in the order they arrived.
    log: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Serves `handler(request) -> (status, body)` until the test process ends.
    pub fn start(handler: impl Fn(&Request) -> (u16, String) + Send + Sync + 'static) -> Server {
        Server::start_with(move |r| {
            let (status, body) = handler(r);
            Reply::json(status, body)
        })
    }

    pub fn start_with(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let handler = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, seen) = (handler.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, &*handler, &seen));
            }
        });
        Server { port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// Every request seen so far, bodies included, in the order they arrived.
    pub fn received(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

fn serve(mut stream: std::net::TcpStream, handler: &dyn Fn(&Request) -> Reply, seen: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let request = Request { method, path, query, headers, body: String::from_utf8_lossy(&body).into_owned() };
    let n = {
        let mut seen = seen.lock().unwrap();
        seen.push(request.clone());
        seen.len()
    };
    let reply = handler(&request);
    let mut head = format!(
        "HTTP/1.1 {} X\r\nx-request-id: r-{n}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    // JSON unless the reply says otherwise (an event stream).
    if !reply.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
        head.push_str("content-type: application/json\r\n");
    }
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let _ = write!(stream, "{head}\r\n");
    let _ = stream.write_all(&reply.body);
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits (up to 20 s) until a server started on `port` accepts connections; `what` names it
/// when it never does.
pub fn wait_listening(port: u16, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// An OpenAI answer calling `calls` (name, arguments as raw JSON text), or giving `text`.
pub fn answer(text: Option<&str>, calls: &[(&str, &str)]) -> String {
    let tool_calls: Vec<serde_json::Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| serde_json::json!({"id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    let mut message = serde_json::json!({"role": "assistant", "content": text});
    if !tool_calls.is_empty() {
        message["tool_calls"] = serde_json::Value::Array(tool_calls);
    }
    serde_json::json!({"model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    .to_string()
}
