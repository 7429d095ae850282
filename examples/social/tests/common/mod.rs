//! What the social example's tests share: the binary started on a free port, and
//! images to upload.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The social binary, stopped on drop; its stderr kept for the test to read.
pub(crate) struct Social {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) log: Arc<Mutex<String>>,
}

impl Drop for Social {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Social {
    /// Starts it with its data in `data`, and `env` besides; the reminder mail a
    /// second after the welcome.
    pub(crate) fn start(data: &Path, push: Option<&str>, env: &[(&str, String)]) -> Self {
        Self::with_args(data, push, env, &["--reminder-after", "1"])
    }

    /// Starts it with its data in `data`, telling `push`, with `env` and the app's
    /// options `args`.
    pub(crate) fn with_args(
        data: &Path,
        push: Option<&str>,
        env: &[(&str, String)],
        args: &[&str],
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_social"));
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--data"])
            .arg(data)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(push) = push {
            command.args(["--push", push]);
        }
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let (_, addr) = proscenium::launch::read_start_line(&mut child).unwrap();
        Self { child, addr, log }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// A `width`×`height` image in `format`.
pub(crate) fn image(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 128]));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}
