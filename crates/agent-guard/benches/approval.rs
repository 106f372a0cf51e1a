//! The approval round trip on loopback, through a real `agent-guard serve`: a client posts an
//! Ask, a watcher sees its `PermissionRequest` on the event stream, answers it, and the
//! waiting client gets the answer. (Issue 19 asks for < 5 ms median.)
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_agent-guard");

struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    /// The id of the next `PermissionRequest`.
    async fn next_request(&mut self) -> String {
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                if frame.contains("event: PermissionRequest") {
                    let data = frame
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .unwrap();
                    let v: Value = serde_json::from_str(data).unwrap();
                    return v["id"].as_str().unwrap().to_owned();
                }
            }
            let chunk = self.resp.chunk().await.unwrap().expect("stream ended");
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

fn round_trip(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        // The bench is one token sending thousands of requests a second on purpose.
        .args(["--rate-limit", "1000000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("agent-guard serve: listening on ")
        .unwrap()
        .to_owned();
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    let mut stream = rt.block_on(async {
        let resp = http
            .get(format!("{base}/api/events"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        Stream {
            resp,
            buf: String::new(),
        }
    });
    let ask = json!({"session": "bench", "agent": "lead", "client": "bench", "call_id": "c1",
        "tool": "file_write", "args": {"file_path": "notes.txt", "content": "x"},
        "message": "[perm-rules] ask rule `file_write`",
        "steps": [{"layer": "perm-rules", "saw": "file_write", "decision": "ask",
                   "code": "p4-config-ask", "message": "ask rule `file_write`"}]});
    c.bench_function("approval_round_trip/loopback", |b| {
        b.iter(|| {
            rt.block_on(async {
                let waiter = {
                    let (http, url, token, ask) = (
                        http.clone(),
                        format!("{base}/api/requests"),
                        token.clone(),
                        ask.clone(),
                    );
                    tokio::spawn(async move {
                        let r = http.post(url).bearer_auth(token).json(&ask).send().await;
                        r.unwrap().json::<Value>().await.unwrap()
                    })
                };
                let id = stream.next_request().await;
                let r = http
                    .post(format!("{base}/api/permissions/{id}"))
                    .bearer_auth(&token)
                    .json(&json!({"decision": "allow", "scope": "once"}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
                let answer = waiter.await.unwrap();
                assert_eq!(answer["decision"], "allow");
            });
        });
    });
    let _ = child.kill();
    let _ = child.wait();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
