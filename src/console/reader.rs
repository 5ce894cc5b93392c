//! The line reader: `rustyline` (line editing, history) on a thread of its
//! own, so the cord's scheduler and event loop keep running while the user
//! types. The cord asks for a line ([`Request::Read`]) and waits in
//! `wait_woken`; the reader answers through a channel and wakes the cord.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};

use luafiber::runtime::io::CordWaker;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

/// What the cord asks the reader for.
pub enum Request {
    /// A line, after this prompt.
    Read(String),
    /// Adds a chunk to the history (and saves it).
    History(String),
}

/// A read's answer.
pub enum Reply {
    /// A line, without its newline.
    Line(String),
    /// Ctrl-C at the prompt: the chunk so far is dropped.
    Interrupted,
    /// Ctrl-D, or the end of the input.
    Eof,
}

/// The history file: `$HOME/.luafiber_history` (Tarantool's is
/// `~/.tarantool_history`).
fn history_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".luafiber_history"))
}

/// Starts the reader thread; `waker` wakes the cord after each reply.
pub fn start(waker: CordWaker) -> std::io::Result<(Sender<Request>, Receiver<Reply>)> {
    let (req_tx, req_rx) = mpsc::channel::<Request>();
    let (reply_tx, reply_rx) = mpsc::channel();
    // Without bracketed paste, pasted lines arrive as typed ones: each
    // Enter ends a line, and what follows waits in the editor's buffer
    // (kept between reads: the `buffer-redux` feature) for the next read.
    let config = rustyline::Config::builder().bracketed_paste(false).build();
    let mut editor = DefaultEditor::with_config(config).map_err(std::io::Error::other)?;
    let history = history_file();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    std::thread::Builder::new()
        .name("console".into())
        .spawn(move || {
            super::signal::block_in_this_thread();
            for req in req_rx {
                match req {
                    Request::Read(prompt) => {
                        let reply = match editor.readline(&prompt) {
                            Ok(line) => Reply::Line(line),
                            Err(ReadlineError::Interrupted) => {
                                // The cord may be busy in a fiber that never
                                // yields, which would never see this reply.
                                super::signal::forward();
                                Reply::Interrupted
                            }
                            Err(_) => Reply::Eof,
                        };
                        if reply_tx.send(reply).is_err() {
                            break;
                        }
                        waker.wake();
                    }
                    Request::History(chunk) => {
                        let _ = editor.add_history_entry(chunk);
                        if let Some(h) = &history {
                            let _ = editor.save_history(h);
                        }
                    }
                }
            }
        })?;
    Ok((req_tx, reply_rx))
}
