//! AWS's shared configuration files, read as the AWS CLI reads them for one profile
//! (`AWS_PROFILE`, else `default`): `~/.aws/credentials` (or `AWS_SHARED_CREDENTIALS_FILE`) and
//! `~/.aws/config` (or `AWS_CONFIG_FILE`). The S3 client reads the environment, web identity,
//! container and instance credentials itself; a profile's static keys come after the
//! environment's and web identity's, as in the AWS CLI's chain, and its `region` and
//! `endpoint_url` after the environment's. A profile that gets its credentials another way
//! (roles, SSO, a process) is refused by name: gpuprep runs no such flow.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a profile sets for the S3 client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Profile {
    /// Static credentials: key id, secret and (temporary ones) session token.
    pub(super) keys: Option<(String, String, Option<String>)>,
    pub(super) region: Option<String>,
    pub(super) endpoint: Option<String>,
}

/// The keys of a profile whose credentials come from a flow gpuprep does not run.
const FLOWS: &[&str] = &[
    "role_arn",
    "sso_session",
    "sso_start_url",
    "credential_process",
    "web_identity_token_file",
];

/// The profile's settings, where the environment does not set them already; an error, by
/// name, for a profile that was asked for and is not there, or whose credentials need a flow.
pub(super) fn read() -> Result<Profile, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    resolve(&env, &|path| std::fs::read_to_string(path).ok())
}

/// [`read`] with the environment's variables and files' texts given.
fn resolve(
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Profile, String> {
    let home = env("HOME").map(PathBuf::from);
    let path_of = |over: &str, name: &str| {
        env(over)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let asked = env("AWS_PROFILE").or_else(|| env("AWS_DEFAULT_PROFILE"));
    let name = asked.clone().unwrap_or_else(|| "default".into());
    let credentials_path = path_of("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_path = path_of("AWS_CONFIG_FILE", "config");
    let in_file = |path: &Option<PathBuf>, section_name: &str| {
        path.as_deref()
            .and_then(read)
            .and_then(|text| section(&text, section_name))
    };
    let credentials = in_file(&credentials_path, &name);
    let config_name = match name.as_str() {
        "default" => name.clone(),
        other => format!("profile {other}"),
    };
    let config = in_file(&config_path, &config_name);
    if credentials.is_none() && config.is_none() {
        return match asked {
            Some(asked) => Err(format!(
                "the AWS profile {asked} is in neither {} nor {}",
                shown(&credentials_path),
                shown(&config_path)
            )),
            None => Ok(Profile::default()),
        };
    }
    // The credentials file's values win over the config file's.
    let values: HashMap<String, String> = config
        .unwrap_or_default()
        .into_iter()
        .chain(credentials.unwrap_or_default())
        .collect();
    let unset = |names: &[&str]| names.iter().all(|n| env(n).is_none());
    let mut profile = Profile::default();
    if unset(&["AWS_REGION", "AWS_DEFAULT_REGION"]) {
        profile.region = values.get("region").cloned();
    }
    if unset(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]) {
        let endpoint = values.get("s3.endpoint_url").or(values.get("endpoint_url"));
        profile.endpoint = endpoint.cloned();
    }
    if !unset(&["AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE"]) {
        return Ok(profile);
    }
    match (
        values.get("aws_access_key_id"),
        values.get("aws_secret_access_key"),
    ) {
        (Some(id), Some(secret)) => {
            let token = values.get("aws_session_token").cloned();
            profile.keys = Some((id.clone(), secret.clone(), token));
        }
        (None, None) => {
            if let Some(flow) = FLOWS.iter().find(|key| values.contains_key(**key)) {
                return Err(format!(
                    "the AWS profile {name} gets its credentials through {flow}, which gpuprep \
                     does not run: export them first (`aws configure export-credentials \
                     --profile {name} --format env`)"
                ));
            }
        }
        _ => {
            return Err(format!(
                "the AWS profile {name} holds half a key: aws_access_key_id and \
                 aws_secret_access_key go together"
            ))
        }
    }
    Ok(profile)
}

fn shown(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map_or_else(|| "(no HOME)".into(), |p| p.display().to_string())
}

/// The `key = value` pairs of section `[name]` of an AWS configuration file (`None` where it
/// has none): comments (`#`, `;`) and blank lines skipped; a key with no value opens a nested
/// block of indented lines, kept as `key.sub` (`s3.endpoint_url`).
fn section(text: &str, name: &str) -> Option<HashMap<String, String>> {
    let mut found = None::<HashMap<String, String>>;
    let mut inside = false;
    let mut nested = None::<String>;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            inside = header.split_whitespace().collect::<Vec<_>>().join(" ") == name;
            nested = None;
            if inside {
                found.get_or_insert_with(HashMap::new);
            }
            continue;
        }
        let Some(values) = found.as_mut().filter(|_| inside) else {
            continue;
        };
        let Some((key, value)) = trimmed.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim().to_string());
        let indented = line.starts_with([' ', '\t']);
        match (&nested, indented) {
            (Some(block), true) => {
                values.insert(format!("{block}.{key}"), value);
            }
            _ if value.is_empty() => nested = Some(key),
            _ => {
                nested = None;
                values.insert(key, value);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "
# a comment
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = secret-default

[work]
aws_access_key_id=AKWORK
aws_secret_access_key=secret-work
aws_session_token = token-work

[half]
aws_access_key_id = AKHALF
";

    const CONFIG: &str = "
[default]
region = eu-west-1

[profile work]
region = us-west-2
s3 =
  endpoint_url = http://127.0.0.1:9000
  addressing_style = path

[profile sso]
sso_session = corp
region = us-east-1
";

    fn resolved(vars: &[(&str, &str)]) -> Result<Profile, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([("HOME".to_string(), "/home/u".to_string())])
            .collect();
        let env = |name: &str| vars.get(name).cloned();
        let read = |path: &Path| match path.to_str() {
            Some("/home/u/.aws/credentials") => Some(CREDENTIALS.to_string()),
            Some("/home/u/.aws/config") => Some(CONFIG.to_string()),
            _ => None,
        };
        resolve(&env, &read)
    }

    #[test]
    fn a_profile_gives_its_keys_region_and_endpoint() {
        let default = resolved(&[]).unwrap();
        assert_eq!(
            default,
            Profile {
                keys: Some(("AKDEFAULT".into(), "secret-default".into(), None)),
                region: Some("eu-west-1".into()),
                endpoint: None,
            }
        );
        let work = resolved(&[("AWS_PROFILE", "work")]).unwrap();
        assert_eq!(
            work,
            Profile {
                keys: Some((
                    "AKWORK".into(),
                    "secret-work".into(),
                    Some("token-work".into())
                )),
                region: Some("us-west-2".into()),
                endpoint: Some("http://127.0.0.1:9000".into()),
            }
        );
    }

    #[test]
    fn the_environment_comes_first() {
        let env_keys = resolved(&[("AWS_ACCESS_KEY_ID", "AKENV"), ("AWS_REGION", "ap-south-1")]);
        assert_eq!(env_keys.unwrap(), Profile::default());
        let web = resolved(&[
            ("AWS_PROFILE", "work"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"),
        ]);
        let web = web.unwrap();
        assert_eq!((web.keys, web.region.as_deref()), (None, Some("us-west-2")));
        let endpoint = resolved(&[("AWS_PROFILE", "work"), ("AWS_ENDPOINT_URL", "http://x")]);
        assert_eq!(endpoint.unwrap().endpoint, None);
    }

    #[test]
    fn what_cannot_be_read_is_refused_by_name() {
        let e = resolved(&[("AWS_PROFILE", "nowhere")]).unwrap_err();
        assert!(
            e.contains("profile nowhere is in neither /home/u/.aws/credentials"),
            "{e}"
        );
        let e = resolved(&[("AWS_PROFILE", "sso")]).unwrap_err();
        assert!(
            e.contains("profile sso gets its credentials through sso_session"),
            "{e}"
        );
        let e = resolved(&[("AWS_PROFILE", "half")]).unwrap_err();
        assert!(e.contains("half a key"), "{e}");
        // No files and no profile asked for: nothing to add.
        let none = resolve(
            &|n: &str| (n == "HOME").then(|| "/nobody".into()),
            &|_: &Path| None,
        );
        assert_eq!(none.unwrap(), Profile::default());
    }
}
