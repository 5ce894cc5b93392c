//! The TLS client configurations of `http.client`: master's options
//! `verify_peer`, `verify_host`, `ca_file`, `ca_path`, `ssl_cert` and
//! `ssl_key` (libcurl's `CURLOPT_SSL_VERIFYPEER`, `SSL_VERIFYHOST`,
//! `CAINFO`, `CAPATH`, `SSLCERT`, `SSLKEY`) turned into a rustls
//! [`ClientConfig`] over the `ring` provider.
//!
//! The trusted roots are the system's store (`rustls-native-certs`: the
//! file and directory OpenSSL would read, `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` honoured), as libcurl reads the system bundle, loaded
//! once per process; `ca_file` (a PEM bundle) and `ca_path` (a directory
//! of PEM files) replace it. Building a configuration reads files, so it
//! runs off the cord ([`build`] is called on the blocking pool).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// What a request asked of TLS: the options of master's `httpc.c`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Options {
    /// `verify_peer` (default true): check the server's certificate chain.
    pub verify_peer: bool,
    /// `verify_host` (default true): check that the certificate names the
    /// host.
    pub verify_host: bool,
    /// `ca_file`: a PEM file of trusted certificates.
    pub ca_file: Option<String>,
    /// `ca_path`: a directory of PEM files of trusted certificates.
    pub ca_path: Option<String>,
    /// `ssl_cert`: the client's certificate chain (PEM).
    pub ssl_cert: Option<String>,
    /// `ssl_key`: the client certificate's private key (PEM; default: in
    /// `ssl_cert`'s file).
    pub ssl_key: Option<String>,
}

impl Options {
    /// Whether the configuration reads no file of the caller's (so it may
    /// be kept and shared: only the system store, read once).
    pub fn is_default_store(&self) -> bool {
        self.ca_file.is_none()
            && self.ca_path.is_none()
            && self.ssl_cert.is_none()
            && self.ssl_key.is_none()
    }
}

/// Why a configuration could not be built: libcurl's error names the
/// option (`CURLE_SSL_CACERT_BADFILE`, `CURLE_SSL_CERTPROBLEM`), the
/// detail follows.
#[derive(Debug)]
pub(super) struct ConfigError(pub String);

/// The `ring` provider. rustls marks `ring::default_provider` deprecated
/// because ring has no post-quantum key exchange (X25519MLKEM768); the
/// provider that has it, `aws-lc-rs`, builds a large C library (with
/// CMake on some targets), which this project's builds cannot afford.
/// The classical groups it offers (X25519, P-256, P-384) are what curl
/// with OpenSSL 1.1 or 3.0 offers.
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(ring::default_provider()))
        .clone()
}

/// libcurl's message for an unusable CA file or path.
const CACERT_BADFILE: &str = "Problem with the SSL CA cert (path? access rights?)";
/// libcurl's message for an unusable client certificate or key.
const CERTPROBLEM: &str = "Problem with the local SSL certificate";

/// The system's trusted roots, read once per process (an empty store when
/// the machine has none: every verified connection then fails with
/// status 495, `UnknownIssuer`).
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut store = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            Arc::new(store)
        })
        .clone()
}

/// The certificates of the PEM file at `path`.
fn pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let iter =
        CertificateDer::pem_file_iter(path).map_err(|e| format!("{}: {e}", path.display()))?;
    iter.collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The roots of `ca_file` and `ca_path`.
fn given_roots(o: &Options) -> Result<RootCertStore, ConfigError> {
    let bad = |detail: String| ConfigError(format!("{CACERT_BADFILE}: {detail}"));
    let mut store = RootCertStore::empty();
    if let Some(file) = &o.ca_file {
        let certs = pem_certs(Path::new(file)).map_err(bad)?;
        let (added, _) = store.add_parsable_certificates(certs);
        if added == 0 {
            return Err(bad(format!("{file}: no certificate")));
        }
    }
    if let Some(dir) = &o.ca_path {
        let entries = std::fs::read_dir(dir).map_err(|e| bad(format!("{dir}: {e}")))?;
        for entry in entries.flatten() {
            // Files that are not PEM certificates (c_rehash's links are)
            // are passed over, as OpenSSL's lookup passes over them.
            if let Ok(certs) = pem_certs(&entry.path()) {
                store.add_parsable_certificates(certs);
            }
        }
    }
    Ok(store)
}

/// Builds the configuration `o` asks for. Reads files: run it off the
/// cord.
///
/// # Errors
///
/// An unreadable or empty `ca_file`, an unreadable `ca_path`, a client
/// certificate or key that cannot be read or do not match.
pub(super) fn build(o: &Options) -> Result<Arc<ClientConfig>, ConfigError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError(e.to_string()))?;
    let roots = match (o.ca_file.is_some() || o.ca_path.is_some(), o.verify_peer) {
        (_, false) => None,
        (true, true) => Some(Arc::new(given_roots(o)?)),
        (false, true) => Some(system_roots()),
    };
    let builder = match roots {
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Lenient {
                chain: None,
                provider,
            })),
        Some(roots) if o.verify_host => builder.with_root_certificates(roots),
        Some(roots) => {
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| ConfigError(format!("{CACERT_BADFILE}: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Lenient {
                    chain: Some(chain),
                    provider,
                }))
        }
    };
    let config = match &o.ssl_cert {
        None => builder.with_no_client_auth(),
        Some(cert) => {
            let bad = |detail: String| ConfigError(format!("{CERTPROBLEM}: {detail}"));
            let chain = pem_certs(Path::new(cert)).map_err(bad)?;
            let key_file = o.ssl_key.as_deref().unwrap_or(cert);
            let key = PrivateKeyDer::from_pem_file(key_file)
                .map_err(|e| bad(format!("{key_file}: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad(e.to_string()))?
        }
    };
    Ok(Arc::new(config))
}

/// The verifier of `verify_peer = false` (`chain: None`: any certificate
/// is taken, libcurl's `CURLOPT_SSL_VERIFYPEER = 0`) and of `verify_host
/// = false` with `verify_peer` (the chain is checked, the name is not:
/// `CURLOPT_SSL_VERIFYHOST = 0`). The handshake's signatures are checked
/// either way, so the session is bound to the certificate it got.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain before the name: a name error means the
        // chain was good.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
