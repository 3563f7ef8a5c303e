//! How a principal's requests are signed (`principals[].sign`): AWS Signature Version 4, with
//! its rules. The suite signs each request last, after its key, body and headers are final.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A principal's request signing: one scheme, named by its key (`aws_sigv4:`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Sign {
    /// AWS Signature Version 4 (the `Authorization: AWS4-HMAC-SHA256 …` header), as AWS and
    /// its emulators verify it.
    pub aws_sigv4: AwsSigV4,
}

/// The inputs of AWS Signature Version 4 (AWS's "Signature Version 4 for API requests"): the
/// credential scope (`service`, `region`) and the credentials. Values usually come from the
/// environment (`${AWS_SECRET_ACCESS_KEY}`). Its `Debug` hides the secret and the session token.
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AwsSigV4 {
    /// The service's signing name (`ec2`, `sqs`, `execute-api`).
    pub service: String,
    /// The region signed for (`us-east-1`).
    pub region: String,
    /// The access key id, sent in the `Authorization` header's credential.
    pub access_key_id: String,
    /// The secret the signature is keyed with; never sent, never shown.
    pub secret_access_key: String,
    /// A temporary credential's session token, sent (and signed) as `X-Amz-Security-Token`.
    #[serde(default)]
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsSigV4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsSigV4")
            .field("service", &self.service)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<hidden>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<hidden>"),
            )
            .finish()
    }
}

impl Sign {
    /// What is wrong with this signing, each in words: an empty value (an unset variable's
    /// `${VAR:-}` default), whitespace or a control character in a value (a credential pasted
    /// with its line break), or the principal's own `Authorization` header, which the signature
    /// would replace.
    pub(crate) fn problems<'a>(
        &self,
        header_names: impl Iterator<Item = &'a String>,
    ) -> Vec<String> {
        let v4 = &self.aws_sigv4;
        let fields = [
            ("service", Some(&v4.service)),
            ("region", Some(&v4.region)),
            ("access_key_id", Some(&v4.access_key_id)),
            ("secret_access_key", Some(&v4.secret_access_key)),
            ("session_token", v4.session_token.as_ref()),
        ];
        let mut problems: Vec<String> = fields
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
            .filter_map(|(name, value)| value_problem(name, value))
            .collect();
        let clashes = ["authorization", "x-amz-date", "x-amz-security-token"];
        for name in header_names.filter(|n| clashes.contains(&n.to_ascii_lowercase().as_str())) {
            problems.push(format!(
                "has header `{name}` and `sign.aws_sigv4`, which sets it on every request; remove \
                 the header"
            ));
        }
        problems
    }
}

/// What is wrong with the value of `sign.aws_sigv4.NAME`, without showing it (it may be secret).
fn value_problem(name: &str, value: &str) -> Option<String> {
    if value.is_empty() {
        return Some(format!(
            "`sign.aws_sigv4.{name}` is empty (is its environment variable set?)"
        ));
    }
    value
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
        .then(|| {
            format!(
                "`sign.aws_sigv4.{name}` holds whitespace or a control character (a value copied \
                 with its line break?); it must be one word"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, token: Option<&str>) -> Sign {
        Sign {
            aws_sigv4: AwsSigV4 {
                service: "ec2".into(),
                region: "us-east-1".into(),
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: secret.into(),
                session_token: token.map(str::to_owned),
            },
        }
    }

    #[test]
    fn empty_or_broken_values_and_a_clashing_header_are_named_without_the_value() {
        let none: Vec<String> = Vec::new();
        assert!(sign("s3cr3t", Some("tok")).problems(none.iter()).is_empty());
        let problems = sign("", Some("to\nk")).problems(none.iter());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`sign.aws_sigv4.secret_access_key` is empty"));
        assert!(problems[1].contains("session_token"));
        assert!(!problems[1].contains("to\nk"));
        let headers = ["Authorization".to_owned()];
        let problems = sign("s3cr3t", None).problems(headers.iter());
        assert!(
            problems[0].contains("header `Authorization`"),
            "{problems:?}"
        );
    }

    #[test]
    fn debug_hides_the_secret_and_the_token() {
        let shown = format!("{:?}", sign("s3cr3t", Some("tok3n")));
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("tok3n"),
            "{shown}"
        );
        assert!(shown.contains("AKIDEXAMPLE"));
    }
}
