//! The roots a connection trusts beyond the web's: a private CA's certificates read
//! from a PEM file (`[client] ca`, `[redis] ca`, `[feeds] ca`), read once when the
//! configuration is, so a missing or unreadable file stops the start naming the file
//! rather than failing the first request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A CA file: its path and the certificates it held when read.
///
/// # Examples
///
/// ```no_run
/// let ca = proscenium::client::CaFile::read("private-ca.pem").unwrap();
/// assert!(ca.certificates().len() >= 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaFile {
    path: PathBuf,
    pem: Arc<[u8]>,
    certificates: Arc<[CertificateDer<'static>]>,
}

/// Why a CA file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the CA file {}: {why}", path.display())]
pub struct CaFileError {
    path: PathBuf,
    why: String,
}

impl CaFile {
    /// Reads the PEM certificates at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, a certificate in it does not parse (or cannot be a
    /// root), or it holds none; the error names the file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, CaFileError> {
        let path = path.as_ref().to_owned();
        let refused = |why: String| CaFileError {
            path: path.clone(),
            why,
        };
        let pem = std::fs::read(&path).map_err(|e| refused(format!("cannot be read ({e})")))?;
        let certificates = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| refused(format!("holds a certificate that does not parse ({e})")))?;
        if certificates.is_empty() {
            return Err(refused("holds no PEM certificate".to_owned()));
        }
        // Whether each can be a root is rustls's to say; a build without it (neither
        // `client`, `redis` nor `tls`) makes no connection that would trust the file.
        #[cfg(any(feature = "client", feature = "redis", feature = "tls"))]
        {
            let mut store = rustls::RootCertStore::empty();
            for certificate in &certificates {
                store
                    .add(certificate.clone())
                    .map_err(|e| refused(format!("holds a certificate that is no CA's ({e})")))?;
            }
        }
        Ok(Self {
            path,
            pem: pem.into(),
            certificates: certificates.into(),
        })
    }

    /// Returns the file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the certificates the file held.
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.certificates
    }

    /// Returns the file's bytes, as read.
    #[cfg(feature = "redis")]
    pub(crate) fn pem(&self) -> &[u8] {
        &self.pem
    }
}

impl<'de> Deserialize<'de> for CaFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let path = PathBuf::deserialize(d)?;
        Self::read(path).map_err(serde::de::Error::custom)
    }
}

impl Serialize for CaFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.path.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_an_empty_or_a_garbled_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for path in [&missing, &empty, &garbled] {
            let error = CaFile::read(path).unwrap_err().to_string();
            assert!(error.contains(&path.display().to_string()), "{error}");
        }
    }

    #[test]
    #[cfg(feature = "tls")]
    fn a_configured_ca_is_read_when_the_configuration_is() {
        let dir = tempfile::tempdir().unwrap();
        let ca = crate::testing::TestCa::new().write(dir.path());
        let spec: crate::config::ClientSpec =
            toml::from_str(&format!("ca = {:?}", ca.display())).unwrap();
        assert_eq!(spec.ca.unwrap().certificates().len(), 1);
        let missing = toml::from_str::<crate::config::ClientSpec>("ca = \"/nowhere/ca.pem\"");
        assert!(
            missing.unwrap_err().to_string().contains("/nowhere/ca.pem"),
            "the error names the file"
        );
    }
}
