//! idemspec-tls over real sockets: a rustls server on 127.0.0.1:0 with a throwaway CA's
//! certificate, a client config built from files, one probe each, and the words a failure gets.

mod files;
mod handshake;
mod mutual;
mod plain;
mod support;
