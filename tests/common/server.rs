//! A minimal HTTP/1.1 server on 127.0.0.1 for tests: each request is answered by a closure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
}

pub struct Server {
    pub port: u16,
    /// Every request seen, in order (`METHOD PATH`).
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Serves `handler(request) -> (status, body)` until the test process ends.
    pub fn start(handler: impl Fn(&Request) -> (u16, String) + Send + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_owned();
                let path = parts.next().unwrap_or("").to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = header.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let request = Request { method, path, body: String::from_utf8_lossy(&body).into_owned() };
                seen.lock().unwrap().push(format!("{} {}", request.method, request.path));
                let (status, body) = handler(&request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nx-request-id: r-{}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    seen.lock().unwrap().len(),
                    body.len()
                );
            }
        });
        Server { port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
