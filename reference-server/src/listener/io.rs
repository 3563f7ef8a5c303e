//! The socket as hyper sees it: reads pass through (an end of stream is noted), writes pass through
//! a [`ResponseStream`] that swaps hyper's rejections for problem responses.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::rejections::{Awaiting, ResponseStream};

/// What the connection's task learns from its socket after hyper is done with it.
#[derive(Debug, Default)]
pub(super) struct Observed {
    /// The requests handed to the service and not yet answered.
    pub(super) awaiting: Awaiting,
    /// A response (the application's or a replaced rejection) was written.
    answered: AtomicBool,
    /// A read returned end of stream: the client closed its side.
    client_closed: AtomicBool,
}

impl Observed {
    /// Whether a response was written.
    pub(super) fn answered(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }

    /// Whether the client closed its sending side.
    pub(super) fn client_closed(&self) -> bool {
        self.client_closed.load(Ordering::Relaxed)
    }
}

/// `io` with hyper's writes followed and buffered: each write from hyper is taken whole into `out`
/// (after the previous one went out), with a head held back until it is complete, so hyper's write
/// pattern (one system call per response, usually) is kept.
pub(super) struct ConnIo<IO> {
    io: IO,
    responses: ResponseStream,
    observed: Arc<Observed>,
    /// Bytes taken from hyper and not yet written to `io`, from `written` on.
    out: Vec<u8>,
    written: usize,
}

impl<IO: AsyncRead + AsyncWrite + Unpin> ConnIo<IO> {
    /// Wraps `io`, reporting to `observed`.
    pub(super) fn new(io: IO, observed: Arc<Observed>) -> Self {
        Self {
            io,
            responses: ResponseStream::new(),
            observed,
            out: Vec::new(),
            written: 0,
        }
    }

    /// Writes what is buffered; ready once all of it is on `io`.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.written < self.out.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.out[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.out.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for ConnIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let (before, room) = (buf.filled().len(), buf.remaining());
        let poll = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && room > 0 && buf.filled().len() == before {
            this.observed.client_closed.store(true, Ordering::Relaxed);
        }
        poll
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for ConnIo<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        this.responses
            .write(buf, &this.observed.awaiting, &mut this.out);
        if this.responses.answered() {
            this.observed.answered.store(true, Ordering::Relaxed);
        }
        // Start sending now; what does not fit goes out with the next write or the flush.
        if let Poll::Ready(Err(err)) = this.poll_drain(cx) {
            return Poll::Ready(Err(err));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
